"""The networks' precision modes: float32 is the plain forward bit for bit and ignores global flags,
tf32 is float32 on a CPU, bf16 really runs (close to float32, not equal), the global flags come back, bad names
get a did-you-mean. Tiny inputs and random weights."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from devil_dataset.core.errors import UnknownNameError
from devil_dataset.core.networks import precision as P
from devil_dataset.core.networks.i3d import ENDPOINTS, PVCS_ENDPOINTS, load_i3d, random_i3d_state
from devil_dataset.core.networks.inception import FIDInception, random_inception_state
from devil_dataset.core.networks.lpips import LPIPSNetwork, _to_lpips_input, random_alexnet_state
from devil_dataset.core.networks.precision import (
    PRECISIONS,
    effective_precision,
    float32_flags,
    network_precision,
    precision_provenance,
)
from devil_dataset.core.networks.raft import RAFTFlow, random_raft_state
from devil_dataset.eval.metrics.metric import NETWORK_PRECISIONS

# bf16 keeps 8 significant bits (relative spacing 2**-8 = 0.4%); through a deep network the outputs measured here
# stay within 2% of their float32 scale (benchmarks/networks.py --precision prints the figures): 5% is the bound.
BF16_MAX_REL = 0.05


def _rel(ref: np.ndarray, other: np.ndarray) -> float:
    return float(np.abs(np.asarray(other, np.float64) - ref).max() / np.abs(ref).max())


@pytest.fixture(scope="module")
def frames():
    rng = np.random.default_rng(0)
    a = rng.integers(0, 256, (2, 64, 80, 3), dtype=np.uint8)
    b = a.copy()
    b[:, 16:48, 20:60] = rng.integers(0, 256, (2, 32, 40, 3), dtype=np.uint8)
    return a, b


@pytest.fixture(scope="module")
def inception_state():
    return random_inception_state(seed=1)


@pytest.fixture(scope="module")
def lpips_state():
    return random_alexnet_state(seed=1)


@pytest.fixture(scope="module")
def i3d():
    return load_i3d(state=random_i3d_state(seed=1))


def test_the_names_are_the_eval_options_names():
    assert NETWORK_PRECISIONS is PRECISIONS  # one table, named once (core/networks/__init__.py)
    assert PRECISIONS == ("float32", "tf32", "bf16")


@pytest.mark.parametrize("bad, hint", [("bfloat16", "did you mean .*'bf16'"), ("float16", "did you mean 'float32'"),
                                       ("fp8", "valid: float32, tf32, bf16")])
def test_unknown_precision_is_refused_with_did_you_mean(bad, hint, lpips_state):
    with pytest.raises(UnknownNameError, match=f"unknown network precision '{bad}'.*{hint}"):
        network_precision(bad)
    with pytest.raises(UnknownNameError, match=f"LPIPSNetwork: unknown network precision '{bad}'"):
        LPIPSNetwork(backbone_state=lpips_state, precision=bad)
    with pytest.raises(UnknownNameError, match="did you mean|valid"):
        RAFTFlow(state={}, precision=bad)  # refused before the state is even read
    with pytest.raises(UnknownNameError, match="I3D.at_precision"):
        load_i3d(state=random_i3d_state(seed=1)).at_precision(bad)


def _set_all(value_gpu: str, value_cpu: str) -> None:
    for name in P._GPU_SWITCHES:
        P._switch(name).fp32_precision = value_gpu
    for name in P._CPU_SWITCHES:
        P._switch(name).fp32_precision = value_cpu


@pytest.fixture
def restore_flags():
    """Whatever a test does to the global flags, the next test starts from the session's."""
    saved = P._save_flags()
    yield
    P._restore_flags(saved)


@pytest.mark.skipif(not P._has_fp32_precision_api(), reason="torch < 2.9 has no fp32_precision switches")
@pytest.mark.parametrize("precision, device, inside_gpu", [
    ("float32", "cpu", "ieee"), ("float32", "cuda", "ieee"), ("bf16", "cpu", "ieee"), ("tf32", "cpu", "ieee"),
    ("tf32", "cuda", "tf32"),
])
def test_flags_are_set_inside_and_restored_after(restore_flags, precision, device, inside_gpu):
    _set_all("tf32", "bf16")  # a process that asked for TF32 on the GPU and bf16 matmuls in oneDNN
    before = float32_flags()
    assert before["cudnn.conv"] == "tf32" and before["mkldnn.matmul"] == "bf16"
    with network_precision(precision, device):
        inside = float32_flags()
    assert {k: inside[k] for k in P._GPU_SWITCHES} == dict.fromkeys(P._GPU_SWITCHES, inside_gpu)
    assert {k: inside[k] for k in P._CPU_SWITCHES} == dict.fromkeys(P._CPU_SWITCHES, "ieee")  # CPU stays IEEE
    assert float32_flags() == before
    with pytest.raises(RuntimeError, match="pass failed"), network_precision(precision, device):
        raise RuntimeError("pass failed")
    assert float32_flags() == before  # restored when the pass raises too


def test_legacy_flags_are_restored(restore_flags, monkeypatch):
    """torch < 2.9: the float32 matmul precision and cudnn.allow_tf32 (checked through the legacy calls)."""
    monkeypatch.setattr(P, "_has_fp32_precision_api", lambda: False)
    torch.set_float32_matmul_precision("medium")
    with network_precision("float32"):
        assert torch.get_float32_matmul_precision() == "highest" and torch.backends.cudnn.allow_tf32 is False
    assert torch.get_float32_matmul_precision() == "medium"
    with network_precision("tf32", "cuda"):
        assert torch.get_float32_matmul_precision() == "high" and torch.backends.cudnn.allow_tf32 is True
    assert torch.get_float32_matmul_precision() == "medium"


def test_float32_ignores_an_enclosing_autocast_and_bf16_applies_it():
    conv = torch.nn.Conv2d(3, 4, 3).eval()
    x = torch.rand(1, 3, 8, 8, generator=torch.Generator().manual_seed(0))
    with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16):
        assert conv(x).dtype == torch.bfloat16
        with network_precision("float32"):
            assert conv(x).dtype == torch.float32
    with torch.inference_mode(), network_precision("bf16"):
        assert conv(x).dtype == torch.bfloat16
    assert not torch.is_autocast_enabled("cpu")


def test_effective_precision_and_provenance():
    assert [effective_precision(p, "cpu") for p in PRECISIONS] == ["float32", "float32", "bf16"]
    assert [effective_precision(p, "cuda:1") for p in PRECISIONS] == list(PRECISIONS)
    prov = precision_provenance("bf16", "cuda")
    assert (prov["precision"], prov["precision_effective"]) == ("bf16", "bf16")
    assert prov["arithmetic"]["samples_per_pass"] == "batch_size"  # GPU values: their own reference


# ------------------------------------------------------------------------------------------ the wrappers
def test_fid_float32_is_the_plain_forward(frames, inception_state):
    a = frames[0][:1]
    net = FIDInception(state=inception_state)
    with torch.inference_mode(), P.network_threads("cpu"):  # the wrapper's fixed thread count
        plain = net.forward(torch.from_numpy(a).permute(0, 3, 1, 2).float() / 255.0).numpy()
    f32 = net.features(a)
    assert f32.dtype == np.float32 and np.array_equal(f32, plain)  # bit for bit


def test_fid_bf16_close_to_float32(frames, inception_state):
    a = frames[0][:1]
    f32 = FIDInception(state=inception_state).features(a)
    bf = FIDInception(state=inception_state, precision="bf16").features(a)
    assert bf.dtype == np.float32 and not np.array_equal(bf, f32)  # the mode really ran
    assert 0 < _rel(f32, bf) < BF16_MAX_REL


def test_lpips_float32_is_the_plain_forward_tf32_equal_bf16_close(frames, lpips_state):
    a, b = frames
    net = LPIPSNetwork(backbone_state=lpips_state)
    with torch.inference_mode(), P.network_threads("cpu"):  # one frame pair per pass, one thread
        plain = np.concatenate([net.model(_to_lpips_input(a[i:i + 1], net.device),
                                          _to_lpips_input(b[i:i + 1], net.device)).reshape(-1).double().numpy()
                                for i in range(len(a))])
    f32 = net.distance(a, b)
    assert np.array_equal(f32, plain) and (f32 > 0).all()
    assert np.array_equal(LPIPSNetwork(backbone_state=lpips_state, precision="tf32").distance(a, b), f32)  # CPU
    bf = LPIPSNetwork(backbone_state=lpips_state, precision="bf16").distance(a, b)
    assert bf.dtype == np.float64 and not np.array_equal(bf, f32)
    assert 0 < _rel(f32, bf) < BF16_MAX_REL


def test_i3d_float32_is_the_plain_forward_bf16_close(i3d):
    x = torch.rand(2, 3, 10, 32, 40, generator=torch.Generator().manual_seed(0))
    with torch.inference_mode(), P.network_threads("cpu"):
        y = x
        plain = {}
        for name in ENDPOINTS:
            y = getattr(i3d, name)(y)
            plain[name] = y.clone()
        f32 = i3d.endpoints(x, PVCS_ENDPOINTS)
        bf = i3d.at_precision("bf16").endpoints(x, PVCS_ENDPOINTS)
    for name, ours, low in zip(PVCS_ENDPOINTS, f32, bf):
        assert torch.equal(ours, plain[name]), name
        assert low.dtype == torch.float32 and not torch.equal(low, ours), name  # handed out as float32
        assert 0 < _rel(ours.numpy(), low.numpy()) < BF16_MAX_REL, name


def test_at_precision_views_share_the_network(i3d):
    bf = i3d.at_precision("bf16")
    assert bf is i3d.at_precision("bf16") and bf.at_precision("float32") is i3d and i3d.precision == "float32"
    assert bf.Conv3d_1a_7x7.conv3d.weight is i3d.Conv3d_1a_7x7.conv3d.weight  # nothing copied
    assert load_i3d(state=random_i3d_state(seed=1), precision="bf16").precision == "bf16"


def test_raft_float32_is_the_plain_forward():
    rng = np.random.default_rng(1)
    a, b = rng.integers(0, 256, (2, 1, 128, 128, 3), dtype=np.uint8)  # RAFT's minimum size: no padding
    raft = RAFTFlow(state=random_raft_state(seed=0), iterations=2)
    from devil_dataset.core.networks.raft import _prepare

    with torch.inference_mode(), P.network_threads("cpu"):
        plain = raft.model(_prepare(a, raft.device), _prepare(b, raft.device), num_flow_updates=2)[-1]
    f32 = raft.flow_batch(a, b)
    assert f32.dtype == np.float32 and np.array_equal(f32, plain.permute(0, 2, 3, 1).numpy())
    view = raft.at_precision("tf32")
    assert view.model is raft.model and np.array_equal(view.flow_batch(a, b), f32)  # CPU: tf32 is float32


@pytest.mark.slow
def test_raft_bf16_close_to_float32(frames):
    """bf16 RAFT on a CPU without native bf16 is emulated (7 s for one pair on an idle AVX2 CPU, 30+ s on a busy
    one): slow-marked."""
    a, b = frames
    raft = RAFTFlow(state=random_raft_state(seed=0), iterations=2)
    f32, bf = raft.flow_batch(a[:1], b[:1]), raft.at_precision("bf16").flow_batch(a[:1], b[:1])
    assert bf.dtype == np.float32 and not np.array_equal(bf, f32)
    assert 0 < _rel(f32, bf) < BF16_MAX_REL


@pytest.mark.skipif(not torch.cuda.is_available(), reason="TF32 and CUDA bf16 need a CUDA GPU")
@pytest.mark.parametrize("precision", ["tf32", "bf16"])
def test_cuda_modes_close_to_float32(frames, inception_state, precision):
    a, _ = frames
    f32 = FIDInception("cuda", inception_state).features(a)
    low = FIDInception("cuda", inception_state, precision=precision).features(a)
    assert low.dtype == np.float32 and not np.array_equal(low, f32)
    assert 0 < _rel(f32, low) < BF16_MAX_REL
