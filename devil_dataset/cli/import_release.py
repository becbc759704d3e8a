"""``devil import-release``: convert the original DEVIL release's split archives into the dataset layout."""
from __future__ import annotations

import argparse

from ._args import EXAMPLE_FORMATTER, existing_path, output_directory

EPILOG = """\
examples:
  # the release's split tars (plain tar of <video>/frame_%04d_gt.png or frame_%04d_mask.png)
  devil import-release flickr-all.tar flickr-cm-h.tar fvi-all.tar fvi-fgd-h.tar --out devil-release
  python -c "import datasets; print(datasets.load_dataset('devil-release', 'camera_motion_high', split='test'))"

A config is written when both its archives are given: flickr-<videos> and fvi-<masks> (e.g. camera_motion_high =
flickr-cm-h + fvi-all, fg_displacement_high = flickr-all + fvi-fgd-h).
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "import-release",
        help="convert the original release's flickr-*/fvi-* archives into the dataset layout",
        description="Read the release's split archives and write every config whose video and mask archives are "
        "both given, pairing sorted videos with sorted masks as the release did; same layout, card and manifest "
        "as `devil build`.",
        epilog=EPILOG,
        formatter_class=EXAMPLE_FORMATTER,
    )
    p.add_argument("archives", nargs="+", type=existing_path, metavar="TAR", help="flickr-*.tar and fvi-*.tar files")
    p.add_argument("--out", required=True, type=output_directory, metavar="DIR", help="dataset folder to write")
    p.add_argument("--frame-format", choices=("png", "jpeg"), default="png",
                   help="frame storage: png (lossless, keeps the release's pixels; default) or jpeg (q95)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..builder.release_import import import_release

    result = import_release(args.archives, args.out, frame_format=args.frame_format, progress=not args.quiet)
    print(result.summary())
    return 0
