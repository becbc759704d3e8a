"""What :func:`devil_dataset.core.freed_memory.reuse_freed_memory` buys: DINOv2 passes (PROVE's network) in the
portable arithmetic, each way in a fresh process of the same invocation, with glibc's default thresholds and with
freed memory kept for reuse. Per pass: wall, user and system seconds and minor page faults (``getrusage``); the
ratios are default / kept. The features are compared: they must be the same bits.

    python benchmarks/freed_memory.py                  # base-sized (768, 12 layers), 448x448 crop, 2 passes
    python benchmarks/freed_memory.py --hidden 32 --layers 2 --heads 2 --passes 20   # the tiny one of the peers
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# One process: the network built, one pass to warm up, then the timed passes; prints its figures as JSON.
PASSES = r"""
import hashlib, json, resource, sys, time
keep, hidden, layers, heads, passes, side = sys.argv[1] == "kept", *map(int, sys.argv[2:7])
from devil_dataset.core.cpu_pins import pin_process
pin_process()
if keep:
    from devil_dataset.core.freed_memory import reuse_freed_memory
    assert reuse_freed_memory(), "not glibc: nothing to compare"
import torch
from devil_dataset.core.networks.dinov2_forward import Dinov2Weights, dinov2_forward, expected_shapes
from devil_dataset.core.networks.portable import portable_arithmetic
config = {"hidden_size": hidden, "num_hidden_layers": layers, "num_attention_heads": heads, "image_size": 518}
g = torch.Generator().manual_seed(0)
weights = Dinov2Weights.from_tensors(config, {n: torch.randn(*s, generator=g) * 0.02
                                              for n, s in expected_shapes(config).items()})
x = torch.rand(1, 3, side, side, generator=g)
torch.set_num_threads(1)
with portable_arithmetic(), torch.inference_mode():
    out = dinov2_forward(weights, x)
    r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    for _ in range(passes):
        out = dinov2_forward(weights, x)
    wall, r1 = time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"wall": wall / passes, "user": (r1.ru_utime - r0.ru_utime) / passes,
                  "sys": (r1.ru_stime - r0.ru_stime) / passes, "faults": (r1.ru_minflt - r0.ru_minflt) / passes,
                  "peak_mb": r1.ru_maxrss / 1024, "features": hashlib.sha256(out.numpy().tobytes()).hexdigest()}))
"""


def run(way: str, args: argparse.Namespace) -> dict:
    out = subprocess.run([sys.executable, "-c", PASSES, way, str(args.hidden), str(args.layers), str(args.heads),
                          str(args.passes), str(args.side)], cwd=ROOT, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--hidden", type=int, default=768)
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--heads", type=int, default=12)
    p.add_argument("--passes", type=int, default=2)
    p.add_argument("--side", type=int, default=448, help="the crop's side (PROVE's DINOv2 input: 448)")
    args = p.parse_args(argv)
    rows = {way: run(way, args) for way in ("default", "kept")}
    print(f"DINOv2 hidden {args.hidden}, {args.layers} layers, {args.side}x{args.side}, portable arithmetic, one "
          f"thread, per pass ({args.passes} passes, fresh process each way):")
    print("| malloc | wall s | user s | sys s | minor faults | peak MB |")
    print("|---|---:|---:|---:|---:|---:|")
    for way, r in rows.items():
        print(f"| {way} | {r['wall']:.2f} | {r['user']:.2f} | {r['sys']:.2f} | {r['faults']:.0f} "
              f"| {r['peak_mb']:.0f} |")
    d, k = rows["default"], rows["kept"]
    print(f"default / kept: wall {d['wall'] / k['wall']:.2f}x, system time {d['sys'] / max(k['sys'], 1e-3):.0f}x; "
          f"same features: {d['features'] == k['features']}")
    return 0 if d["features"] == k["features"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
