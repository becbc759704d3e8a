"""``devil curate``: cut source videos into shot-cut-free 45-90 frame clips with a manifest (the release's clips).

Also ``devil samples``: write the built-in rendered sample sources (known camera and scene motion) and their labels.
"""
from __future__ import annotations

import argparse
import json
import sys

from ._args import EXAMPLE_FORMATTER, existing_path, output_directory, positive_int, resolution

CURATE_EPILOG = """\
examples:
  # landscape sources of at least 832x480 (the default filter); folders expand to their video files
  devil curate raw/lake.mp4 raw/more_videos/ --out curated/

  # the packaged real footage (bikes.mp4 is 640x272) with a lower size limit
  devil curate $(python -c "from devil_dataset.builder.samples import packaged_footage as p; print(*p())") \\
      --out curated/ --min-resolution 640x272

Each clip is curated/clips/<source stem>-<clip index, 5 digits>.mp4 (H.264 CRF 18, native size and frame rate);
curated/manifest.jsonl lists every clip (source, sha256s, first frame, frame count, fps, size, cut score) and every
skipped source with its reason. Unreadable, corrupt, truncated, too-small or portrait sources are skipped and listed
(exit status 0). Re-running resumes: clips already stored with a matching checksum are kept; output is byte-identical.
"""

SAMPLES_EPILOG = """\
examples:
  # 14 rendered single-shot scenes + 2 sources with a hard cut, 854x480, 90 frames, and sample_labels.json
  devil samples --out samples/
  devil curate samples/ --out curated/

  # tiny and fast
  devil samples --out samples/ --resolution 320x180 --frames 50 --count 4
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "curate", help="cut source videos into 45-90 frame clips without shot cuts",
        description="Decode source videos, detect shot cuts (PySceneDetect ContentDetector), cut consecutive "
        "90-frame clips from the start of every shot (tails under 45 frames dropped), store them as H.264 mp4 "
        "and write a manifest.",
        epilog=CURATE_EPILOG, formatter_class=EXAMPLE_FORMATTER)
    p.add_argument("sources", nargs="+", type=existing_path, metavar="SOURCE",
                   help="video files, or folders whose video files (by suffix) are used")
    p.add_argument("--out", type=output_directory, required=True, metavar="DIR", help="output folder")
    p.add_argument("--min-resolution", type=resolution, default=(832, 480), metavar="WxH",
                   help="smallest accepted source size (default 832x480)")
    p.add_argument("--allow-portrait", action="store_true",
                   help="also accept portrait and square sources (the size limit then applies in either orientation)")
    p.add_argument("--decoder", choices=("auto", "decord", "pyav"), default="auto",
                   help="decoder (default auto: PyAV, whose streaming memory stays flat; decord's grows with the "
                   "source length)")
    p.add_argument("--cut-threshold", type=float, default=None, metavar="SCORE",
                   help="PySceneDetect ContentDetector threshold (default 27)")
    p.add_argument("--json", action="store_true", help="print the report as JSON instead of text")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    p.set_defaults(func=run_curate)

    s = subparsers.add_parser(
        "samples", help="write the built-in rendered sample sources and their known labels",
        description="Render landscape scenes with a known virtual camera (still, jitter, pan, tilt, zoom, roll, "
        "handheld) and scene motion (flowing water, swaying foliage) as H.264 sources, plus sample_labels.json.",
        epilog=SAMPLES_EPILOG, formatter_class=EXAMPLE_FORMATTER)
    s.add_argument("--out", type=output_directory, required=True, metavar="DIR", help="output folder")
    s.add_argument("--resolution", type=resolution, default=(854, 480), metavar="WxH",
                   help="render size (default 854x480)")
    s.add_argument("--frames", type=positive_int, default=90, help="frames per single-shot source (default 90)")
    s.add_argument("--count", type=positive_int, default=None,
                   help="number of single-shot sources (default: one per built-in scene)")
    s.add_argument("--cut-sources", type=int, default=2, help="sources with a hard cut in the middle (default 2)")
    s.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    s.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    s.set_defaults(func=run_samples)


def run_curate(args: argparse.Namespace) -> int:
    from ..builder.curate import curate
    from ..builder.shot_cuts import CUT_THRESHOLD

    report = curate(
        args.sources, args.out,
        min_size=args.min_resolution,
        landscape_only=not args.allow_portrait,
        backend=args.decoder,
        cut_threshold=CUT_THRESHOLD if args.cut_threshold is None else args.cut_threshold,
        progress=not args.no_progress,
    )
    if args.json:
        print(json.dumps({
            "out": str(report.out_dir), "manifest": str(report.manifest_path), "clips": len(report.clips),
            "written": report.written, "reused": report.reused,
            "skipped": [s.to_json() for s in report.skipped],
        }, indent=1))
    else:
        print(report.summary())
        print(f"manifest: {report.manifest_path}")
    if report.skipped and not args.json:
        print(f"devil curate: {len(report.skipped)} source(s) skipped (listed above)", file=sys.stderr)
    return 0


def run_samples(args: argparse.Namespace) -> int:
    from ..builder.samples import LABELS_NAME, write_sample_sources
    from ..core.engines import get_engine

    paths = write_sample_sources(args.out, size=args.resolution, num_frames=args.frames, count=args.count,
                                 cut_sources=args.cut_sources, seed=args.seed, progress=not args.no_progress,
                                 engine=get_engine("local"))
    for p in paths:
        print(p)
    print(f"labels: {args.out / LABELS_NAME}")
    return 0
