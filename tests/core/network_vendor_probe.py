"""Digests of every evaluation network's CPU pass on small seeded inputs with seeded random weights.

Run as a script (``python tests/core/network_vendor_probe.py [NAMES...]``) it prints one JSON object: per network
the SHA-256 (16 hex digits) of its float32 output. ``tests/core/test_emulated_cpus.py`` runs it natively and under
QEMU's Intel and AMD CPU models (``-cpu Haswell-v4``, ``-cpu EPYC-Rome``): the digests must be equal, with the
portable kernels (``DEVIL_NETWORK_KERNELS=portable``, the default) and, as a control, they differ with
``native``. RAFT is left out under QEMU 7.2, whose TCG crashes in ATen's AVX2 ``grid_sample`` (gathers); its
convolutions, products and square roots are the portable ones checked here.
"""
# ruff: noqa: I001  (devil_dataset must be imported before numpy and torch)
from __future__ import annotations

import hashlib
import json
import sys

import devil_dataset

devil_dataset.pin_process()  # as the devil command: the CPU pins before torch and scipy load

import numpy as np  # noqa: E402
import torch  # noqa: E402

NETWORKS = ("lpips", "inception", "i3d", "raft", "dinov2")


def digest(t: torch.Tensor | np.ndarray) -> str:
    a = t.detach().contiguous().numpy() if isinstance(t, torch.Tensor) else np.ascontiguousarray(t)
    return hashlib.sha256(a.tobytes()).hexdigest()[:16]


def frames(n: int, h: int = 48, w: int = 64, seed: int = 5) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (n, h, w, 3), dtype=np.uint8)


def probe(names: tuple[str, ...] = NETWORKS) -> dict[str, str]:
    from devil_dataset.core.networks.precision import network_threads

    out: dict[str, str] = {}
    a, b = frames(2, seed=5), frames(2, seed=6)
    if "lpips" in names:
        from devil_dataset.core.networks.lpips import LPIPSNetwork, random_alexnet_state

        out["lpips"] = digest(LPIPSNetwork(backbone_state=random_alexnet_state(0)).distance(a, b))
    if "inception" in names:
        from devil_dataset.core.networks.inception import FIDInception, random_inception_state

        out["inception"] = digest(FIDInception(state=random_inception_state(0)).features(a[:1]))
    if "i3d" in names:
        from devil_dataset.core.networks.i3d import load_i3d, random_i3d_state
        from devil_dataset.eval.metrics.i3d import _unit

        net = load_i3d(state=random_i3d_state(0))
        clip = torch.from_numpy(frames(8, 64, 64, seed=7)).permute(3, 0, 1, 2)[None].float() / 127.5 - 1.0
        with torch.inference_mode(), network_threads("cpu"):
            for name, value in net.iter_endpoints(clip):
                out[f"i3d_{name}"] = digest(_unit(value))  # PVCS's unit normalisation (a square root)
    if "dinov2" in names:  # RC-S / RC-T's network: a seeded random DINOv2 (MLP) on a grid other than its own
        import tempfile

        from devil_dataset.core.networks.dinov2 import load_dinov2, save_random_dinov2

        with tempfile.TemporaryDirectory() as tmp:
            net = load_dinov2(str(save_random_dinov2(tmp, hidden_size=32, layers=2, heads=2)))
            out["dinov2"] = digest(net.patch_features(list(frames(2, 42, 56, seed=8))))
    if "raft" in names:
        from devil_dataset.core.networks.raft import RAFTFlow, random_raft_state

        out["raft"] = digest(RAFTFlow(state=random_raft_state(0), iterations=2).flow(a[0], b[0]))
    return out


if __name__ == "__main__":
    chosen = tuple(sys.argv[1:]) or NETWORKS
    print(json.dumps(probe(chosen), sort_keys=True))
