"""Our LPIPS adapter equals the lpips package given the same (random) AlexNet backbone."""
from __future__ import annotations

import warnings

import lpips
import numpy as np
import pytest
import torch
import torchvision

from devil_dataset.core.errors import WeightsMissingError
from devil_dataset.core.networks.lpips import LPIPSNetwork, alexnet_features_to_lpips, random_alexnet_state


def _reference_lpips(state: dict) -> lpips.LPIPS:
    """lpips.LPIPS with its trunk modules filled from a torchvision AlexNet, module by module."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = lpips.LPIPS(pretrained=True, net="alex", version="0.1", pnet_rand=True, verbose=False)
    alex = torchvision.models.alexnet(weights=None)
    alex.load_state_dict(state)
    for k in range(1, 6):
        for idx, module in getattr(ref.net, f"slice{k}").named_children():
            module.load_state_dict(alex.features[int(idx)].state_dict())
    return ref.eval()


@pytest.fixture(scope="module")
def lpips_state():
    return random_alexnet_state(seed=3)


@pytest.fixture(scope="module")
def lpips_net(lpips_state):
    return LPIPSNetwork(backbone_state=lpips_state)


def test_lpips_equals_package_with_same_random_backbone(lpips_state, lpips_net):
    rng = np.random.default_rng(0)
    a = rng.integers(0, 256, (3, 64, 64, 3), dtype=np.uint8)
    b = a.copy()
    b[:, 20:40, 20:40] = rng.integers(0, 256, (3, 20, 20, 3), dtype=np.uint8)
    ours = lpips_net.distance(a, b)
    ref = _reference_lpips(lpips_state)
    ta = torch.from_numpy(a).permute(0, 3, 1, 2).float() / 255 * 2 - 1
    tb = torch.from_numpy(b).permute(0, 3, 1, 2).float() / 255 * 2 - 1
    with torch.no_grad():
        expected = ref(ta, tb).reshape(-1).double().numpy()
    assert ours.shape == (3,)
    assert np.all(ours > 0)
    np.testing.assert_allclose(ours, expected, rtol=1e-5, atol=1e-7)
    # the package's own [0, 1] path agrees too
    with torch.no_grad():
        expected01 = ref(ta / 2 + 0.5, tb / 2 + 0.5, normalize=True).reshape(-1).double().numpy()
    np.testing.assert_allclose(ours, expected01, rtol=1e-5, atol=1e-7)


def test_lpips_zero_for_identical_frames(lpips_net):
    a = np.random.default_rng(1).integers(0, 256, (2, 32, 48, 3), dtype=np.uint8)
    assert lpips_net.distance(a, a).tolist() == [0.0, 0.0]


def test_alexnet_key_mapping_covers_the_trunk(lpips_state):
    mapped = alexnet_features_to_lpips(lpips_state)
    assert sorted(mapped) == sorted(
        f"net.slice{k}.{i}.{p}" for k, i in ((1, 0), (2, 3), (3, 6), (4, 8), (5, 10)) for p in ("weight", "bias")
    )
    assert mapped["net.slice3.6.weight"].shape == (384, 192, 3, 3)


def test_lpips_without_cached_weights_names_import_command(tmp_path, monkeypatch):
    monkeypatch.setenv("DEVIL_WEIGHTS_DIR", str(tmp_path))
    with pytest.raises(WeightsMissingError, match=r"alexnet-owt-7be5be79\.pth.*devil weights import PATH"):
        LPIPSNetwork()


def test_lpips_loads_backbone_from_cache(tmp_path, monkeypatch, lpips_state, lpips_net):
    monkeypatch.setenv("DEVIL_WEIGHTS_DIR", str(tmp_path))
    torch.save(lpips_state, tmp_path / "alexnet-owt-7be5be79.pth")
    a = np.random.default_rng(2).integers(0, 256, (1, 32, 32, 3), dtype=np.uint8)
    b = 255 - a
    np.testing.assert_allclose(LPIPSNetwork().distance(a, b), lpips_net.distance(a, b))


@pytest.mark.skipif(not __import__("devil_dataset.core.weights", fromlist=["x"]).available("alexnet"),
                    reason="alexnet-owt-7be5be79.pth is not in the weights cache (devil weights import PATH)")
def test_real_alexnet_weights_verify_and_give_small_lpips_for_small_noise():
    from devil_dataset.core.weights import weights_info

    assert weights_info("alexnet")["verified"] == "prefix"
    rng = np.random.default_rng(0)
    a = rng.integers(0, 256, (1, 64, 64, 3), dtype=np.uint8)
    b = np.clip(a.astype(int) + rng.integers(-2, 3, a.shape), 0, 255).astype(np.uint8)
    c = 255 - a
    net = LPIPSNetwork()
    assert net.distance(a, b)[0] < net.distance(a, c)[0]
