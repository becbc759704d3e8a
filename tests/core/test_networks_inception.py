"""Our FID features equal pytorch-fid's InceptionV3 given identical (random) weights."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from devil_dataset.core.errors import WeightsMissingError
from devil_dataset.core.networks.inception import FIDInception, build_fid_inception, random_inception_state


@pytest.fixture(scope="module")
def inception_state():
    return random_inception_state(seed=5)


def _pytorch_fid_model(state, monkeypatch):
    from pytorch_fid import inception as pfi

    monkeypatch.setattr(pfi, "load_state_dict_from_url", lambda *a, **k: state)  # no download
    return pfi.InceptionV3([pfi.InceptionV3.BLOCK_INDEX_BY_DIM[2048]]).eval()


def test_features_equal_pytorch_fid(inception_state, monkeypatch):
    rng = np.random.default_rng(0)
    frames = rng.integers(0, 256, (2, 24, 40, 3), dtype=np.uint8)
    ours = FIDInception(state=inception_state).features(frames)
    ref_model = _pytorch_fid_model(inception_state, monkeypatch)
    with torch.no_grad():
        x = torch.from_numpy(frames).permute(0, 3, 1, 2).float() / 255.0
        ref = ref_model(x)[0].squeeze(-1).squeeze(-1).numpy()
    assert ours.shape == (2, 2048) and ours.dtype == np.float32
    assert np.abs(ours).max() > 0
    assert not np.allclose(ours[0], ours[1])
    np.testing.assert_allclose(ours, ref, rtol=1e-4, atol=1e-5)


def test_state_dict_layout_is_pytorch_fids(inception_state):
    keys = set(build_fid_inception().state_dict())
    assert keys == set(inception_state)
    assert "fc.weight" in keys and inception_state["fc.weight"].shape == (1008, 2048)
    assert not any(k.startswith("AuxLogits") for k in keys)


def test_missing_weights(tmp_path, monkeypatch):
    monkeypatch.setenv("DEVIL_WEIGHTS_DIR", str(tmp_path))
    with pytest.raises(WeightsMissingError, match="pt_inception-2015-12-05-6726825d.pth"):
        FIDInception()


@pytest.mark.skipif(not __import__("devil_dataset.core.weights", fromlist=["x"]).available("inception"),
                    reason="pt_inception-2015-12-05-6726825d.pth is not in the weights cache "
                    "(devil weights import PATH)")
def test_real_fid_weights_load_and_verify():
    from devil_dataset.core.weights import weights_info

    assert weights_info("inception")["verified"] == "prefix"
    feats = FIDInception().features(np.full((1, 64, 64, 3), 128, np.uint8))
    assert feats.shape == (1, 2048) and np.isfinite(feats).all() and (feats >= 0).all()  # post-ReLU average pool
