"""``devil example``: write a small example in the release's directory layout, for trying directory mode.

The release's devkit sample (one video of 21 frames at 432x240, its masks and a method's predictions) is not
part of a pip install; this command writes one of the same shape (:mod:`devil_dataset.builder.release_example`):
a rendered landscape scene with a known camera pan, the release's mask 0 of a preset cover-cropped to the frame,
and a baseline's predictions.
"""
from __future__ import annotations

import argparse

from ._args import EXAMPLE_FORMATTER, add_wait_lock_argument, output_directory, output_folder_lock

EPILOG = """\
example:
  devil example --out release-example/
  devil evaluate --gt-dir release-example/sample-inpainting-inputs \\
                 --pred-dir release-example/sample-inpainting-outputs --json

Writes OUT/sample-inpainting-inputs (frame_%04d_gt.png + frame_%04d_mask.png, mask 1 = known) and
OUT/sample-inpainting-outputs (frame_%04d_pred.png), shaped like the release devkit's sample (21 frames, 432x240).
"""

def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "example",
        help="write a devkit-sized example in the release's directory layout (for `devil evaluate --gt-dir`)",
        description="Write a small example in the release's directory layout: ground-truth frames and masks "
        "(sample-inpainting-inputs) and a baseline's predictions (sample-inpainting-outputs), shaped like the "
        "release devkit's sample. Nothing is downloaded.",
        epilog=EPILOG,
        formatter_class=EXAMPLE_FORMATTER,
    )
    p.add_argument("--out", required=True, type=output_directory, metavar="DIR", help="output folder")
    p.add_argument("--method", default="telea", help="baseline writing the predictions (default telea)")
    add_wait_lock_argument(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..builder.release_example import write_release_example
    from ..inpaint.registry import get_inpainter

    with output_folder_lock(args, args.out):
        inputs, outputs = write_release_example(args.out, get_inpainter(args.method))
    print(f"wrote {inputs} (ground truth and masks) and {outputs} ({args.method} predictions); score them with\n"
          f"  devil evaluate --gt-dir {inputs} --pred-dir {outputs} --json")
    return 0
