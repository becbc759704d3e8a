"""``devil inpaint``: run a baseline or an external method over a slice and write the release's prediction layout."""
from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from ..core.errors import DevilError, UnknownNameError, unknown_name
from ._args import (
    EXAMPLE_FORMATTER,
    add_external_method_arguments,
    add_wait_lock_argument,
    dataset_name,
    existing_path,
    output_directory,
    output_folder_lock,
    positive_int,
)
from ._main import main as devil_main

if TYPE_CHECKING:  # pragma: no cover
    from ..inpaint.method_spec import MethodSpec

EPILOG = """\
examples:
  # a baseline on one slice of a built dataset (folder or Hub repo); re-running resumes
  devil inpaint --method flow-propagation --dataset devil-build/ --config fg_displacement_high --out preds/flow/

  # an external method run once per clip on the release's file layout
  devil inpaint --method mine --dataset devil-build/ --config all --out preds/mine/ --size-divisor 8 \\
      --command "python my_method.py --in {input_dir} --out {output_dir}"

  # a Python function fn(frames uint8 [T,H,W,3], hole bool [T,H,W]) -> uint8 [T,H,W,3]
  devil inpaint --method mine --dataset devil-build/ --config all --out preds/mine/ --callable my_pkg.model:inpaint

  # folders in the release's input layout (frame_%04d_gt.png + frame_%04d_mask.png), e.g. the devkit sample
  devil inpaint --method telea --inputs sample-inpainting-inputs/ --out preds/telea/

baselines: telea, navier-stokes (per frame), aligned-copy, flow-propagation (temporal). See docs/inpainting.md.
Output: PRED_DIR/<clip id>/frame_%04d_pred.png. The command template's placeholders: {input_dir} {output_dir}
{clip_id} {num_frames} {width} {height}; the method must write frame_%04d_pred.png into {output_dir}.
Mask conventions (two, easy to mix up):
  {input_dir}/frame_%04d_mask.png (--command, --inputs, the release's PNGs): WHITE = KNOWN, black = hole;
  the dataset's `hole` column and --callable's hole argument: True/white = HOLE.
A prediction that changes many known pixels gets a warning ("were the masks read inverted? your method wrote outside
the hole: ...").
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "inpaint",
        help="run a baseline or external inpainting method over a slice",
        description="Inpaint every clip of a slice (or of folders in the release's input layout) with a baseline "
        "or an external method and write PRED_DIR/<clip id>/frame_%04d_pred.png. Each clip folder is written "
        "atomically; complete clips are skipped, so an interrupted run resumes. Use one PRED_DIR per method and "
        "slice (clip ids repeat across slices with other masks; a manifest in PRED_DIR refuses a mixed run).",
        epilog=EPILOG,
        formatter_class=EXAMPLE_FORMATTER,
    )
    p.add_argument("--method", required=True, metavar="NAME",
                   help="baseline name (telea, navier-stokes, aligned-copy, flow-propagation), or a label for the "
                   "external method given with --command/--callable")
    src = p.add_argument_group("input (one of)")
    src.add_argument("--dataset", type=dataset_name, metavar="DIR_OR_REPO",
                     help="built DEVIL dataset folder or Hub repo id (with --config)")
    src.add_argument("--config", metavar="SLICE", help="slice name, e.g. fg_size_high, or all")
    src.add_argument("--split", default="test", help="dataset split (default test)")
    src.add_argument("--inputs", type=existing_path, metavar="DIR",
                     help="a clip folder, or a folder of clip folders, in the release's input layout")
    p.add_argument("--out", required=True, type=output_directory, metavar="PRED_DIR", help="prediction folder")
    ext = p.add_mutually_exclusive_group()
    ext.add_argument("--command", metavar="TEMPLATE", help="external method: command run once per clip")
    ext.add_argument("--callable", metavar="MODULE:FN", help="external method: module:function or file.py:function")
    add_external_method_arguments(p)
    p.add_argument("--limit", type=positive_int, metavar="N", help="only the first N clips of the slice")
    add_wait_lock_argument(p)
    p.set_defaults(func=run)


def _method_spec(args: argparse.Namespace) -> MethodSpec:
    from ..inpaint.method_spec import MethodSpec
    from ..inpaint.registry import INPAINTERS

    if args.command is None and args.callable is None and args.method not in INPAINTERS:
        not_baseline = unknown_name("method", args.method, INPAINTERS, prefix="--method: ")
        raise UnknownNameError(f"{not_baseline}; an external method needs --command or --callable")
    return MethodSpec(baseline=args.method if args.command is None and args.callable is None else None,
                      command=args.command, callable=args.callable, hole_pixels=args.hole_pixels,
                      size_divisor=args.size_divisor, timeout=args.timeout)


def run(args: argparse.Namespace) -> int:
    from ..data import iter_slice
    from ..inpaint.run import iter_release_inputs, run_inpainter

    if (args.dataset is None) == (args.inputs is None):
        raise DevilError("give either --dataset DIR_OR_REPO with --config SLICE, or --inputs DIR")
    if args.dataset is not None and args.config is None:
        raise DevilError("--dataset needs --config SLICE (e.g. fg_size_high, or all)")
    spec = _method_spec(args)
    inpainter = spec.inpainter()
    if args.dataset is not None:

        rows = iter_slice(args.dataset, args.config, args.split, columns=["clip_id", "frames", "hole"])
        label = f"{args.method} {args.config}"
        source = {"dataset": str(args.dataset), "config": args.config, "split": args.split}
    else:
        rows = iter_release_inputs(args.inputs)
        label = args.method
        source = {"inputs": str(args.inputs)}
    run_info = {"method": args.method, **source, "size_divisor": args.size_divisor}
    if args.command is not None or args.callable is not None:
        run_info.update(command=args.command, callable=args.callable, hole_pixels=args.hole_pixels)
    # one writer per prediction folder; a failed run that created the folder and wrote nothing removes it again
    with output_folder_lock(args, args.out):
        summary = run_inpainter(inpainter, rows, args.out, limit=args.limit, description=label, run_info=run_info,
                                identity=spec.identity())
    if summary.stale:
        print(f"{args.method}: the method's code changed since {len(summary.stale)} clip(s) were made: redone",
              file=sys.stderr)
    print(f"{args.method}: wrote {len(summary.written)} clip(s), skipped {len(summary.skipped)} already complete; "
          f"predictions in {args.out}")
    return 0


def main() -> None:  # pragma: no cover

    sys.exit(devil_main(["inpaint", *sys.argv[1:]]))
