"""How fast *any* torch-based RC-S / RC-T could be on the peer benchmark's set: the floor under
``devil evaluate --protocol prove``, set against the faster peer's whole process, in one run.

Whether 5x the faster peer (``benchmarks/prove_peers.py``), whole process, can be reached at all: this script
measures, on the same generated set and the same seeded tiny DINOv2:

1. **the faster peer**, whole process (ayase 0.2.1 and PROVE's ``run_prove_metrics.py``, installed as
   ``prove_peers.py`` installs them; the faster of the two is kept), and 5x its speed: the time budget;
2. **a process that only imports torch** (``python -c "import torch"``): what every torch-based implementation pays
   before it reads a frame;
3. **a process that only runs the network**: it imports torch, reads the model's tensors and the set's network inputs
   (every distinct crop RC-S and RC-T pass, cut, resized and padded beforehand by this script, outside the timed
   process; the process normalises them) and runs DINOv2 over them with torch's fastest CPU kernels: its own matrix
   products (MKL, oneDNN), ``scaled_dot_product_attention``, batches of 10, every core. No decoding, no mask
   reading, no MMD, no summary, no values that are the same on every CPU.

Process 3 is a lower bound for any implementation that computes RC-S and RC-T with torch: it leaves out everything
but the DINOv2 passes, and the passes cannot be fewer (each distinct crop of a moving mask passes once; PROVE passes
the same number). If its time is above the budget, 5x is out of reach on this machine for any such implementation.
It also checks that its features are DINOv2's: the largest difference from this package's own pass on the first
crops is printed.

    python benchmarks/prove_floor.py                       # 3 videos x 24 frames, best of 3 (floor: of 5)
    python benchmarks/prove_floor.py --record              # and append the figures to results/prove_floor.jsonl
    python benchmarks/prove_floor.py --prove-source /path/to/a/clone/of/prove

Printed: each process's best wall time (and ours, ``devil evaluate --protocol prove --metrics rc_s rc_t``, the
peers' work), the budget, the floor against the budget and against ours, the CPU and the load average.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any, Sequence

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import prove_peers  # noqa: E402  (benchmarks/ on the path above)

#: Crops per network call in the floor process (the GPU path's batching, on the CPU).
FLOOR_BATCH = 10
#: The timed floor process: torch, the model's tensors (safetensors), the prepared inputs, the passes with torch's
#: own kernels and scaled_dot_product_attention; prints its features' file. Nothing of this package is imported
#: but the plain forward's module (torch and the tensor names), whose attention is replaced by torch's fused one.
FLOOR_DRIVER = r"""
import sys, time
import numpy as np
import torch
import torch.nn.functional as F
sys.path.insert(0, sys.argv[1])
from devil_dataset.core.networks import dinov2_forward as D
import json
model, inputs, out, batch = sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
config = json.load(open(model + "/config.json"))
weights = D.read_dinov2_weights(model, config)

def fused_attention(w, prefix, x, heads):
    b, n, d = x.shape
    def project(name):
        at = prefix + "attention.attention." + name
        return F.linear(x, w[at + ".weight"], w.get(at + ".bias")).view(b, n, heads, d // heads).transpose(1, 2)
    y = F.scaled_dot_product_attention(project("query"), project("key"), project("value"))
    return F.linear(y.transpose(1, 2).reshape(b, n, d), w[prefix + "attention.output.dense.weight"],
                    w[prefix + "attention.output.dense.bias"])

D._attention = fused_attention
processor = json.load(open(model + "/preprocessor_config.json"))
mean = torch.tensor(processor["image_mean"]).view(1, 3, 1, 1)
std = torch.tensor(processor["image_std"]).view(1, 3, 1, 1)
crops = torch.from_numpy(np.load(inputs))  # uint8 [N, H, W, 3]
hidden = []
with torch.inference_mode():
    for i in range(0, len(crops), batch):
        pixels = (crops[i:i + batch].permute(0, 3, 1, 2).float() * processor["rescale_factor"] - mean) / std
        hidden.append(D.dinov2_forward(weights, pixels))
np.save(out, torch.cat(hidden)[:4, 1:].numpy())  # the first crops' patch tokens, for the check
"""


def network_inputs(dirs: tuple[Path, Path, Path]) -> np.ndarray:
    """Every distinct crop RC-S and RC-T pass through DINOv2 on the set, cut, resized and padded as the network
    reads it: uint8 RGB [N, H, W, 3], by this package's own code (``removal_scores`` with a network that records its
    inputs)."""
    from devil_dataset.eval.protocols.prove.layout import list_prove_videos, read_prove_video
    from devil_dataset.eval.protocols.prove.removal import removal_scores

    seen: list[np.ndarray] = []

    def recording(images: Sequence[np.ndarray]) -> np.ndarray:
        seen.append(np.stack(images))
        h, w = images[0].shape[:2]
        return np.zeros((len(images), h // 14, w // 14, 4), np.float32)

    for video in list_prove_videos(*dirs).videos:
        frames = read_prove_video(video)
        removal_scores(frames.result, frames.masks, recording)
    sizes = {a.shape[1:3] for a in seen}
    if len(sizes) != 1:
        raise SystemExit(f"the set's crops have {len(sizes)} network-input sizes; this floor needs one")
    return np.concatenate(seen)


def package_features(model: Path, images: np.ndarray) -> np.ndarray:
    """This package's preprocessing and pass over ``images`` (in this process's arithmetic: the portable one where
    the process is pinned): the reference the floor's features are checked against."""
    import torch

    from devil_dataset.core.networks.dinov2 import load_dinov2, preprocess
    from devil_dataset.core.networks.dinov2_forward import dinov2_forward
    from devil_dataset.core.networks.precision import network_threads

    net = load_dinov2(str(model))
    with torch.inference_mode(), network_threads("cpu"):
        return dinov2_forward(net.weights, preprocess(list(images), net.settings))[:, 1:].numpy()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--videos", type=int, default=3)
    p.add_argument("--frames", type=int, default=24)
    p.add_argument("--size", type=int, nargs=2, default=(320, 192), metavar=("W", "H"))
    p.add_argument("--repeat", type=int, default=3, help="runs of each whole scoring process; the best is kept")
    p.add_argument("--floor-repeat", type=int, default=5,
                   help="runs of the import-only and floor processes (a few seconds each); the best is kept")
    p.add_argument("--speedup", type=float, default=5.0, help="the speed-up asked over the faster peer")
    p.add_argument("--cache", type=Path, default=Path("~/.cache/devil-dataset/prove-peers").expanduser())
    p.add_argument("--prove-source", default=prove_peers.PROVE_SOURCE, help="where PROVE's code is cloned from")
    p.add_argument("--record", action="store_true", help="append the figures to benchmarks/results/prove_floor.jsonl")
    args = p.parse_args(argv)
    from results_log import cpu_name

    print(f"CPU: {cpu_name()}, {os.cpu_count()} cores; set: {args.videos} videos x {args.frames} frames, "
          f"{args.size[0]}x{args.size[1]}, lossless H.264; tiny DINOv2 {prove_peers.MODELS['tiny']}")
    args.cache.mkdir(parents=True, exist_ok=True)
    prove = prove_peers.install_prove(args.cache, args.prove_source)
    ayase = prove_peers.install_ayase(args.cache)
    if prove is None and ayase is None:
        print("neither peer can be installed here: no budget to compare with")
        return 2
    loads = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        dirs = prove_peers.write_set(work / "set", args.videos, args.frames, tuple(args.size))
        from devil_dataset.core.networks.dinov2 import save_random_dinov2

        shape: dict[str, Any] = prove_peers.MODELS["tiny"]
        model = save_random_dinov2(work / "dinov2-tiny", **shape)
        crops = network_inputs(dirs)
        np.save(work / "inputs.npy", crops)
        peers: dict[str, float] = {}
        if ayase is not None:
            peers["ayase 0.2.1"], _ = prove_peers.timed(
                [str(ayase), "-c", prove_peers.AYASE_DRIVER, str(model), str(dirs[1]), str(dirs[2])], args.repeat)
        if prove is not None:
            peers["PROVE run_prove_metrics.py"], _ = prove_peers.timed(
                [sys.executable, "-c", prove_peers.PROVE_DRIVER, str(prove), str(model), *map(str, dirs),
                 str(work / "prove.csv")], args.repeat)
        ours, _ = prove_peers.ours(model, dirs, args.repeat, ("--metrics", "rc_s", "rc_t"))
        loads.append(os.getloadavg()[0])
        import_only, _ = prove_peers.timed([sys.executable, "-c", "import torch"], args.floor_repeat)
        floor, _ = prove_peers.timed([sys.executable, "-c", FLOOR_DRIVER, str(ROOT), str(model),
                                      str(work / "inputs.npy"), str(work / "floor.npy"), str(FLOOR_BATCH)],
                                     args.floor_repeat)
        loads.append(os.getloadavg()[0])
        floor_features = np.load(work / "floor.npy")
        reference = package_features(model, crops[:len(floor_features)])
        difference = float(np.abs(floor_features - reference).max() / np.abs(reference).max())
    faster = min(peers, key=peers.__getitem__)
    budget = peers[faster] / args.speedup
    rows = {**{f"peer: {k}": v for k, v in peers.items()}, "devil evaluate --protocol prove --metrics rc_s rc_t": ours,
            "python -c 'import torch'": import_only,
            f"floor: import torch + {len(crops)} DINOv2 passes (torch's kernels, fused attention)": floor}
    print(f"\nwhole processes, best of {args.repeat} (import-only and floor: best of {args.floor_repeat}):")
    print("| process | wall s |")
    print("|---|---:|")
    for label, seconds in rows.items():
        print(f"| {label} | {seconds:.2f} |")
    print(f"budget for {args.speedup:g}x the faster peer ({faster}): {budget:.2f} s")
    print(f"the floor is {floor / budget:.2f}x the budget; importing torch alone is {import_only / budget:.2f}x; "
          f"ours is {ours / floor:.2f}x the floor and {peers[faster] / ours:.2f}x the faster peer's speed")
    print(f"the floor's features vs this package's pass (first {len(floor_features)} crops): largest "
          f"difference {difference:.1e} of the largest feature")
    print("load average (1 min) at the start, after the peers and ours, after the floor: "
          + ", ".join(f"{x:.2f}" for x in loads))
    if args.record:
        from results_log import record

        figures = {"set": {"videos": args.videos, "frames": args.frames, "size": list(args.size)},
                   "repeat": args.repeat, "floor_repeat": args.floor_repeat, "crops": len(crops),
                   "seconds": {k: round(v, 2) for k, v in rows.items()}, "faster_peer": faster,
                   "speedup_asked": args.speedup, "budget_s": round(budget, 2),
                   "floor_over_budget": round(floor / budget, 2), "import_over_budget": round(import_only / budget, 2),
                   "ours_over_floor": round(ours / floor, 2), "feature_difference": float(f"{difference:.3g}"),
                   "load_averages": [round(x, 2) for x in loads]}
        record("prove_floor", figures,
               list(argv if argv is not None else sys.argv[1:]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
