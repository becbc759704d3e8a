"""Ray engine vs local engine at equal cores, 1 vs 2 workers, and a projection of the full DEVIL jobs on N nodes.

    python benchmarks/ray_scaling.py            # evaluation (8 clips x 30 frames, 3 methods) + the sample build
    python benchmarks/ray_scaling.py --quick    # evaluation only, 4 clips x 16 frames

All runs happen in this invocation on this machine: the local engine (``jobs`` worker processes, kept for the whole
command: their start is timed once, separately, like Ray's) and the Ray engine (a local Ray started with the same
number of CPUs; its start-up is timed separately and not counted) score the same generated slice with
``evaluate_slice`` (three methods in one pass: psnr, ssim, pcons, warp_error), and build the built-in sample with a
local engine of 2 jobs vs the Ray engine (``BuildOptions(engine=...)``) on 2 CPUs. Both engines' results are
checked identical. CPU seconds are the whole machine's (``/proc/stat``: Ray's workers are not child processes of
this one), so run it on a quiet machine; the wall ratio "ray / local" is the engine's overhead (goal <= 1.15).
Ray runs with token authentication and a fresh token held in the environment only; it leaves no
``~/.ray/auth_token`` and no cluster behind (see docs/cluster.md, "Token authentication").

The projection multiplies measured per-unit costs (this run's evaluation CPU per video-frame-pixel, scaled to
832x480; the release rebuild's CPU per 1080p clip from ``benchmarks/release_rebuild_cost.py``; the network
metrics' throughput measured on one H100 with ``benchmarks/networks.py --device cuda --batch 32``) by the full
DEVIL sizes and divides by N nodes x C cores (and G GPUs), times the measured overhead.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from eval_engine import make_clip  # noqa: E402

from devil_dataset.core.engines import get_engine  # noqa: E402
from devil_dataset.core.release_format import write_frame_pngs  # noqa: E402
from devil_dataset.eval.metrics.metric import EvalOptions  # noqa: E402
from devil_dataset.eval.scoring.evaluate import evaluate_slice  # noqa: E402

# Full DEVIL sizes (paper section 4): ~1,250 clips, 10 slices x 150 videos, 90 frames at 832x480.
FULL_CLIPS = 1250
SLICES, VIDEOS, FRAMES, EVAL_PIXELS = 10, 150, 90, 832 * 480
# benchmarks/release_rebuild_cost.py on this project's 2-core machine: CPU seconds per 1080p clip of the rebuild.
REBUILD_CPU_PER_CLIP = 35.0
# benchmarks/networks.py --device cuda --batch 32 on one H100 (2026-11-23), random weights (speed only):
H100_LPIPS_PAIRS_S = 1433.0  # frame pairs / s
H100_FID_FRAMES_S = 1892.0  # frames / s (Inception features)
H100_PVCS_WINDOWS_S = 79.5  # GT + composite 10-frame window pairs / s (81 per 90-frame video)
H100_VFID_FRAMES_S = 1145.0  # frames / s (whole-video I3D pass, GT and composite)


def machine_cpu() -> float:
    """CPU seconds (user + system) of the whole machine since boot."""
    with open("/proc/stat") as f:
        fields = f.readline().split()[1:]
    ticks = os.sysconf("SC_CLK_TCK")
    user, nice, system = (int(x) for x in fields[:3])
    return (user + nice + system) / ticks


def timed(fn):
    c, t = machine_cpu(), time.perf_counter()
    out = fn()
    return time.perf_counter() - t, machine_cpu() - c, out


def start_ray(cpus: int) -> float:
    import logging

    import ray

    if ray.is_initialized():
        ray.shutdown()
    t = time.perf_counter()
    ray.init(num_cpus=cpus, include_dashboard=False, logging_level=logging.WARNING, log_to_driver=False)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="4 clips x 16 frames, no build")
    ap.add_argument("--clips", type=int, default=8)
    ap.add_argument("--frames", type=int, default=30)
    ap.add_argument("--size", type=int, nargs=2, default=(432, 240), metavar=("W", "H"))
    ap.add_argument("--no-build", action="store_true", help="skip the sample build comparison")
    ap.add_argument("--nodes", type=int, nargs="+", default=[1, 4, 16], help="node counts of the projection")
    ap.add_argument("--cores", type=int, default=16, help="CPU cores per node in the projection")
    args = ap.parse_args()
    clips, frames, (w, h) = (4, 16, (256, 192)) if args.quick else (args.clips, args.frames, args.size)
    metrics = ["psnr", "ssim", "pcons", "warp_error"]
    opts = EvalOptions(flow="dis")
    import ray  # noqa: F401  - fail early without the extra

    rows_table = []
    with tempfile.TemporaryDirectory() as tmp:
        rows, preds = [], {}
        for i in range(clips):
            gt, hole = make_clip(i, frames, h, w)
            rows.append({"clip_id": f"clip{i}", "frames": gt, "hole": hole, "num_frames": frames, "height": h,
                         "width": w})
            for k, noise in enumerate((4, 16, 48)):
                rng = np.random.default_rng(100 * i + k)
                pred = np.clip(gt.astype(np.int16) + rng.integers(-noise, noise + 1, gt.shape), 0, 255).astype(np.uint8)
                write_frame_pngs(pred, Path(tmp) / f"method{k}" / f"clip{i}", "pred")
                preds[f"method{k}"] = Path(tmp) / f"method{k}"

        def run(jobs: int, engine: str = "local"):
            return evaluate_slice("bench", "all", preds, metrics, opts, progress=False, rows=rows,
                                  engine=get_engine(engine, jobs=jobs))

        run(1)  # warm-up (imports, OpenCV threads)
        local_start = timed(lambda: run(2))  # warm-up: the 2 local workers start (kept for the command), import
        local = {j: timed(lambda j=j: run(j)) for j in (1, 2)}
        ray_runs, starts = {}, {}
        for cpus in (1, 2):
            starts[cpus] = start_ray(cpus)
            run(cpus, "ray")  # warm-up: workers start, modules import
            ray_runs[cpus] = timed(lambda cpus=cpus: run(cpus, "ray"))
        import ray

        ray.shutdown()
        same = all(r[2] == local[2][2] for r in [local_start, *local.values(), *ray_runs.values()])
        for j in (1, 2):
            rows_table.append((f"evaluate, local jobs={j}", *local[j][:2]))
            rows_table.append((f"evaluate, ray {j} CPU(s)", *ray_runs[j][:2]))

        build_pair = None
        if not (args.quick or args.no_build):
            from devil_dataset.builder.build import build
            from devil_dataset.builder.build_options import BuildOptions

            def sample_build(out, engine):
                return build([], out, BuildOptions(sample=True, progress=False, engine=engine))

            b_local = timed(lambda: sample_build(Path(tmp) / "b-local", get_engine("local", jobs=2)))
            start_ray(2)
            b_ray = timed(lambda: sample_build(Path(tmp) / "b-ray", get_engine("ray")))
            ray.shutdown()
            files = lambda d: {p.relative_to(d).as_posix(): p.read_bytes()  # noqa: E731
                               for p in sorted(d.rglob("*"))
                               if p.is_file() and not p.relative_to(d).parts[0].startswith(".")}
            build_same = files(Path(tmp) / "b-local") == files(Path(tmp) / "b-ray")
            build_pair = (b_local, b_ray, build_same)
            rows_table.append(("build --sample, local jobs=2", *b_local[:2]))
            rows_table.append(("build --sample, ray 2 CPUs", *b_ray[:2]))

    print(f"evaluation: {clips} clips x {frames} frames at {w}x{h}, 3 methods in one pass, {' '.join(metrics)}; "
          f"Ray start-up (not counted) {starts[1]:.1f} s / {starts[2]:.1f} s; the local 2 workers' first call "
          f"(they start; not counted) {local_start[0]:.2f} s")
    print(f"{'run':<34}{'wall s':>9}{'CPU s':>9}")
    for name, wall, cpu in rows_table:
        print(f"{name:<34}{wall:9.2f}{cpu:9.2f}")
    over = ray_runs[2][0] / local[2][0]
    print(f"overhead ray / local at 2 CPUs: wall {over:.2f}x (goal <= 1.15), "
          f"at 1 CPU: {ray_runs[1][0] / local[1][0]:.2f}x")
    print(f"2 vs 1 workers: local {local[1][0] / local[2][0]:.2f}x faster, "
          f"ray {ray_runs[1][0] / ray_runs[2][0]:.2f}x faster")
    print(f"results identical on every engine and worker count: {same}")
    if build_pair:
        (bl, br, bsame) = build_pair
        print(f"build: ray / local wall {br[0] / bl[0]:.2f}x; datasets byte-identical: {bsame}")

    # projection from measured per-unit costs
    cpu_per_px_frame = local[1][1] / 3 / (clips * frames * w * h)  # per method: the pass scored three
    eval_cpu_slice_method = cpu_per_px_frame * VIDEOS * FRAMES * EVAL_PIXELS
    net_s_slice_method = (VIDEOS * FRAMES / H100_LPIPS_PAIRS_S + VIDEOS * FRAMES / H100_FID_FRAMES_S
                          + VIDEOS * (FRAMES - 9) / H100_PVCS_WINDOWS_S + 2 * VIDEOS * FRAMES / H100_VFID_FRAMES_S)
    rebuild_cpu = REBUILD_CPU_PER_CLIP * FULL_CLIPS
    factor = max(1.0, over)
    print(f"\nprojection (x{factor:.2f} overhead; {args.cores} cores per node; one method):")
    print(f"  pixel metrics + flow: {eval_cpu_slice_method:.0f} CPU s per slice (150 videos x 90 frames at 832x480),"
          f" {eval_cpu_slice_method * SLICES / 3600:.1f} CPU h for the 10 slices")
    print(f"  network metrics on one H100 (LPIPS, FID, PVCS, VFID): {net_s_slice_method:.0f} s per slice, "
          f"{net_s_slice_method * SLICES / 60:.0f} min for the 10 slices")
    print(f"  full rebuild: {rebuild_cpu / 3600:.1f} CPU h ({FULL_CLIPS} clips x {REBUILD_CPU_PER_CLIP:.0f} CPU s)")
    print(f"  {'nodes':>5} {'rebuild h':>10} {'10-slice pixel eval min':>24} "
          f"{'10-slice networks min (1 GPU/node)':>36}")
    for n in args.nodes:
        cores = n * args.cores
        print(f"  {n:>5} {rebuild_cpu * factor / cores / 3600:>10.2f} "
              f"{eval_cpu_slice_method * SLICES * factor / cores / 60:>24.1f} "
              f"{net_s_slice_method * SLICES * factor / n / 60:>36.1f}")


if __name__ == "__main__":
    # the local Rays it starts use a token held in the environment only: no ~/.ray/auth_token is left behind
    # (Ray >= 2.52 writes one on a local ray.init(); every later `ray start` on the machine would then want it)
    from devil_dataset.core.engines.ray import private_ray_token

    with private_ray_token():
        try:
            main()
        finally:
            import ray

            ray.shutdown()  # no cluster left behind either, whatever stopped the run
