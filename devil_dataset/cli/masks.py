"""``devil masks``: render the DEVIL occlusion masks (the release's masks) and print their statistics."""
from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.errors import DevilError, unknown_name
from ._args import EXAMPLE_FORMATTER, existing_path, non_negative_int, output_directory, positive_int, resolution

if TYPE_CHECKING:  # pragma: no cover
    from ..core.mask_batch import MaskSource

RENDER_EPILOG = """\
examples:
  # mask 0 of one preset as the benchmark uses it: 832x480 release PNGs in masks/devil_fgs-h_fgm-l_fgd-l/00000/
  devil masks render --preset fgs-h_fgm-l_fgd-l --index 0 --out masks/

  # 20 masks of every preset as npz files (masks/devil_<preset>_<index>.npz), time-reversed
  devil masks render --preset all --index 0 --count 20 --reverse --format npz --out masks/

  # the raw 1920x1080 render (what the release's generator draws, before cover-cropping)
  devil masks render --preset fgs-l_fgm-h_fgd-h --index 0 --resolution 1920x1080 --format npz --out raw/

--resolution WxH: render at 1920x1080 (the release's canvas), then cover-crop to WxH with nearest resampling
(the release's slices). The default 832x480 is the benchmark's mask; 1920x1080 is the raw render.
Outputs are written atomically; a mask already stored with the same settings is skipped, so re-running resumes.
"""

STATS_EPILOG = """\
examples:
  devil masks stats --preset fgs-h_fgm-l_fgd-l --index 0 --count 5
  devil masks stats --preset all --count 20 --summary-only
  devil masks stats --preset all --count 20 --summary-only --json     # for scripts
  devil masks stats --stored masks/devil_fgs-h_fgm-l_fgd-l/00000 masks/devil_fgs-l_fgm-h_fgd-h_00000.npz

Statistics are measured on the 832x480 cover-cropped mask (see docs/masks.md): mean_area (hole fraction),
centroid_speed / centroid_path (centroid motion per frame / summed, relative to the frame diagonal), pose_motion
(1 - IoU of consecutive frames after aligning their centroids), consecutive_iou, union_coverage.
"""

PRESETS_EPILOG = """\
examples:
  devil masks presets
  devil masks presets --json
"""

ALL = "all"


def register(subparsers: argparse._SubParsersAction) -> None:
    masks = subparsers.add_parser(
        "masks", help="render the DEVIL occlusion masks and measure them",
        description="The DEVIL occlusion masks: eight presets x 1000 seeds, bit-identical to the original release.",
        epilog=RENDER_EPILOG, formatter_class=EXAMPLE_FORMATTER)
    sub = masks.add_subparsers(dest="masks_command", metavar="SUBCOMMAND")
    sub.required = True

    r = sub.add_parser(
        "render", help="render masks to release PNG folders or npz files",
        description="Render masks of a preset (release generator at 1920x1080), cover-crop them to --resolution, "
        "optionally reverse them in time, measure their statistics and store them.",
        epilog=RENDER_EPILOG, formatter_class=EXAMPLE_FORMATTER)
    _selection_args(r)
    r.add_argument("--resolution", type=resolution, default=(832, 480), metavar="WxH",
                   help="output size: cover-crop of the 1920x1080 render (default 832x480; 1920x1080 = raw)")
    r.add_argument("--reverse", action="store_true", help="reverse the masks in time (frame k -> T-1-k)")
    r.add_argument("--out", type=output_directory, required=True, metavar="DIR", help="output folder")
    r.add_argument("--format", dest="fmt", choices=("release-png", "npz"), default="release-png",
                   help="release-png: DIR/devil_<preset>/<index:05d>/frame_%%04d_mask.png (+ mask.json); "
                   "npz: DIR/devil_<preset>_<index:05d>.npz (default release-png)")
    r.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    r.set_defaults(func=run_render)

    s = sub.add_parser(
        "stats", help="print mask statistics (a table, or JSON with --json)",
        description="Print per-mask statistics and per-preset median / quartiles (readable tables, or JSON with "
        "--json), for rendered preset/index ranges or for stored masks.",
        epilog=STATS_EPILOG, formatter_class=EXAMPLE_FORMATTER)
    _selection_args(s, required=False)
    s.add_argument("--stored", nargs="+", type=existing_path, metavar="PATH",
                   help="stored masks instead: .npz files or release-png mask folders")
    s.add_argument("--summary-only", action="store_true", help="print only the per-preset summary")
    s.add_argument("--json", action="store_true", help="print JSON (for scripts) instead of tables")
    s.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    s.set_defaults(func=run_stats)

    p = sub.add_parser("presets", help="print the preset table (JSON with --json)",
                       description="Print the eight presets' parameters (the release's masks) as a table, or as JSON.",
                       epilog=PRESETS_EPILOG, formatter_class=EXAMPLE_FORMATTER)
    p.add_argument("--json", action="store_true", help="print JSON (for scripts) instead of the table")
    p.set_defaults(func=run_presets)


def _selection_args(p: argparse.ArgumentParser, required: bool = True) -> None:
    p.add_argument("--preset", required=required, metavar="PRESET",
                   help="preset name, e.g. fgs-h_fgm-l_fgd-l, or 'all' for the eight presets")
    p.add_argument("--index", type=non_negative_int, default=0, metavar="I", help="first mask index (default 0)")
    p.add_argument("--count", type=positive_int, default=1, metavar="N", help="number of masks (default 1)")
    p.add_argument("--num-frames", type=positive_int, default=90, metavar="T",
                   help="frames per mask (default 90, the release's; the first T frames of the sequence)")


def _jobs(args: argparse.Namespace) -> list[tuple[str, int]]:
    from ..core.masks import PRESETS, SEED_TABLE_SIZE

    if args.preset == ALL:
        presets = list(PRESETS)
    elif args.preset in PRESETS:
        presets = [args.preset]
    else:
        raise unknown_name("preset", args.preset, [*PRESETS, ALL], prefix="--preset: ")
    if args.index + args.count > SEED_TABLE_SIZE:
        raise DevilError(f"--index/--count: masks {args.index}..{args.index + args.count - 1} requested, but each "
                         f"preset has masks 0..{SEED_TABLE_SIZE - 1}")
    return [(p, i) for p in presets for i in range(args.index, args.index + args.count)]


def run_render(args: argparse.Namespace) -> int:
    from ..core.mask_batch import render_masks

    jobs = _jobs(args)
    out: Path = args.out
    written = render_masks(out, jobs, fmt=args.fmt, reverse=args.reverse, size=args.resolution,
                           num_frames=args.num_frames, progress=not args.no_progress)
    w, h = args.resolution
    print(f"{written} masks written, {len(jobs) - written} already present ({w}x{h}, {args.fmt}) in {out}")
    return 0


def run_stats(args: argparse.Namespace) -> int:
    from ..core.mask_batch import mask_stats_document
    from ..core.mask_tables import stats_text

    masks: list[MaskSource]
    if args.stored:
        if args.preset is not None:
            raise DevilError("--stored: give either --stored or --preset, not both")
        masks = list(args.stored)
    else:
        if args.preset is None:
            raise DevilError("--preset: required (or --stored PATH ...)")
        masks = list(_jobs(args))
    doc = mask_stats_document(masks, num_frames=args.num_frames, summary_only=args.summary_only,
                              progress=not args.no_progress)
    print(json.dumps(doc, indent=1) if args.json else stats_text(doc))
    return 0


def run_presets(args: argparse.Namespace) -> int:
    from ..core.mask_tables import presets_text
    from ..core.masks import PRESETS

    if args.json:
        print(json.dumps({name: asdict(p) for name, p in PRESETS.items()}, indent=1))
    else:
        print(presets_text(PRESETS))
    return 0
