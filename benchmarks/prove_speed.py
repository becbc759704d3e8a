"""RC-S / RC-T speed and equality: the package
(:func:`~devil_dataset.eval.protocols.prove.run.evaluate_prove`:
each distinct (frame, crop) through DINOv2 once, equal-size crops batched, the windows' MMDs without per-call thread
overhead) against a plain restatement of PROVE's code (``benchmarks/prove_reference.py``: one crop per forward pass,
each RC-T pair recomputing both crops), side by side in one run, on a generated PROVE-layout set, with seeded random
DINOv2 models (nothing downloaded).

    python benchmarks/prove_speed.py                  # tiny (32 x 2 layers) and base-sized (768 x 12) models
    python benchmarks/prove_speed.py --quick          # tiny only
    python benchmarks/prove_speed.py --giant          # also one 448x448 crop through a giant-sized DINOv2 (1536 x 40)

Prints per model: seconds for the reference and the package, the speed-up, DINOv2 passes each made, and the largest
relative difference of the per-video values (float32 MMDs as PROVE's, parity ``release``).
"""
from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tests" / "eval"))

import prove_data  # noqa: E402
import prove_reference  # noqa: E402
from propainter_run import cpu_model  # noqa: E402

from devil_dataset.core.networks.dinov2 import (  # noqa: E402
    GIANT_SHAPE,
    Dinov2Features,
    load_dinov2,
    save_random_dinov2,
)
from devil_dataset.eval.metrics.metric import EvalOptions  # noqa: E402
from devil_dataset.eval.protocols.prove.run import evaluate_prove  # noqa: E402

MODELS = {"tiny": {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64},
          "base": {"hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
                   "intermediate_size": 3072}}


def random_dinov2(shape: dict, seed: int = 0) -> Dinov2Features:
    """A seeded random DINOv2 of ``shape`` written with save_pretrained and loaded as the package loads a model (the
    reference runs transformers' own model of the same folder: ``prove_reference.transformers_model``)."""
    folder = Path(tempfile.mkdtemp(prefix="dinov2-"))
    extra = {k: v for k, v in shape.items() if k not in ("hidden_size", "num_hidden_layers", "num_attention_heads")}
    save_random_dinov2(folder, hidden_size=shape["hidden_size"], layers=shape["num_hidden_layers"],
                       heads=shape["num_attention_heads"], seed=seed, **extra)
    net = load_dinov2(str(folder))
    net.name = f"random {shape['hidden_size']}x{shape['num_hidden_layers']}"
    return net


def compare(name: str, net: Dinov2Features, dirs: tuple[Path, Path, Path]) -> dict:
    ref_net = prove_reference.ReferenceDino(prove_reference.transformers_model(net.folder), net.processor)
    t0 = time.perf_counter()
    ref = prove_reference.folder_values(ref_net, *dirs)
    t_ref = time.perf_counter() - t0
    t0 = time.perf_counter()
    doc = evaluate_prove(*dirs, ["rc_s", "rc_t"], EvalOptions(protocol="prove"), network=net.patch_features,
                         identity={"name": net.name})
    t_ours = time.perf_counter() - t0
    diff = max((abs(doc["videos"][v][m] - ref[v][m]) / abs(ref[v][m]) for v in ref for m in ("rc_s", "rc_t")
                if not math.isnan(ref[v][m])), default=0.0)
    ours_passes = sum(c["forward_crops"] for c in doc["video_counts"].values())
    return {"model": name, "ref_s": t_ref, "ours_s": t_ours, "speedup": t_ref / t_ours, "ref_passes": ref_net.forwards,
            "ours_passes": ours_passes, "max_rel_diff": diff, "frames": doc["num_frames"]}


def giant_crop_seconds(repeat: int = 2) -> float:
    net = random_dinov2({**GIANT_SHAPE, "intermediate_size": GIANT_SHAPE["hidden_size"] * 4})
    image = np.random.default_rng(0).integers(0, 255, (448, 448, 3), dtype=np.uint8)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        net.patch_features([image])
        times.append(time.perf_counter() - t0)
    return min(times)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="the tiny model only")
    p.add_argument("--giant", action="store_true", help="also time one crop through a giant-sized random DINOv2")
    p.add_argument("--frames", type=int, default=prove_data.FRAMES, help="frames per generated video")
    args = p.parse_args(argv)
    print(f"CPU: {cpu_model()}, {torch.get_num_threads()} torch threads; torch {torch.__version__}")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        prove_data.FRAMES = args.frames
        dirs = prove_data.write_prove_layout(Path(tmp), cases=("moving", "two_parts", "corner"))
        for name in ("tiny",) if args.quick else ("tiny", "base"):
            rows.append(compare(name, random_dinov2(MODELS[name]), dirs))
    print("| model | frames | their code (s) | package (s) | speed-up | DINOv2 passes theirs / ours | max rel diff |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['model']} | {r['frames']} | {r['ref_s']:.1f} | {r['ours_s']:.1f} | {r['speedup']:.1f}x | "
              f"{r['ref_passes']} / {r['ours_passes']} | {r['max_rel_diff']:.1e} |")
    if args.giant:
        s = giant_crop_seconds()
        print(f"giant-sized DINOv2 (random weights, {GIANT_SHAPE}): {s:.1f} s per 448x448 crop on this CPU; "
              f"a frame costs 1 crop per mask component (RC-S) + 2 per pair in their RC-T (the package: the pair's "
              f"crops reused when the squares coincide)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
