"""Seconds per DEVIL mask: raw 1920x1080 rendering, and the whole path to a stored 832x480 mask.

Two paths produce the same stored 832x480 masks and run side by side on the same masks:

- release (a faithful stand-in of the original pipeline): the generator's 90 mode '1' frames at 1920x1080 are
  written as PNGs (as the release's mask script did); later each PNG is read back, resized to 854x480 with
  Pillow NEAREST, cropped 11 px from the left and written as an 832x480 PNG (the release's masks and slices).
- ours: each frame is resized and cropped in memory as soon as it is drawn, the statistics are measured, and the
  mask is stored (npz with packed bits, or the release PNG folder), atomically.

The script asserts identical pixels (release PNGs == our npz == our PNGs) and prints the speed ratios.

    python benchmarks/masks.py --quick     # 2 masks
    python benchmarks/masks.py             # 2 masks per preset (16)
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from devil_dataset.core.cover_crop import cover_crop_geometry  # noqa: E402
from devil_dataset.core.mask_store import output_path, read_stored, store_mask  # noqa: E402
from devil_dataset.core.masks import (  # noqa: E402
    PRESETS,
    iter_mask_images,
    mask_seed,
    render_mask,
    render_mask_packed,
)
from devil_dataset.core.release_format import MASK_PATTERN, read_mask_pngs  # noqa: E402
from devil_dataset.core.slices import EVAL_SIZE  # noqa: E402


def release_render_to_pngs(preset: str, index: int, directory: Path) -> None:
    """Release step 1: render at 1920x1080 and save every frame as a mode '1' PNG."""
    directory.mkdir(parents=True, exist_ok=True)
    for t, image in enumerate(iter_mask_images(preset, mask_seed(index))):
        image.save(directory / MASK_PATTERN.format(t))


def release_crop_pngs(src: Path, dst: Path) -> None:
    """Release step 2 (later): read the 1080p PNGs back, resize 854x480 NEAREST, crop to 832x480, save."""
    dst.mkdir(parents=True, exist_ok=True)
    (rw, rh), (left, top) = cover_crop_geometry((1920, 1080), EVAL_SIZE)
    for path in sorted(src.glob("frame_*_mask.png")):
        with Image.open(path) as image:
            small = image.resize((rw, rh), Image.Resampling.NEAREST)
        small.crop((left, top, left + EVAL_SIZE[0], top + EVAL_SIZE[1])).save(dst / path.name)


class Timer:
    def __init__(self) -> None:
        self.wall = self.cpu = 0.0

    def __enter__(self) -> "Timer":
        self._w, self._c = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc) -> None:
        self.wall += time.perf_counter() - self._w
        self.cpu += time.process_time() - self._c


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="2 masks instead of 2 per preset")
    parser.add_argument("--per-preset", type=int, default=2, help="masks per preset in the full run (default 2)")
    parser.add_argument("--workdir", type=Path, help="scratch folder (default: a temporary folder, removed)")
    args = parser.parse_args(argv)

    if args.quick:
        jobs = [("fgs-l_fgm-h_fgd-h", 0), ("fgs-h_fgm-l_fgd-l", 1)]
    else:
        jobs = [(p, i) for p in PRESETS for i in range(args.per_preset)]
    work = args.workdir or Path(tempfile.mkdtemp(prefix="devil-mask-bench-"))
    timers = {k: Timer() for k in ("render", "render_packed", "release_render_png", "release_crop",
                                   "ours_npz", "ours_png")}
    try:
        for preset, index in jobs:
            seed = mask_seed(index)
            with timers["render"]:
                hole = render_mask(preset, seed)
            del hole
            with timers["render_packed"]:
                render_mask_packed(preset, seed)
            raw_dir = work / "release_1080" / f"devil_{preset}" / f"{index:05d}"
            crop_dir = work / "release_832" / f"devil_{preset}" / f"{index:05d}"
            with timers["release_render_png"]:
                release_render_to_pngs(preset, index, raw_dir)
            with timers["release_crop"]:
                release_crop_pngs(raw_dir, crop_dir)
            with timers["ours_npz"]:
                npz, _ = store_mask(work / "ours", preset, index, fmt="npz")
            with timers["ours_png"]:
                folder, _ = store_mask(work / "ours", preset, index, fmt="release-png")
            release_hole = read_mask_pngs(crop_dir)
            assert np.array_equal(release_hole, read_stored(npz)[0]), f"{preset}/{index}: npz differs from release"
            assert np.array_equal(release_hole, read_stored(folder)[0]), f"{preset}/{index}: PNGs differ"
            assert folder == output_path(work / "ours", preset, index, "release-png")
    finally:
        if args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)

    n = len(jobs)
    release = Timer()
    release.wall = timers["release_render_png"].wall + timers["release_crop"].wall
    release.cpu = timers["release_render_png"].cpu + timers["release_crop"].cpu
    rows = [
        ("render 1920x1080, bool [90,1080,1920]", timers["render"]),
        ("render 1920x1080, packed bits", timers["render_packed"]),
        ("release: render + write 1080p PNGs", timers["release_render_png"]),
        ("release: read 1080p PNGs, crop, write 832x480 PNGs", timers["release_crop"]),
        ("release path total -> 832x480 PNGs", release),
        ("ours -> 832x480 npz (+stats)", timers["ours_npz"]),
        ("ours -> 832x480 release PNGs (+stats)", timers["ours_png"]),
    ]
    print(f"{n} masks x 90 frames; seconds per mask (wall / cpu)")
    for name, t in rows:
        print(f"  {name:<52} {t.wall / n:7.3f} / {t.cpu / n:7.3f}")
    print("identical pixels: release PNGs == our npz == our PNGs for all masks")
    for name, key in (("npz", "ours_npz"), ("release-png", "ours_png")):
        t = timers[key]
        print(f"speed ratio release / ours ({name}): wall {release.wall / t.wall:.1f}x, cpu {release.cpu / t.cpu:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
