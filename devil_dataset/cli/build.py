"""``devil build``: curate, label, render masks and write the DEVIL slices as a Hub-ready dataset folder."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.errors import DevilError
from ._args import (
    EXAMPLE_FORMATTER,
    add_parity_argument,
    add_wait_lock_argument,
    existing_path,
    non_negative_int,
    output_directory,
    output_folder_lock,
    positive_int,
    resolution,
)

if TYPE_CHECKING:  # pragma: no cover
    from ..builder.build_options import BuildOptions

EPILOG = """\
examples:
  # the built-in sample (rendered scenes + packaged real footage; nothing downloaded), then load a slice
  devil build --sample --out devil-sample --jobs 2
  python -c "import datasets; print(datasets.load_dataset('devil-sample', 'camera_motion_high', split='test'))"

  # your own landscape videos (files or folders), with hand-made background-scene-motion labels
  devil build videos/ --out devil-data --bg-labels bg_labels.csv --license cc-by-4.0

  # the corrected labelling protocol (true-difference scene-motion score; unscored clips left out of the tails)
  devil build videos/ --out devil-data --parity corrected

  # your own videos smaller than the release's 832x480 (e.g. 640x272 sources)
  devil build small-videos/ --out devil-small --resolution 640x272 --min-resolution 640x272

  # choose the decoder of the curation step, as `devil curate --decoder` does
  devil build videos/ --out devil-data --decoder pyav

  # the DEVIL benchmark itself, rebuilt the release's way from its downloaded sources
  devil sources download --out devil-sources
  devil build --release-sources devil-sources --out devil

  # on a Ray cluster (pip install "devil-dataset[ray]"; --out on a filesystem every node sees)
  devil build videos/ --out /shared/devil-data --engine ray --ray-address HEAD_IP:6379

Interrupted builds resume (re-run the same command); the same sources and seed give byte-identical files.
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "build",
        help="build the DEVIL slices (all + ten configs) as a Hub-ready dataset folder",
        description="Curate source videos into 45-90 frame clips, score camera and background-scene motion, "
        "render the occlusion masks and write `all` plus the ten DEVIL slices as parquet configs with a dataset "
        "card (README.md) and a checksum manifest. Small collections use a documented scaled-down slice size.",
        epilog=EPILOG,
        formatter_class=EXAMPLE_FORMATTER,
    )
    p.add_argument("sources", nargs="*", type=existing_path, metavar="SOURCE", help="video files or folders")
    p.add_argument("--out", required=True, type=output_directory, metavar="DIR", help="dataset folder to write")
    p.add_argument("--sample", action="store_true", help="build from the built-in sample sources instead")
    p.add_argument("--release-sources", type=existing_path, metavar="DIR",
                   help="rebuild the DEVIL benchmark the release's way from `devil sources download` output "
                   "(1920x1080 check, 90-frame chunks from frame 0, JPEG q95 clips, no cut filtering, "
                   "rebuild-report.json)")
    add_parity_argument(p, "--scene-mode and --rank-mode to release or to corrected (manifest.json's `modes`)")
    p.add_argument("--scene-mode", choices=("release", "corrected"), default=None,
                   help="automatic background-scene-motion score mode when no --bg-labels: release (uint8 "
                   "wrap-around AffineScore) or corrected (true difference) (default: the one --parity sets)")
    p.add_argument("--rank-mode", choices=("release", "corrected"), default=None,
                   help="clips without a score in the rank tails: release ranks them last, into the high tails; "
                   "corrected leaves them out (default: the one --parity sets)")
    p.add_argument("--seed", type=non_negative_int, default=0, help="shuffle seed (default 0 = the release)")
    p.add_argument("--resolution", type=resolution, default=(832, 480), metavar="WxH",
                   help="output size (default 832x480, the release's)")
    p.add_argument("--min-resolution", type=resolution, default=None, metavar="WxH",
                   help="smallest source video accepted, as in `devil curate --min-resolution` (default 832x480, "
                   "the release's); with --resolution it builds from smaller videos, e.g. --resolution 640x272 "
                   "--min-resolution 640x272")
    p.add_argument("--frame-format", choices=("jpeg", "png"), default="jpeg",
                   help="per-frame storage: jpeg (q95, the release's clip format; default) or png (lossless)")
    p.add_argument("--license", default="other", help="licence id for the card (default: other = per-clip)")
    p.add_argument("--detector", choices=("surf", "sift", "orb"), help="feature detector of the motion scorers")
    p.add_argument("--bg-labels", type=existing_path, metavar="CSV",
                   help="hand-made background-scene-motion labels (clip_id,label rows); they win over the score")
    p.add_argument("--jobs", type=positive_int, default=1, metavar="N",
                   help="worker processes for rendering, scoring and encoding (default 1; same files with any N)")
    p.add_argument("--engine", choices=("local", "ray"), default="local",
                   help="where rendering, scoring, masks and encoding run: local processes (default) or Ray tasks "
                   "(the `ray` extra; same files)")
    p.add_argument("--ray-address", metavar="ADDR",
                   help="Ray cluster to join with --engine ray (default: RAY_ADDRESS, else a new local Ray)")
    p.add_argument("--decoder", choices=("auto", "decord", "pyav"), default="auto",
                   help="video decoder for curation, as in `devil curate` (default auto: PyAV, whose streaming "
                   "memory stays flat; decord grows with the source length)")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    add_wait_lock_argument(p)
    p.set_defaults(func=run)


def options_from_args(args: argparse.Namespace) -> BuildOptions:
    """The :class:`~devil_dataset.builder.build_options.BuildOptions` of ``devil build``'s flags (hand labels read
    from ``--bg-labels``; ``--engine``, ``--jobs`` and ``--ray-address`` make the one engine)."""
    from ..builder.build_options import BuildOptions
    from ..builder.labels import read_bg_labels_csv
    from ..core.engines import get_engine

    bg: dict[str, str] = {}
    if args.bg_labels is not None:
        bg = read_bg_labels_csv(args.bg_labels)
    return BuildOptions(sample=args.sample, seed=args.seed, size=args.resolution,
                        min_resolution=args.min_resolution, frame_format=args.frame_format,
                        license=args.license, detector=args.detector, parity=args.parity, scene_mode=args.scene_mode,
                        rank_mode=args.rank_mode, bg_labels=bg, progress=not args.quiet,
                        engine=get_engine(args.engine, jobs=args.jobs, address=args.ray_address),
                        curate_options={"backend": args.decoder})


def run(args: argparse.Namespace) -> int:
    from ..builder.build import build
    from ..builder.release_rebuild import rebuild_release, report_summary

    if sum((bool(args.sources), args.sample, args.release_sources is not None)) != 1:
        raise DevilError("give SOURCE files/folders, --sample or --release-sources DIR (exactly one of them)")
    options = options_from_args(args)
    with output_folder_lock(args, args.out):
        if args.release_sources is not None:
            result, report = rebuild_release(args.release_sources, args.out, options)
            print(result.summary())
            print(report_summary(report))
            return 0

        result = build([Path(s) for s in args.sources], args.out, options)
    print(result.summary())
    return 0
