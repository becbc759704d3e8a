"""``devil evaluate --protocol prove`` against its peers, whole processes, in one run: PROVE's own
``run_prove_metrics.py`` (xiaomi-research/prove) and ayase 0.2.1's PROVE module (a metric toolkit on PyPI), on one
generated set (a few short lossless mp4 videos, masks white = object, PROVE's layout) with one seeded random DINOv2
written by ``save_pretrained`` (nothing downloaded but the peers).

    python benchmarks/prove_peers.py                       # tiny DINOv2 (32 x 2 layers), then a base-sized one
    python benchmarks/prove_peers.py --models tiny --repeat 3 --record
    python benchmarks/prove_peers.py --models base --videos 2 --frames 3 --record
    python benchmarks/prove_peers.py --prove-source /path/to/a/clone/of/prove   # PROVE from a local copy or mirror

The peers install into a cache folder (``--cache``, default ``~/.cache/devil-dataset/prove-peers``): PROVE is
cloned from its public source (``git clone``; PROVE is on GitHub only; ``--prove-source`` names another place to
clone it from, such as a local mirror of the public repository where GitHub cannot be reached, and the output says
which was used), ayase installs with pip into a virtual environment of its own (``ayase==0.2.1`` without its 60-odd
optional dependencies, its PROVE module's few, and the transformers 4 it pins; torch, OpenCV and the rest are this
interpreter's, read through a ``.pth`` file). PROVE's script runs in this interpreter (it runs under transformers 5:
``AutoModel`` / ``AutoImageProcessor`` from the folder). A peer that cannot be installed here (no network) is said
so; without PROVE's code the plain restatement ``benchmarks/prove_reference.py`` is timed in its place, labelled
"stand-in".

Each implementation runs as its own process (start-up, model load, decoding and scoring all counted; the best of
``--repeat`` runs). The peers compute RC-S and RC-T only, so ours is timed on the same two metrics
(``--metrics rc_s rc_t``: the speed-up is over the same work) and, as further rows, with its default six metrics
(RC-S, RC-T and the background / masked PSNR and SSIM) and with ``DEVIL_NETWORK_KERNELS=native`` (torch's own kernels
instead of the portable arithmetic: what the same bits on every CPU cost). Printed: the wall and CPU seconds of
each, our speed-up over the faster peer, the largest relative difference of the per-video RC-S / RC-T from PROVE's
(or the stand-in's), the CPU and the load average. ``--record`` appends the figures to
``benchmarks/results/prove_peers.jsonl`` (:mod:`results_log`).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

PROVE_SOURCE = "https://github.com/xiaomi-research/prove"
AYASE = "ayase==0.2.1"
#: What ayase's PROVE module imports beyond this interpreter's packages (its top-level package pulls these), and
#: the transformers its metadata pins (``transformers<5``).
AYASE_EXTRAS = ("ftfy", "pydantic-settings", "transformers>=4.45,<5")
MODELS = {"tiny": {"hidden_size": 32, "layers": 2, "heads": 2},
          "base": {"hidden_size": 768, "layers": 12, "heads": 12, "intermediate_size": 3072}}

# Each peer's process: the model folder and the three folders in argv, per-video values printed as JSON last.
PROVE_DRIVER = r"""
import csv, json, os, sys
prove, model, inputs, results, masks, out = sys.argv[1:7]
sys.path.insert(0, prove)
os.chdir(prove)
import utils.dataset as dataset
dataset.DATASET["PROVE-M"].update(inputs=inputs, masks=masks)
path = os.path.join(prove, "run_prove_metrics.py")
source = open(path).read()
marker = 'DINO_PATH = "/PATH/TO/YOUR/dinov2-giant"'
assert marker in source, "run_prove_metrics.py has changed: DINO_PATH not found"
sys.argv = [path, "--dataset", "PROVE-M", "--result_dir", results, "--mask_dir", masks, "--device", "cpu",
            "--out_csv", out]
exec(compile(source.replace(marker, "DINO_PATH = %r" % model), path, "exec"), {"__name__": "__main__"})
rows = {r["case_id"]: r for r in csv.DictReader(open(out, encoding="utf-8-sig"))}
print(json.dumps({os.path.splitext(k)[0]: {"rc_s": float(v["rc_s"]), "rc_t": float(v["rc_t"])}
                  for k, v in rows.items() if k != "AVERAGE"}))
"""
STAND_IN_DRIVER = r"""
import json, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
import prove_reference
from transformers import AutoImageProcessor, AutoModel
model, inputs, results, masks = sys.argv[2:6]
net = prove_reference.ReferenceDino(AutoModel.from_pretrained(model).eval(), AutoImageProcessor.from_pretrained(model))
print(json.dumps(prove_reference.folder_values(net, Path(inputs), Path(results), Path(masks))))
"""
AYASE_DRIVER = r"""
import json, sys
from pathlib import Path
from ayase.models import Sample
from ayase.modules.prove import PROVEModule
model, results, masks = sys.argv[1:4]
module = PROVEModule({"model": model, "mask_path": masks, "device": "cpu"})
module.setup()
assert module._encoder is not None, "ayase's PROVE module could not load the model"
out = {}
for video in sorted(Path(results).glob("*.mp4")):
    q = module.process(Sample(path=video, is_video=True)).quality_metrics
    get = lambda k: float("nan") if q is None or getattr(q, k) is None else float(getattr(q, k))
    out[video.stem] = {"rc_s": get("prove_rc_s_score"), "rc_t": get("prove_rc_t_score")}
print(json.dumps(out))
"""
OURS_DRIVER = "import sys; from devil_dataset.cli import main; sys.exit(main())"


def write_lossless(path: Path, frames: list[np.ndarray], fps: int = 10) -> None:
    """H.264 at qp 0 in 4:4:4 (lossless apart from the RGB -> YUV rounding), the way a lossless result is kept."""
    import av

    h, w = frames[0].shape[:2]
    with av.open(str(path), "w") as container:
        stream = container.add_stream("libx264", rate=fps)
        stream.width, stream.height, stream.pix_fmt = w, h, "yuv444p"
        stream.options = {"qp": "0", "preset": "veryfast"}
        for f in frames:
            for packet in stream.encode(av.VideoFrame.from_ndarray(f, format="rgb24")):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)


def write_set(root: Path, videos: int, frames: int, size: tuple[int, int], seed: int = 0) -> tuple[Path, Path, Path]:
    """``root/{inputs,results,masks}/v<i>.mp4``: a textured scene with a moving red object (inputs), the object
    filled with perturbed background (results), the object's mask (white = object)."""
    rng = np.random.default_rng(seed)
    dirs = tuple(root / d for d in ("inputs", "results", "masks"))
    for d in dirs:
        d.mkdir(parents=True, exist_ok=True)
    w, h = size
    yy, xx = np.mgrid[0:h, 0:w]
    for v in range(videos):
        ins, outs, masks = [], [], []
        for t in range(frames):
            base = np.stack([(xx * 2 + t * 3) % 255, (yy * 2 + 40 * v) % 255, (xx + yy) % 255], -1)
            scene = np.clip(base + rng.normal(0, 8, (h, w, 3)), 0, 255).astype(np.uint8)
            m = np.zeros((h, w), np.uint8)
            x0 = w // 8 + 4 * t + 30 * v
            m[h // 4:h * 2 // 3, x0:x0 + w // 5] = 255
            obj = scene.copy()
            obj[m > 0] = (200, 30, 30)
            fill = scene.copy()
            fill[m > 0] = np.clip(scene[m > 0].astype(int) + rng.integers(-30, 30, (int((m > 0).sum()), 3)), 0, 255)
            ins.append(obj)
            outs.append(fill)
            masks.append(np.repeat(m[:, :, None], 3, 2))
        for d, fs in zip(dirs, (ins, outs, masks)):
            write_lossless(d / f"v{v}.mp4", fs)
    return dirs


def install_prove(cache: Path, source: str) -> Path | None:
    """PROVE's code cloned from ``source`` into ``cache/prove`` (once); None, with the reason printed, if that
    cannot be done here."""
    target = cache / "prove"
    if (target / "run_prove_metrics.py").is_file():
        return target
    tmp = cache / "prove.partial"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        done = subprocess.run(["git", "clone", "--depth", "1", "--quiet", source, str(tmp)], capture_output=True,
                              text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as exc:
        print(f"PROVE: cannot clone {source} ({exc})")
        return None
    if done.returncode != 0 or not (tmp / "run_prove_metrics.py").is_file():
        print(f"PROVE: cannot clone {source}: {done.stderr.strip().splitlines()[-1:]}; its code is on GitHub only")
        return None
    tmp.rename(target)
    return target


def install_ayase(cache: Path) -> Path | None:
    """The python of ``cache/ayase-venv`` with ayase 0.2.1 installed (once); None, with the reason printed, if pip
    cannot reach its index here."""
    venv = cache / "ayase-venv"
    python = venv / "bin" / "python"
    ready = venv / "installed.txt"
    if ready.is_file() and ready.read_text().strip() == AYASE:
        return python
    shutil.rmtree(venv, ignore_errors=True)
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", str(venv)], check=True)
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    import sysconfig

    Path(purelib, "devil_shared.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    for args in ([AYASE, "--no-deps"], list(AYASE_EXTRAS)):
        done = subprocess.run([str(python), "-m", "pip", "install", "--quiet", *args], capture_output=True,
                              text=True, timeout=1800)
        if done.returncode != 0:
            print(f"ayase: pip install {' '.join(args)} failed: {done.stderr.strip().splitlines()[-1:]}")
            return None
    ready.write_text(AYASE + "\n")
    return python


#: CPU seconds (user + system) of the last process :func:`timed` ran: on a machine shared with other jobs the wall
#: time follows the load, the CPU time much less.
LAST_CPU: list[float] = [math.nan]


def timed(command: list[str], repeat: int, env: dict[str, str] | None = None) -> tuple[float, dict]:
    """Best wall time of ``repeat`` runs of ``command`` and the JSON its last run printed last (the CPU time of the
    best run in :data:`LAST_CPU`)."""
    import resource

    best, values = math.inf, {}
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=7200)
        seconds = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
        if seconds < best:
            LAST_CPU[0] = cpu
        if done.returncode != 0:
            raise RuntimeError(f"{command[:3]} failed ({done.returncode}):\n{done.stderr[-3000:]}")
        best = min(best, seconds)
        try:
            values = json.loads(done.stdout)  # the whole output (ours: an indented document)
        except ValueError:
            lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
            values = json.loads(lines[-1]) if lines else {}
    return best, values


#: Our rows: the label, the extra arguments of ``devil evaluate --protocol prove`` and the environment it adds (the
#: first: the peers' work; the last: torch's native kernels instead of the portable arithmetic, values per CPU).
OURS_ROWS: tuple[tuple[str, tuple[str, ...], dict[str, str]], ...] = (
    ("devil evaluate --protocol prove --metrics rc_s rc_t", ("--metrics", "rc_s", "rc_t"), {}),
    ("devil evaluate --protocol prove (default: six metrics)", (), {}),
    ("devil evaluate --protocol prove --metrics rc_s rc_t, DEVIL_NETWORK_KERNELS=native", ("--metrics", "rc_s", "rc_t"),
     {"DEVIL_NETWORK_KERNELS": "native"}),
)


def ours(model: Path, dirs: tuple[Path, Path, Path], repeat: int, extra: tuple[str, ...] = (),
         added: dict[str, str] | None = None) -> tuple[float, dict]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]), **(added or {})}
    cmd = [sys.executable, "-c", OURS_DRIVER, "evaluate", "--protocol", "prove", "--input-dir", str(dirs[0]),
           "--pred-dir", str(dirs[1]), "--mask-dir", str(dirs[2]), "--dino-model", str(model), "--json", *extra]
    seconds, doc = timed(cmd, repeat, env)
    return seconds, doc.get("videos", {})


def largest_difference(values: dict, reference: dict) -> float:
    diffs = [abs(values[v][m] - reference[v][m]) / abs(reference[v][m]) for v in reference for m in ("rc_s", "rc_t")
             if v in values and not math.isnan(reference[v][m]) and reference[v][m] != 0]
    return max(diffs, default=float("nan"))


def run_model(name: str, work: Path, dirs: tuple[Path, Path, Path], prove: Path | None, ayase: Path | None,
              repeat: int) -> dict:
    from devil_dataset.core.networks.dinov2 import save_random_dinov2

    model = save_random_dinov2(work / f"dinov2-{name}", **MODELS[name])
    rows: dict[str, tuple[float, dict]] = {}
    cpu: dict[str, float] = {}
    if prove is not None:
        label = "PROVE run_prove_metrics.py"
        rows[label] = timed([sys.executable, "-c", PROVE_DRIVER, str(prove), str(model), *map(str, dirs),
                             str(work / f"prove-{name}.csv")], repeat)
    else:
        label = "stand-in: benchmarks/prove_reference.py"
        rows[label] = timed([sys.executable, "-c", STAND_IN_DRIVER, str(ROOT / "benchmarks"), str(model),
                             *map(str, dirs)], repeat)
    cpu[label] = LAST_CPU[0]
    if ayase is not None:
        rows["ayase 0.2.1"] = timed([str(ayase), "-c", AYASE_DRIVER, str(model), str(dirs[1]), str(dirs[2])], repeat)
        cpu["ayase 0.2.1"] = LAST_CPU[0]
    for label, extra, added in OURS_ROWS:
        rows[label] = ours(model, dirs, repeat, extra, added)
        cpu[label] = LAST_CPU[0]
    reference = next(iter(rows.values()))[1]
    peers = {label: s for label, (s, _) in rows.items() if not label.startswith("devil")}
    faster = min(peers, key=peers.__getitem__)
    table = {k: {"seconds": round(s, 2), "cpu_seconds": round(cpu[k], 2),
                 "max_rel_diff": float(f"{largest_difference(v, reference):.3g}")} for k, (s, v) in rows.items()}
    return {"model": name, "shape": MODELS[name], "rows": table, "faster_peer": faster,
            "speedup_vs_faster_peer": round(peers[faster] / rows[OURS_ROWS[0][0]][0], 2),
            "speedup_default_metrics": round(peers[faster] / rows[OURS_ROWS[1][0]][0], 2),
            "speedup_native_kernels": round(peers[faster] / rows[OURS_ROWS[2][0]][0], 2),
            "cpu_ratio_vs_faster_peer": round(cpu[faster] / cpu[OURS_ROWS[0][0]], 2)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", nargs="+", choices=sorted(MODELS), default=["tiny", "base"])
    p.add_argument("--videos", type=int, default=3)
    p.add_argument("--frames", type=int, default=24)
    p.add_argument("--size", type=int, nargs=2, default=(320, 192), metavar=("W", "H"))
    p.add_argument("--repeat", type=int, default=1, help="runs of each process; the best is kept")
    p.add_argument("--cache", type=Path, default=Path("~/.cache/devil-dataset/prove-peers").expanduser())
    p.add_argument("--prove-source", default=PROVE_SOURCE, help="where PROVE's code is cloned from")
    p.add_argument("--no-ayase", action="store_true", help="leave ayase out")
    p.add_argument("--record", action="store_true", help="append the figures to benchmarks/results/prove_peers.jsonl")
    args = p.parse_args(argv)
    from results_log import cpu_name

    print(f"CPU: {cpu_name()}, {os.cpu_count()} cores; set: {args.videos} videos x {args.frames} frames, "
          f"{args.size[0]}x{args.size[1]}, lossless H.264")
    args.cache.mkdir(parents=True, exist_ok=True)
    prove = install_prove(args.cache, args.prove_source)
    if prove is None:
        print("PROVE's own code is not reachable here: timing benchmarks/prove_reference.py (a plain restatement "
              "of it) as the stand-in")
    else:
        print(f"PROVE: cloned from {args.prove_source}" + ("" if args.prove_source == PROVE_SOURCE else
                                                          f" (a copy of its public repository {PROVE_SOURCE})"))
    ayase = None if args.no_ayase else install_ayase(args.cache)
    loads = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        dirs = write_set(work / "set", args.videos, args.frames, tuple(args.size))
        results = []
        for name in args.models:
            results.append(run_model(name, work, dirs, prove, ayase, args.repeat))
            loads.append(os.getloadavg()[0])
    for r in results:
        print(f"\nDINOv2 {r['model']} ({MODELS[r['model']]}), whole processes, best of {args.repeat}:")
        print("| implementation | seconds | CPU seconds | max rel diff from the first row |")
        print("|---|---:|---:|---:|")
        for label, row in r["rows"].items():
            print(f"| {label} | {row['seconds']:.1f} | {row['cpu_seconds']:.1f} | {row['max_rel_diff']:.1e} |")
        print(f"ours (rc_s rc_t): {r['speedup_vs_faster_peer']:.2f}x the faster peer ({r['faster_peer']}) in wall "
              f"time, {r['cpu_ratio_vs_faster_peer']:.2f}x in CPU time; with the default six metrics "
              f"{r['speedup_default_metrics']:.2f}x; with torch's native kernels (values per CPU) "
              f"{r['speedup_native_kernels']:.2f}x")
    print(f"load average (1 min) at the start and after each model: {', '.join(f'{x:.2f}' for x in loads)}")
    if args.record:
        from results_log import record

        record("prove_peers", {"set": {"videos": args.videos, "frames": args.frames, "size": list(args.size)},
                               "repeat": args.repeat, "prove_source": args.prove_source if prove else None,
                               "load_averages": [round(x, 2) for x in loads], "models": results},
               list(argv if argv is not None else sys.argv[1:]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
