"""``devil demo``: the whole benchmark on the built-in sample (build, baselines, evaluation, Table 1, findings)."""
from __future__ import annotations

import argparse

from ._args import (
    EXAMPLE_FORMATTER,
    add_ci_argument,
    add_set_level_ci_argument,
    add_wait_lock_argument,
    existing_path,
    output_directory,
    output_folder_lock,
    positive_int,
)

EPILOG = """\
examples:
  # everything: sample dataset, three baselines on the ten slices, pixel metrics, Table 1, figures, findings
  devil demo --out demo-out

  # a faster look: two baselines, two slices, PSNR and SSIM only
  devil demo --out demo-quick --methods telea aligned-copy --slices fg_size_low fg_size_high --metrics psnr ssim

Outputs in DIR: dataset/ (the sample), predictions/<method>/<slice>/<clip id>/frame_%04d_pred.png,
results/<method>/<slice>.json, table1.md/.tsv, relative_improvement.md/.tsv, *.png figures, findings.md/.json,
timings.json. Re-running the command resumes: finished predictions and per-video scores are reused; a predictions
folder made by another run (e.g. another --dataset) is refused, not overwritten.
Network metrics (LPIPS, PVCS, FID, VFID) run when their weights are cached (see `devil weights`), else they are
skipped with the reason printed. See docs/demo.md.
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "demo",
        help="run the whole benchmark on the built-in sample and print Table 1 and the findings",
        description="Build the sample dataset (nothing downloaded), run the baseline inpainters on the ten DEVIL "
        "slices, evaluate them (pixel metrics always; network metrics where their weights are present), write "
        "the Table 1 report and figures, and check the paper's slice findings on the results.",
        epilog=EPILOG,
        formatter_class=EXAMPLE_FORMATTER,
    )
    p.add_argument("--out", required=True, type=output_directory, metavar="DIR", help="output folder (resumable)")
    p.add_argument("--methods", nargs="+", metavar="NAME",
                   help="baselines to run (default: telea aligned-copy flow-propagation; also navier-stokes)")
    p.add_argument("--slices", nargs="+", metavar="SLICE", help="slices to run (default: the ten DEVIL slices)")
    p.add_argument("--metrics", nargs="+", metavar="NAME",
                   help="metrics (default: every DEVIL metric that can run here: psnr ssim pcons warp_error, "
                   "plus lpips pvcs fid vfid when their weights are cached)")
    p.add_argument("--dataset", type=existing_path, metavar="DIR",
                   help="use this dataset built by `devil build` instead of building the sample into DIR/dataset")
    p.add_argument("--jobs", type=positive_int, metavar="N", help="worker processes (default: min(2, CPU count))")
    p.add_argument("--quick", action="store_true",
                   help="smoke run: only the fg_size slices and PSNR/SSIM (unless --slices/--metrics are given)")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    add_ci_argument(p)
    add_set_level_ci_argument(p)
    add_wait_lock_argument(p)
    p.set_defaults(func=run)


def _split(values: list[str] | None) -> list[str] | None:
    if not values:
        return None
    return [v.strip() for item in values for v in item.split(",") if v.strip()] or None


def run(args: argparse.Namespace) -> int:
    from ..demo import DEFAULT_METHODS, run_demo

    with output_folder_lock(args, args.out):  # one demo per output folder
        result = run_demo(args.out, methods=_split(args.methods) or DEFAULT_METHODS, slices=_split(args.slices),
                          metrics=_split(args.metrics), dataset=args.dataset, jobs=args.jobs, quick=args.quick,
                          progress=not args.quiet, ci=args.ci, set_level_ci=args.set_level_ci)
    return 0 if result.results_files else 1
