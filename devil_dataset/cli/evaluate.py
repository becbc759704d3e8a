"""``devil evaluate``: score inpainting predictions with the DEVIL metrics in one run (the paper's metrics)."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.errors import DevilError, unknown_name
from ..core.networks import DEFAULT_DINO_MODEL, check_precision
from ._args import (
    EXAMPLE_FORMATTER,
    add_parity_argument,
    add_set_level_ci_argument,
    add_wait_lock_argument,
    dataset_name,
    existing_path,
    output_folder_lock,
    positive_int,
)
from ._names import METHOD_NAME_RE, PROPAINTER_METRICS, PROTOCOLS, PROVE_METRICS

if TYPE_CHECKING:  # pragma: no cover
    from ..eval.metrics.metric import EvalOptions
    from ..eval.protocols.declaration import EvaluationProtocol

EPILOG = """\
examples:
  # a slice of a built dataset (folder or Hub repo) against per-clip prediction folders or videos
  devil evaluate --dataset devil-build/ --config fg_displacement_high --predictions preds/cpnet/ --out cpnet_fgdh.json

  # several methods in one pass over the ground truth: --out is a folder, one <method>.json per method
  devil evaluate --dataset devil-build/ --config fg_displacement_high --predictions preds/a preds/b preds/c \
--out results/

  # the corrected protocol instead of the release's (SSIM data range 1, PVCS own-frame padding)
  devil evaluate --dataset devil-build/ --config fg_displacement_high --predictions preds/cpnet/ --parity corrected

  # the ground truth's flows and features cached for the next method (default folder: ~/.cache/devil-dataset/gt)
  devil evaluate --dataset devil-build/ --config fg_displacement_high --predictions preds/b --gt-cache /data/gt-cache

  # on a Ray cluster (pip install "devil-dataset[ray]"; dataset and predictions on a path every node sees)
  devil evaluate --dataset /shared/devil/ --config fg_displacement_high --predictions /shared/preds/a --engine ray

  # directory mode (the release's layout); the devkit sample holds one video's frames directly
  devil evaluate --gt-dir sample-inpainting-inputs --pred-dir sample-inpainting-outputs --metrics psnr ssim pcons --json

  # the ProPainter / E2FGVI table on DAVIS (GT/JPEGImages/<video>/*.jpg, MASKS/<video>/00000.png, PRED/<video>/*.png)
  devil evaluate --protocol propainter --gt-dir GT --mask-dir MASKS --pred-dir PRED --metrics psnr ssim vfid --json

  # object removal without ground truth: PROVE's RC-S (higher better) and RC-T (lower better); three folders of
  # <name>.mp4 (or <name>/ frame folders) matched by name; DINOv2 from the HF cache or a save_pretrained folder
  devil evaluate --protocol prove --input-dir IN --pred-dir RESULT --mask-dir MASKS --metrics rc_s rc_t \
--dino-model facebook/dinov2-giant --json

  # the same metrics on a DEVIL slice, beside the reference metrics (the prediction is the removal result)
  devil evaluate --dataset devil-build/ --config fg_displacement_high --predictions preds/a --metrics psnr rc_s rc_t

Metrics (default: every DEVIL metric that can run here; missing weights skip a metric with a note on stderr):
  psnr ssim lpips pvcs fid vfid warp_error pcons  (+ self_consistency ff_alpha ff_beta unchanged_region rc_s rc_t)
"""


def _metric_list(values: list[str] | None) -> list[str] | None:
    if not values:
        return None
    out = [v.strip() for item in values for v in item.split(",") if v.strip()]
    return out or None


def _positive_gib(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a size in GiB above 0")
    return value


def named_predictions(text: str) -> tuple[str | None, Path]:
    """``NAME=PATH`` or ``PATH`` (an existing path; a path containing ``=`` is taken whole when it exists).

    >>> named_predictions("mine=.")
    ('mine', PosixPath('.'))
    """

    name, sep, rest = text.partition("=")
    if sep and not Path(text).exists() and METHOD_NAME_RE.match(name):
        return name, existing_path(rest)
    return None, existing_path(text)


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
    d.add_argument("--dataset", type=dataset_name, metavar="DIR_OR_REPO",
                   help="built DEVIL dataset folder or Hub repo id")
    d.add_argument("--config", metavar="SLICE", help="slice name, e.g. fg_displacement_high")
    d.add_argument("--predictions", type=named_predictions, nargs="+", metavar="[NAME=]PRED_DIR",
                   help="<clip id>/frame_%%04d_pred.png folders or <clip id>.mp4 files; several folders score "
                   "several methods in one pass. The method is NAME when given, else the one the folder's "
                   ".devil-inpaint.json records (devil inpaint/benchmark write it), else the folder name")
    d.add_argument("--jobs", type=positive_int, default=1,
                   help="processes scoring parts of the slice, or the clips of --gt-dir (default 1)")
    d.add_argument("--engine", choices=("local", "ray"), default="local",
                   help="local processes (default) or Ray tasks (the `ray` extra): --jobs parts, default one per "
                   "cluster CPU (per GPU on a GPU cluster); in directory mode one task per clip")
    d.add_argument("--ray-address", metavar="ADDR", help="Ray cluster to join with --engine ray (default: "
                   "RAY_ADDRESS, else a new local Ray)")
    d.add_argument("--gt-cache", type=Path, metavar="DIR",
                   help="ground-truth cache: the warp error's flows and FID's features per clip, computed once and "
                   "reused by every later method (default: $DEVIL_GT_CACHE, else ~/.cache/devil-dataset/gt)")
    d.add_argument("--no-gt-cache", action="store_true", help="neither read nor write the ground-truth cache")
    d.add_argument("--gt-cache-max-gib", type=_positive_gib, default=None, metavar="GIB",
                   help="size cap of the ground-truth cache; least recently used entries go first (default 128; "
                   "one 150-video slice of 90-frame clips takes about 79)")
    r = p.add_argument_group("directory mode (release layout)")
    r.add_argument("--gt-dir", type=existing_path, metavar="GT",
                   help="one folder per video with frame_%%04d_gt.png and frame_%%04d_mask.png (1 = known)")
    r.add_argument("--pred-dir", type=existing_path, metavar="PRED", help="matching frame_%%04d_pred.png folders")
    _add_protocol_options(p)
    p.add_argument("--metrics", nargs="+", metavar="NAME", help="metrics to compute (space or comma separated)")
    p.add_argument("--out", type=Path, metavar="FILE", help="write the results JSON here")
    p.add_argument("--json", action="store_true", help="print the results JSON on stdout")
    p.add_argument("--method-name", help="method name stored in the results (default: predictions folder name)")
    p.add_argument("--slice", dest="slice_name", help="slice name stored in directory-mode results")
    p.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"), help="where networks run")
    p.add_argument("--pixel-backend", default="auto", choices=("auto", "numpy", "torch"),
                   help="where PSNR, SSIM, PCons and the warp error's occlusion compute: numpy (the reference, CPU), "
                        "torch (float64/float32 as the reference, on --device; equal to numpy within 1e-9) or auto "
                        "(default: torch when --device is a GPU, else numpy)")
    p.add_argument("--batch-size", type=positive_int, default=8,
                   help="frames/clips per network batch on a GPU and per pixel-metric batch (default 8); on the CPU "
                   "the networks take one sample per pass whatever this says, so values never depend on it")
    add_parity_argument(p, "--ssim-mode release and --pvcs-mode release, or --ssim-mode standard and --pvcs-mode "
                        "corrected (the results' provenance options)")
    p.add_argument("--ssim-mode", default=None, choices=("release", "standard"),
                   help="SSIM data range: release = 2 (parity), standard = 1 (default: the one --parity sets)")
    p.add_argument("--pvcs-mode", default=None, choices=("release", "corrected"),
                   help="PVCS window padding for videos under 10 frames: release = composite padded with the GT's "
                        "last frame (parity), corrected = each video's own last frame (default: from --parity)")
    p.add_argument("--flow", default="auto", choices=("auto", "raft", "dis"),
                   help="optical flow for warp error: RAFT when its weights are cached, else OpenCV DIS")
    p.add_argument("--precision", default="float32", metavar="{float32,tf32,bf16}",
                   help="the networks' arithmetic (LPIPS, FID, PVCS, VFID, RAFT): float32 (default) is the reference; "
                   "use it for published numbers. tf32 (TensorFloat-32 on an Ampere or later GPU; on a CPU exactly "
                   "float32) and bf16 (bfloat16 autocast; on a CPU without native bf16 4-70x slower) are meant for "
                   "GPUs and cost accuracy: bf16 measured (CPU, random weights) features within 0.7%% of their scale "
                   "(RAFT flow 1.1%%, 0.03 px EPE), LPIPS +0.24%%, PVCS +1.0%%, VFID (clips) +0.8%%, FID +12%% on "
                   "two close 8-frame sets; benchmarks/networks.py --precision measures both modes on your device")
    sc = p.add_argument_group("re-inpainting self-consistency (--metrics self_consistency)")
    sc.add_argument("--second-inpainter", default="telea", metavar="NAME",
                    help="baseline that re-inpaints the first result "
                         "(telea, navier-stokes, aligned-copy, flow-propagation)")
    sc.add_argument("--self-consistency-submetric", default="lpips", choices=("lpips", "psnr", "ssim"),
                    help="distance between first and second inpainting (default lpips; needs AlexNet weights)")
    sc.add_argument("--self-consistency-k", type=positive_int, default=10, metavar="K",
                    help="number of re-inpaintings averaged (default 10)")
    p.add_argument("--seed", type=int, default=0, help="seed of the randomised metrics (default 0)")
    add_set_level_ci_argument(p)
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    add_wait_lock_argument(p)
    p.set_defaults(func=run)


def _add_protocol_options(p: argparse.ArgumentParser) -> None:
    """``--protocol`` and the options of the protocols that read folders of their own (ProPainter's, PROVE's)."""
    pp = p.add_argument_group("--protocol propainter (DAVIS / YouTube-VOS layout; docs/propainter-protocol.md)")
    pp.add_argument("--protocol", default="devil", metavar="NAME",
                    help="the whole evaluation protocol (" + ", ".join(PROTOCOLS) + ", or one added with "
                    "register_protocol): devil (default), prove (RC-S / RC-T of object removals, "
                    "see below) or propainter (the ProPainter / E2FGVI "
                    "table: --gt-dir GT with JPEGImages/<video>/*.jpg, --mask-dir MASKS with <video>/00000.png ..., "
                    "--pred-dir PRED with <video>/*.png at 432x240; metrics "
                    + " ".join(PROPAINTER_METRICS) +
                    ", default psnr ssim vfid (a default one whose weights are missing is skipped with a note, "
                    "checked before any work); --parity release = their BatchNorm in training mode for VFID, "
                    "corrected = eval mode; --jobs processes for the pixel metrics)")
    pp.add_argument("--mask-dir", type=existing_path, metavar="MASKS",
                    help="with --protocol propainter: one folder of 00000.png ... masks per video (nonzero = hole); "
                    "with --protocol prove: <name>.mp4 masks (white = removed object)")
    pv = p.add_argument_group("--protocol prove (object removal without ground truth; docs/removal.md)")
    pv.add_argument("--input-dir", type=existing_path, metavar="IN",
                    help="with --protocol prove: the videos with the object (<name>.mp4 or <name>/ of PNG/JPEG "
                    "frames); --pred-dir holds the method's removals and --mask-dir the masks, matched by name; "
                    "metrics " + " ".join(PROVE_METRICS)
                    + " (default: all; bg_* and masked_* against the input; "
                    "rc_s rc_t skipped with a note when DINOv2 is missing)")
    pv.add_argument("--dino-model", default=DEFAULT_DINO_MODEL, metavar="DINO",
                    help="DINOv2 of RC-S / RC-T: a folder written by transformers' save_pretrained or a Hub id read "
                    f"from the Hugging Face cache (default {DEFAULT_DINO_MODEL}, PROVE's; never downloaded here). "
                    "--parity release computes the MMDs in PROVE's float32, corrected in float64")
    pv.add_argument("--values-cache", type=Path, metavar="DIR",
                    help="with --protocol propainter or prove, or --gt-dir/--pred-dir: each video's values kept in "
                    "DIR as soon as it is scored (keyed by its files' bytes and the scoring options); run again after "
                    "an interruption, only the videos without values are scored, and the results are the same")


def _print_summary(doc: dict) -> None:
    from ..eval.report.caveats import identical_lines
    from ..eval.report.tables import fmt

    left_out = doc.get("left_out") or {}
    extra = f"  left out={len(left_out)} ({', '.join(sorted(left_out))})" if left_out else ""
    print(f"{doc['method']}  slice={doc.get('slice') or '-'}  videos={doc['num_videos']}{extra}")
    for key, value in doc["summary"].items():
        text = "n/a" if value is None or value != value else fmt(key, float(value))
        print(f"  {key:<18} {text}{interval_text(doc.get('uncertainty', {}).get(key), key)}")
    for line in clipped_lines(doc) + identical_lines([doc]):
        print(f"  {line}")


def interval_text(summary: dict | None, key: str) -> str:
    """The interval of a results document's ``uncertainty`` entry of result key ``key`` as the summary prints it, in
    the key's format ("" when there is none).

    >>> interval_text({"ci": [35.81, 37.42], "level": 0.95, "method": "bootstrap BCa, ..."}, "psnr")
    '  [35.81, 37.42] 95% bootstrap BCa'
    >>> interval_text({"ci": [0.000412, 0.000613], "level": 0.95, "method": "bootstrap BCa"}, "ewarp")
    '  [0.0004120, 0.0006130] 95% bootstrap BCa'
    >>> nan = float("nan")
    >>> interval_text({"ci": [nan, nan], "level": 0.95, "method": "x"}, "psnr"), interval_text(None, "psnr")
    ('', '')
    """
    from ..eval.report.tables import fmt

    if not summary or not summary.get("ci"):
        return ""
    lo, hi = summary["ci"]
    if lo is None or hi is None or lo != lo or hi != hi:
        return ""
    kind = str(summary.get("method", "")).split(",")[0]
    return f"  [{fmt(key, lo)}, {fmt(key, hi)}] {round(100 * summary.get('level', 0.95))}% {kind}"


def clipped_lines(doc: dict) -> list[str]:
    """One line per PSNR-type key with infinite per-video values: how many, and what the summary made of them.

    >>> print(*clipped_lines({"num_videos": 3, "summary": {"psnr": 31.5}, "clipped": {"psnr": ["a"]}}))
    psnr: 1 of 3 videos infinite (an identical frame or patch), clipped to the best finite value (the release's rule)
    >>> clipped_lines({"num_videos": 1, "summary": {"psnr": float("inf")}, "clipped": {"psnr": ["a"]}})
    ['psnr: 1 of 1 video infinite (an identical frame or patch), no finite value to clip to: reported as inf']
    """
    from ..eval.report.caveats import counted

    lines = []
    for key, ids in (doc.get("clipped") or {}).items():
        value = doc["summary"].get(key, float("nan"))
        how = ("no finite value to clip to: reported as inf" if value == float("inf")
               else "clipped to the best finite value (the release's rule)")
        lines.append(f"{key}: {len(ids)} of {counted(doc['num_videos'], 'video')} infinite (an identical frame or "
                     f"patch), {how}")
    return lines


def _gt_cache_of(args: argparse.Namespace):
    """The ground-truth cache the flags ask for (``None`` with ``--no-gt-cache``)."""
    from ..eval.scoring.gt_cache import DEFAULT_GT_CACHE_MAX_BYTES, GroundTruthCache, default_gt_cache_dir


    if args.no_gt_cache:
        if args.gt_cache is not None or args.gt_cache_max_gib is not None:
            raise DevilError("--no-gt-cache: cannot be combined with --gt-cache or --gt-cache-max-gib")
        return None
    cap = DEFAULT_GT_CACHE_MAX_BYTES if args.gt_cache_max_gib is None else int(args.gt_cache_max_gib * 2**30)
    return GroundTruthCache(args.gt_cache if args.gt_cache is not None else default_gt_cache_dir(), cap)


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


def _prediction_mapping(predictions: list[tuple[str | None, Path]]) -> dict[str, Path]:
    """Method name -> folder: NAME=PATH names it, else the folder's manifest or name; a name used twice is refused."""
    from ..eval.scoring.evaluate import prediction_method_name


    out: dict[str, Path] = {}
    for name, path in predictions:
        method = name or prediction_method_name(path)
        if method in out:
            raise DevilError(f"--predictions: {out[method]} and {path} are both method {method!r}; name them: "
                             "--predictions NAME=PATH ...")
        out[method] = path
    return out


def run(args: argparse.Namespace) -> int:
    if args.out is not None and args.predictions is not None and len(args.predictions) > 1:
        with output_folder_lock(args, args.out):  # --out is a results folder: one writer at a time
            return _run(args)
    return _run(args)


def _run(args: argparse.Namespace) -> int:
    protocol = _protocol_of(args)
    protocol.check_parity(args.parity)
    if protocol.evaluate is not None:  # a protocol reading folders of its own (its layout's options)
        docs = _evaluate_folder_protocol(args, protocol)
        _write_and_print(args, docs, False)
        return 0
    dataset_mode = _dataset_mode(args)
    if args.values_cache is not None and dataset_mode:  # the release's folders run through the one runner
        raise DevilError(f"--values-cache: only with a protocol reading folders of its own, not {protocol.name} in "
                         "dataset mode (its --gt-dir/--pred-dir directory mode keeps one)")
    several = dataset_mode and len(args.predictions) > 1
    _check_method_name(args, dataset_mode, several)
    _check_out(args, several)
    options = _eval_options(args)
    metrics = _metric_list(args.metrics)
    if dataset_mode:
        docs = _evaluate_dataset_mode(args, metrics, options, several)
    else:
        docs = _evaluate_directory_mode(args, protocol, metrics, options)
    _write_and_print(args, docs, several)
    return 0


def _dataset_mode(args: argparse.Namespace) -> bool:
    """True in dataset mode, False in directory mode; a mix of the two, or a mode given in part, is refused."""

    dataset_mode = any(v is not None for v in (args.dataset, args.config, args.predictions))
    dir_mode = any(v is not None for v in (args.gt_dir, args.pred_dir))
    if dataset_mode == dir_mode:
        raise DevilError("give either --dataset/--config/--predictions or --gt-dir/--pred-dir")
    if dataset_mode and (args.dataset is None or args.config is None or args.predictions is None):
        raise DevilError("dataset mode needs --dataset, --config and --predictions")
    if dir_mode and (args.gt_dir is None or args.pred_dir is None):
        raise DevilError("directory mode needs --gt-dir and --pred-dir")
    return dataset_mode


def _check_method_name(args: argparse.Namespace, dataset_mode: bool, several: bool) -> None:
    """Refuse ``--method-name`` where it names several methods, or a method ``NAME=PATH`` names already."""

    if several and args.method_name is not None:
        raise DevilError("--method-name names one method; with several --predictions name each as NAME=PATH")
    if dataset_mode and not several and args.method_name is not None and args.predictions[0][0] is not None:
        raise DevilError("--method-name and --predictions NAME=PATH both name the method; give one")


def _check_out(args: argparse.Namespace, several: bool) -> None:
    """Refuse an ``--out`` that could not be written (a file where several methods need a folder), before
    anything is scored."""

    if several and args.out is not None and args.out.exists() and not args.out.is_dir():
        raise DevilError(f"{args.out}: is a file; with several --predictions --out takes a folder")
    if args.out is not None:  # refused before anything is scored
        check_output_file(args.out / "results.json" if several else args.out)


def _eval_options(args: argparse.Namespace) -> EvalOptions:
    """The metrics' options from the flags (the second inpainter and the precision checked first)."""
    from ..eval.metrics.metric import EvalOptions
    from ..inpaint import INPAINTERS


    if args.second_inpainter not in INPAINTERS:
        raise unknown_name("inpainter", args.second_inpainter, sorted(INPAINTERS), prefix="--second-inpainter: ")
    check_precision(args.precision, prefix="--precision: ", kind="precision")
    return EvalOptions(device=args.device, batch_size=args.batch_size, parity=args.parity,
                       pixel_backend=args.pixel_backend,
                       ssim_mode=args.ssim_mode, pvcs_mode=args.pvcs_mode, flow=args.flow, precision=args.precision,
                       seed=args.seed, second_inpainter=args.second_inpainter,
                       self_consistency_submetric=args.self_consistency_submetric,
                       self_consistency_k=args.self_consistency_k, set_level_ci=args.set_level_ci,
                       protocol=args.protocol, dino_model=args.dino_model)


def _evaluate_dataset_mode(args: argparse.Namespace, metrics: list[str] | None, options: EvalOptions,
                           several: bool) -> dict[str, dict]:
    """Method -> results document of the slice's predictions (one method, or several in one pass)."""
    from ..core.engines import get_engine
    from ..eval.scoring.evaluate import evaluate_dataset, evaluate_slice


    engine = get_engine(args.engine, jobs=args.jobs, address=args.ray_address)
    gt_cache = _gt_cache_of(args)
    if several:
        docs = evaluate_slice(args.dataset, args.config, _prediction_mapping(args.predictions), metrics,
                              options, progress=not args.no_progress, engine=engine, gt_cache=gt_cache)
    else:
        doc = evaluate_dataset(args.dataset, args.config, args.predictions[0][1], metrics, options,
                               method=args.method_name or args.predictions[0][0],
                               progress=not args.no_progress, engine=engine,
                               gt_cache=gt_cache)
        docs = {doc["method"]: doc}
    if gt_cache is not None:
        print(f"devil evaluate: {gt_cache.summary()}", file=sys.stderr)
    return docs


def _evaluate_directory_mode(args: argparse.Namespace, protocol: EvaluationProtocol, metrics: list[str] | None,
                             options: EvalOptions) -> dict[str, dict]:
    """Method -> results document of the release-layout folders (one method): the protocol's directory layout run
    through the one runner (``--jobs``/``--engine``, ``--values-cache``)."""
    from ..core.engines import get_engine
    from ..eval.protocols.declaration import FolderRequest


    engine = get_engine(args.engine, jobs=args.jobs, address=args.ray_address) \
        if args.jobs > 1 or args.engine != "local" else None
    scorer = _directory_protocol(protocol)
    request = FolderRequest({f: getattr(args, f) for f in scorer.layout("directory").flags}, metrics, options,
                            method=args.method_name, jobs=args.jobs, engine=engine, progress=not args.no_progress,
                            cache=args.values_cache, slice_name=args.slice_name)
    doc = scorer.run(request, layout="directory")
    return {doc["method"]: doc}


def _directory_protocol(protocol: EvaluationProtocol) -> EvaluationProtocol:
    """The protocol whose ``directory`` layout scores the release's folders (``--gt-dir --pred-dir``): this one when it
    declares one, else DEVIL's (a protocol declaring no folders of its own is scored by DEVIL's pass, as it always
    was)."""
    from ..eval.protocols.registry import get_protocol

    if any(layout.name == "directory" and layout.evaluate is not None for layout in protocol.layouts):
        return protocol
    return get_protocol("devil")


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _check_folder_mode(args: argparse.Namespace, protocol: str, needed: tuple[str, ...],
                       refused: tuple[str, ...]) -> None:
    """A folder protocol's flags: every ``needed`` one given, none of ``refused``; ``--out`` writable."""
    if any(getattr(args, r) is not None for r in refused):
        raise DevilError(f"--protocol {protocol}: give {', '.join(map(_flag, needed[:-1]))} and {_flag(needed[-1])}, "
                         f"not {'/'.join(map(_flag, refused))}")
    if any(getattr(args, n) is None for n in needed):
        raise DevilError(f"--protocol {protocol} needs {', '.join(map(_flag, needed[:-1]))} and {_flag(needed[-1])}")
    if args.out is not None:
        check_output_file(args.out)


def _protocol_of(args: argparse.Namespace) -> EvaluationProtocol:
    """The ``--protocol`` looked up in the registry; an option of another protocol's layout is refused, naming the
    protocols that read it."""
    from ..eval.protocols.registry import get_protocol, protocols

    protocol = get_protocol(args.protocol)
    own = {f for layout in protocol.layouts for f in layout.flags}
    shared = {f for p in protocols().values() if p.evaluate is None for layout in p.layouts for f in layout.flags}
    readers: dict[str, list[str]] = {}  # options only folder protocols read: refused with the others
    for other in protocols().values():
        for flag in {f for layout in other.layouts for f in layout.flags} - own - shared:
            readers.setdefault(flag, []).append(other.name)
    for flag, names in sorted(readers.items(), key=lambda item: (len(item[1]), item[0])):
        if getattr(args, flag, None) is not None:
            raise DevilError(f"{_flag(flag)}: only with --protocol {' or --protocol '.join(names)}")
    return protocol


def _evaluate_folder_protocol(args: argparse.Namespace, protocol: EvaluationProtocol) -> dict[str, dict]:
    """Method -> results document of a protocol reading folders of its own (one method); the lines its results
    carry (input problems) printed on stderr."""
    from ..core.engines import get_engine
    from ..eval.protocols.declaration import FolderRequest
    from ..eval.protocols.registry import protocols

    flags = protocol.layouts[0].flags
    folder_flags = {f for p in protocols().values() for layout in p.layouts for f in layout.flags}
    _check_folder_mode(args, protocol.name, flags, tuple(f for f in ("dataset", "config", "predictions", "gt_dir")
                                                         if f in folder_flags - set(flags)))
    engine = get_engine(args.engine, jobs=args.jobs, address=args.ray_address) \
        if args.jobs > 1 or args.engine != "local" else None
    request = FolderRequest({f: getattr(args, f) for f in flags}, _metric_list(args.metrics), _eval_options(args),
                            method=args.method_name, jobs=args.jobs, engine=engine, progress=not args.no_progress,
                            cache=args.values_cache)
    doc = protocol.run(request)
    for line in protocol.warning_lines(doc):
        print(f"devil evaluate: {line}", file=sys.stderr)
    return {doc["method"]: doc}


def _write_and_print(args: argparse.Namespace, docs: dict[str, dict], several: bool) -> None:
    """Each method's results: written to ``--out`` (a file, or ``<method>.json`` in the folder), then printed as
    JSON or as a summary."""
    from ..eval.scoring.results import dumps, locate_inputs, write_results


    for method, doc in docs.items():
        for line in doc.get("warnings") or ():
            print(f"devil evaluate: {line}", file=sys.stderr)
        if args.out is not None:
            path = args.out / f"{method}.json" if several else args.out
            write_results(path, doc)
            doc = locate_inputs(doc, path)  # printed as written: input paths absolute and relative to the file
            print(f"wrote {path}", file=sys.stderr)
        if args.json:
            sys.stdout.write(dumps(doc))
        else:
            _print_summary(doc)
