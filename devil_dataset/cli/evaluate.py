"""``devil evaluate``: score inpainting predictions with the DEVIL metrics in one run (SPEC section 7)."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from ..core.errors import DevilError
from ._args import EXAMPLE_FORMATTER, add_parity_argument, existing_path, positive_int

EPILOG = """\
examples:
  # a slice of a built dataset (folder or Hub repo) against per-clip prediction folders or videos
  devil evaluate --dataset devil-build/ --config fg_displacement_high --predictions preds/cpnet/ --out cpnet_fgdh.json

  # several methods in one pass over the ground truth: --out is a folder, one <method>.json per method
  devil evaluate --dataset devil-build/ --config fg_displacement_high --predictions preds/a preds/b preds/c \
--out results/

  # the corrected protocol instead of the release's (SSIM data range 1, PVCS own-frame padding)
  devil evaluate --dataset devil-build/ --config fg_displacement_high --predictions preds/cpnet/ --parity corrected

  # on a Ray cluster (pip install "devil-dataset[ray]"; dataset and predictions on a path every node sees)
  devil evaluate --dataset /shared/devil/ --config fg_displacement_high --predictions /shared/preds/a --engine ray

  # directory mode (the release's layout); the devkit sample holds one video's frames directly
  devil evaluate --gt-dir sample-inpainting-inputs --pred-dir sample-inpainting-outputs --metrics psnr ssim pcons --json

Metrics (default: every DEVIL metric that can run here; missing weights skip a metric with a note on stderr):
  psnr ssim lpips pvcs fid vfid warp_error pcons  (+ self_consistency ff_alpha ff_beta unchanged_region)
"""


def _metric_list(values: list[str] | None) -> list[str] | None:
    if not values:
        return None
    out = [v.strip() for item in values for v in item.split(",") if v.strip()]
    return out or None


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "evaluate",
        help="score inpainting predictions with every DEVIL metric in one pass",
        description="Score a method's predictions on a DEVIL slice (dataset mode) or on folders in the release's "
        "layout (directory mode). Metrics use the composite C = M*GT + (1-M)*Pred. Every clip is validated "
        "(present, same frame count and size) before anything is computed.",
        epilog=EPILOG,
        formatter_class=EXAMPLE_FORMATTER,
    )
    d = p.add_argument_group("dataset mode")
    d.add_argument("--dataset", metavar="DIR_OR_REPO", help="built DEVIL dataset folder or Hub repo id")
    d.add_argument("--config", metavar="SLICE", help="slice name, e.g. fg_displacement_high")
    d.add_argument("--predictions", type=existing_path, nargs="+", metavar="PRED_DIR",
                   help="<clip id>/frame_%%04d_pred.png folders or <clip id>.mp4 files; several folders score "
                   "several methods in one pass (the method is the folder name)")
    d.add_argument("--jobs", type=positive_int, default=1, help="processes scoring parts of the slice (default 1)")
    d.add_argument("--engine", choices=("local", "ray"), default="local",
                   help="local processes (default) or Ray tasks (the `ray` extra): --jobs parts, default one per "
                   "cluster CPU (per GPU on a GPU cluster)")
    d.add_argument("--ray-address", metavar="ADDR", help="Ray cluster to join with --engine ray (default: "
                   "RAY_ADDRESS, else a new local Ray)")
    r = p.add_argument_group("directory mode (release layout)")
    r.add_argument("--gt-dir", type=existing_path, metavar="GT",
                   help="one folder per video with frame_%%04d_gt.png and frame_%%04d_mask.png (1 = known)")
    r.add_argument("--pred-dir", type=existing_path, metavar="PRED", help="matching frame_%%04d_pred.png folders")
    p.add_argument("--metrics", nargs="+", metavar="NAME", help="metrics to compute (space or comma separated)")
    p.add_argument("--out", type=Path, metavar="FILE", help="write the results JSON here")
    p.add_argument("--json", action="store_true", help="print the results JSON on stdout")
    p.add_argument("--method-name", help="method name stored in the results (default: predictions folder name)")
    p.add_argument("--slice", dest="slice_name", help="slice name stored in directory-mode results")
    p.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"), help="where networks run")
    p.add_argument("--batch-size", type=positive_int, default=8, help="frames/clips per network batch (default 8)")
    add_parity_argument(p, "--ssim-mode release and --pvcs-mode release, or --ssim-mode standard and --pvcs-mode "
                        "corrected (the results' provenance options)")
    p.add_argument("--ssim-mode", default=None, choices=("release", "standard"),
                   help="SSIM data range: release = 2 (parity), standard = 1 (default: the one --parity sets)")
    p.add_argument("--pvcs-mode", default=None, choices=("release", "corrected"),
                   help="PVCS window padding for videos under 10 frames: release = composite padded with the GT's "
                        "last frame (parity), corrected = each video's own last frame (default: from --parity)")
    p.add_argument("--flow", default="auto", choices=("auto", "raft", "dis"),
                   help="optical flow for warp error: RAFT when its weights are cached, else OpenCV DIS")
    sc = p.add_argument_group("re-inpainting self-consistency (--metrics self_consistency)")
    sc.add_argument("--second-inpainter", default="telea", metavar="NAME",
                    help="baseline that re-inpaints the first result "
                         "(telea, navier-stokes, aligned-copy, flow-propagation)")
    sc.add_argument("--self-consistency-submetric", default="lpips", choices=("lpips", "psnr", "ssim"),
                    help="distance between first and second inpainting (default lpips; needs AlexNet weights)")
    sc.add_argument("--self-consistency-k", type=positive_int, default=10, metavar="K",
                    help="number of re-inpaintings averaged (default 10)")
    p.add_argument("--seed", type=int, default=0, help="seed of the randomised metrics (default 0)")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    p.set_defaults(func=run)


def _print_summary(doc: dict) -> None:
    from ..eval.registry import METRICS

    fmt = {k: f for e in METRICS.values() for k, f in zip(e.keys, e.formats)}
    print(f"{doc['method']}  slice={doc.get('slice') or '-'}  videos={doc['num_videos']}")
    for key, value in doc["summary"].items():
        text = "n/a" if value != value else format(value, fmt.get(key, ".4f"))
        print(f"  {key:<18} {text}")


def check_output_file(path: Path) -> None:
    """Refuse an ``--out`` that could not be written, before anything is scored (results would be lost)."""
    if path.is_dir():
        raise DevilError(f"{path}: is a directory; --out takes a file name")
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise DevilError(f"--out {path}: {parent} exists and is not a directory")
            if not os.access(parent, os.W_OK):
                raise DevilError(f"--out {path}: {parent} is not writable")
            break


def run(args: argparse.Namespace) -> int:
    from ..eval.protocol import EvalOptions

    dataset_mode = any(v is not None for v in (args.dataset, args.config, args.predictions))
    dir_mode = any(v is not None for v in (args.gt_dir, args.pred_dir))
    if dataset_mode == dir_mode:
        raise DevilError("give either --dataset/--config/--predictions or --gt-dir/--pred-dir")
    if dataset_mode and (args.dataset is None or args.config is None or args.predictions is None):
        raise DevilError("dataset mode needs --dataset, --config and --predictions")
    if dir_mode and (args.gt_dir is None or args.pred_dir is None):
        raise DevilError("directory mode needs --gt-dir and --pred-dir")
    if dir_mode and (args.engine != "local" or args.ray_address is not None):
        raise DevilError("--engine/--ray-address work in dataset mode (--dataset/--config/--predictions)")
    several = dataset_mode and len(args.predictions) > 1
    if several and args.method_name is not None:
        raise DevilError("--method-name names one method; with several --predictions the folder names are used")
    if several and args.out is not None and args.out.exists() and not args.out.is_dir():
        raise DevilError(f"{args.out}: is a file; with several --predictions --out takes a folder")
    if args.out is not None:  # refused before anything is scored
        check_output_file(args.out / "results.json" if several else args.out)
    from ..inpaint import INPAINTERS

    if args.second_inpainter not in INPAINTERS:
        raise DevilError(f"unknown --second-inpainter {args.second_inpainter!r}; "
                         f"valid: {', '.join(sorted(INPAINTERS))}")
    options = EvalOptions(device=args.device, batch_size=args.batch_size, parity=args.parity,
                          ssim_mode=args.ssim_mode, pvcs_mode=args.pvcs_mode, flow=args.flow,
                          seed=args.seed, second_inpainter=args.second_inpainter,
                          self_consistency_submetric=args.self_consistency_submetric,
                          self_consistency_k=args.self_consistency_k)
    metrics = _metric_list(args.metrics)
    from ..eval.evaluate import evaluate_dataset, evaluate_directory, evaluate_slice
    from ..eval.results import dumps, write_results

    if dataset_mode:
        from ..core.engines import get_engine

        engine = get_engine(args.engine, jobs=args.jobs, address=args.ray_address)
        if several:
            docs = evaluate_slice(args.dataset, args.config, args.predictions, metrics, options,
                                  progress=not args.no_progress, engine=engine)
        else:
            doc = evaluate_dataset(args.dataset, args.config, args.predictions[0], metrics, options,
                                   method=args.method_name, progress=not args.no_progress, engine=engine)
            docs = {doc["method"]: doc}
    else:
        doc = evaluate_directory(args.gt_dir, args.pred_dir, metrics, options, method=args.method_name,
                                 slice_name=args.slice_name, progress=not args.no_progress)
        docs = {doc["method"]: doc}
    for method, doc in docs.items():
        if args.out is not None:
            path = args.out / f"{method}.json" if several else args.out
            write_results(path, doc)
            print(f"wrote {path}", file=sys.stderr)
        if args.json:
            sys.stdout.write(dumps(doc))
        else:
            _print_summary(doc)
    return 0
