"""``devil example``: write a small example in the release's directory layout, for trying directory mode.

The release's devkit sample (one video of 21 frames at 432x240, its masks and a method's predictions) is not
part of a pip install; this command writes one of the same shape, generated here: a rendered landscape scene with
a known camera pan, the release's mask 0 of a preset cover-cropped to the frame, and a baseline's predictions.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from ..builder.samples import render_scene, scene
from ..core.atomic import atomic_directory
from ..core.mask_store import stored_mask
from ..core.release_format import write_frame_pngs, write_mask_pngs
from ..inpaint import get_inpainter
from ._args import EXAMPLE_FORMATTER, add_wait_lock_argument, output_directory, output_folder_lock

EPILOG = """\
example:
  devil example --out release-example/
  devil evaluate --gt-dir release-example/sample-inpainting-inputs \\
                 --pred-dir release-example/sample-inpainting-outputs --json

Writes OUT/sample-inpainting-inputs (frame_%04d_gt.png + frame_%04d_mask.png, mask 1 = known) and
OUT/sample-inpainting-outputs (frame_%04d_pred.png), shaped like the release devkit's sample (21 frames, 432x240).
"""

# The release devkit's sample video: 21 frames of 432x240 (its sample-inpainting-inputs folder).
DEVKIT_NUM_FRAMES = 21
DEVKIT_SIZE = (432, 240)
EXAMPLE_SCENE = "pan_static"  # builder/samples.py: a textured landscape under a known camera pan
EXAMPLE_PRESET = "fgs-h_fgm-l_fgd-l"  # a large, slowly moving hole (SPEC section 5)
INPUTS_DIR, OUTPUTS_DIR = "sample-inpainting-inputs", "sample-inpainting-outputs"


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


def write_release_example(out_dir: str | Path, method: str = "telea") -> tuple[Path, Path]:
    """Write the example into ``out_dir``; returns (inputs folder, outputs folder). Each folder appears
    atomically; an existing one is replaced."""

    inpainter = get_inpainter(method)
    out = Path(out_dir)
    frames = render_scene(scene(EXAMPLE_SCENE), size=DEVKIT_SIZE, num_frames=DEVKIT_NUM_FRAMES)
    hole = stored_mask(EXAMPLE_PRESET, 0, size=DEVKIT_SIZE, num_frames=DEVKIT_NUM_FRAMES)
    pred = inpainter(frames, hole)
    with atomic_directory(out / INPUTS_DIR, overwrite=True) as tmp:
        write_frame_pngs(frames, tmp, "gt")
        write_mask_pngs(hole, tmp)
    with atomic_directory(out / OUTPUTS_DIR, overwrite=True) as tmp:
        write_frame_pngs(pred, tmp, "pred")
    return out / INPUTS_DIR, out / OUTPUTS_DIR


def run(args: argparse.Namespace) -> int:
    with output_folder_lock(args, args.out):
        inputs, outputs = write_release_example(args.out, args.method)
    print(f"wrote {inputs} (ground truth and masks) and {outputs} ({args.method} predictions); score them with\n"
          f"  devil evaluate --gt-dir {inputs} --pred-dir {outputs} --json")
    return 0
