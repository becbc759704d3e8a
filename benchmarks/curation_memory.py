"""Curation peak memory against source length, per decoder.

Writes two pan videos of the same small resolution and different lengths (default 700 and 2,800 frames at 320x180),
curates each in a fresh child process per decoder and prints the child's peak RSS (``VmHWM``; ``ru_maxrss`` would
carry the parent's peak over ``exec``) and the ratio long/short. Bounded streaming shows a ratio near 1.0.
``--cache-mib`` sets curation's decode cache (``DECODE_CACHE_BYTES``, default 768 MiB: sources whose frames fit in
it are decoded once); the default 64 MiB here keeps both lengths above the cache so the streaming path is what is
measured (with 768 MiB, 2,800 frames at 320x180 fit in the cache and memory rises to the cap by design).

    python benchmarks/curation_memory.py                     # pyav, decord (when installed), auto
    python benchmarks/curation_memory.py --frames 700 1400 2800 --cache-mib 768

Measured: see the README section "Reliability".
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

ROOT = Path(__file__).resolve().parents[1]
SIZE = (320, 180)

CHILD = """
import json, resource, sys, tempfile, time
sys.path.insert(0, {root!r})
import devil_dataset.builder.curate as C
C.DECODE_CACHE_BYTES = {cache} << 20
t0 = time.process_time()
r = C.curate([{video!r}], tempfile.mkdtemp(), min_size=(160, 96), backend={backend!r}, progress=False)
hwm = [l for l in open("/proc/self/status") if l.startswith("VmHWM:")]  # reset by exec, unlike ru_maxrss
peak = int(hwm[0].split()[1]) / 1024 if hwm else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({{"clips": len(r.clips), "peak_mb": peak,
                  "cpu_s": time.process_time() - t0, "decoder": C.curation_backend({backend!r})}}))
"""


def write_pan(path: Path, num_frames: int) -> None:
    import numpy as np

    from devil_dataset.core.video_io import write_video

    w, h = SIZE
    canvas = np.random.default_rng(0).integers(0, 256, (h, w + num_frames + 2, 3), dtype=np.uint8)
    write_video(path, np.stack([canvas[:, t:t + w] for t in range(num_frames)]), fps=25)


def measure(video: Path, backend: str, cache_mib: int) -> dict:
    code = CHILD.format(root=str(ROOT), cache=cache_mib, video=str(video), backend=backend)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--frames", type=int, nargs="+", default=[700, 2800])
    ap.add_argument("--cache-mib", type=int, default=64)
    ap.add_argument("--decoders", nargs="+", default=None)
    args = ap.parse_args()
    from devil_dataset.core.video_io import decord_available

    decoders = args.decoders or (["pyav", "decord", "auto"] if decord_available() else ["pyav", "auto"])
    with tempfile.TemporaryDirectory() as tmp:
        videos = {n: Path(tmp) / f"pan{n}.mp4" for n in args.frames}
        for n, p in videos.items():
            write_pan(p, n)
        print(f"{SIZE[0]}x{SIZE[1]}, decode cache {args.cache_mib} MiB; peak RSS of a child process per run")
        for backend in decoders:
            rows = {n: measure(p, backend, args.cache_mib) for n, p in videos.items()}
            base = rows[args.frames[0]]["peak_mb"]
            cells = "  ".join(f"{n} frames: {r['peak_mb']:7.1f} MB ({r['clips']} clips, {r['cpu_s']:.1f} s CPU)"
                              for n, r in rows.items())
            ratio = rows[args.frames[-1]]["peak_mb"] / base
            print(f"{backend:>6} ({rows[args.frames[0]]['decoder']}): {cells}  ratio {ratio:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
