"""``devil diagnose``: the DEVIL attributes of every video-mask pair of a dataset, their low/high groups and, with
predictions, which attributes separate each method's scores (:mod:`devil_dataset.diagnosis`)."""
from __future__ import annotations

import argparse
from pathlib import Path

from ..core.errors import DevilError
from ..core.networks import DEFAULT_DINO_MODEL
from ._args import EXAMPLE_FORMATTER, existing_path, output_directory, positive_int, resolution, writable_directory
from ._names import DIAGNOSIS_ATTRIBUTES, DIAGNOSIS_DEFAULT_METRICS
from .evaluate import _prediction_mapping, named_predictions

EPILOG = """\
example:
  devil diagnose --dataset demo-out/dataset --out diag/
  # -> diag/attributes.tsv (clip_id, mask_id, <attribute>_score, <attribute>_group) and attributes.json
  devil diagnose --dataset demo-out/dataset --out diag/ \\
      --predictions telea=demo-out/predictions/telea aligned-copy=demo-out/predictions/aligned-copy
  # -> also diag/diagnosis.md (headline, low vs high per method/metric/attribute, Holm-adjusted permutation tests,
  #    confounding), diagnosis.tsv, groups_table1.tsv, attribute_correlation.tsv, plots/, index.html
  devil diagnose --gt-dir davis/JPEGImages --mask-dir davis/masks --out diag-davis/ --predictions mine=out/mine
  # DAVIS / YouTube-VOS layout (GT/<video>/*.jpg, MASKS/<video>/00000.png ...); outputs PRED/<video>/*.png
  devil diagnose --input-dir IN --mask-dir MASKS --out diag-removal/ --predictions a=results/a b=results/b \
      --dino-model facebook/dinov2-giant
  # object removals without ground truth (IN/<name>.mp4 with the object, MASKS/<name>.mp4, results/<m>/<name>.mp4):
  # attributes from the input videos, RC-S / RC-T (PROVE) compared between the groups (docs/removal.md)
  devil diagnose --input-dir IN --mask-dir MASKS --out diag-set/
  # the attributes of a removal test set only (diag-set/attributes.tsv), no method scored
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "diagnose",
        help="DEVIL attributes and low/high groups of any dataset, and where each method fails",
        description="Compute DEVIL's five attributes (" + ", ".join(DIAGNOSIS_ATTRIBUTES) + ") of every video-mask "
        "pair with the package's own labellers and mask statistics (cached per content hash), rank them into low and "
        "high groups (the release's 16% rule from 150 items, tertiles below), and with --predictions compare each "
        "method's scores between the groups (unpaired permutation tests, Holm-adjusted, confounding flagged).",
        epilog=EPILOG,
        formatter_class=EXAMPLE_FORMATTER,
    )
    src = p.add_argument_group("input (one of)")
    src.add_argument("--dataset", type=existing_path, metavar="DIR", help="a dataset built by `devil build`")
    src.add_argument("--config", nargs="+", metavar="NAME",
                     help="with --dataset: these configs only (default: every config with rows)")
    src.add_argument("--gt-dir", type=existing_path, metavar="DIR",
                     help="release layout (DIR/<clip>/frame_%%04d_gt.png + _mask.png), or with --mask-dir the DAVIS "
                     "/ YouTube-VOS frames (DIR/JPEGImages/<video>/ or DIR/<video>/)")
    src.add_argument("--mask-dir", type=existing_path, metavar="DIR", help="DAVIS masks: DIR/<video>/00000.png ...; "
                     "with --input-dir the removal masks <name>.mp4 (white = removed object)")
    src.add_argument("--input-dir", type=existing_path, metavar="DIR",
                     help="object removals without ground truth (PROVE layout): the videos with the object, "
                     "<name>.mp4 or <name>/ of frames; with --mask-dir: the attributes of the set; with "
                     "--predictions NAME=RESULTS also each method's scores compared (metrics rc_s rc_t by default; "
                     "docs/removal.md)")
    src.add_argument("--dino-model", default=DEFAULT_DINO_MODEL, metavar="DINO",
                     help=f"with --input-dir: the DINOv2 of RC-S / RC-T (default {DEFAULT_DINO_MODEL}, from the "
                     "Hugging Face cache, or a save_pretrained folder)")
    p.add_argument("--out", type=output_directory, required=True, metavar="DIR", help="where the outputs go")
    p.add_argument("--predictions", nargs="+", type=named_predictions, metavar="NAME=DIR",
                   help="methods' outputs: for a dataset DIR/<config>/<clip>/ (as `devil benchmark` writes them; a "
                   "folder without config subfolders serves one --config), else the layout `devil evaluate` reads")
    p.add_argument("--metrics", nargs="+", default=list(DIAGNOSIS_DEFAULT_METRICS), metavar="NAME",
                   help=f"per-video metrics to compare (default: {' '.join(DIAGNOSIS_DEFAULT_METRICS)})")
    p.add_argument("--scoring-size", type=resolution, default=None, metavar="WxH",
                   help="size the camera and scene motion are scored at (default: the input's protocol resolution, "
                   "854x480 (the release's) for DEVIL layouts, 432x240 for the DAVIS / YouTube-VOS layout)")
    p.add_argument("--detector", choices=("surf", "sift", "orb"),
                   help="feature detector of the motion labellers (default: SURF when OpenCV has it, else SIFT; "
                   "orb is several times faster, with other scores)")
    p.add_argument("--scene-mode", choices=("release", "corrected"), default="release",
                   help="scene-motion AffineScore mode (default release)")
    p.add_argument("--cache", type=Path, metavar="DIR",
                   help="attribute cache (default $DEVIL_ATTRIBUTE_CACHE or ~/.cache/devil-dataset/attributes; "
                   "'none': off)")
    p.add_argument("--jobs", type=positive_int, default=1, metavar="N", help="worker processes (default 1)")
    p.add_argument("--engine", choices=("local", "ray"), default="local", help="local processes or Ray tasks")
    p.add_argument("--ray-address", metavar="ADDR", help="Ray cluster to join with --engine ray")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..core.engines import get_engine
    from ..diagnosis.attributes import ATTRIBUTES, AttributeOptions
    from ..diagnosis.diagnose import default_scoring_size, diagnose, input_mode
    from ..eval.metrics.metric import EvalOptions

    writable_directory(args.out)  # before any work: the attribute pass would be lost
    if args.input_dir is not None:
        return _run_removals(args)
    engine = get_engine(args.engine, jobs=args.jobs, address=args.ray_address)
    predictions = _prediction_mapping(args.predictions) if args.predictions else None
    mode = input_mode(dataset=args.dataset, gt_dir=args.gt_dir, mask_dir=args.mask_dir)
    options = AttributeOptions(scoring_size=args.scoring_size or default_scoring_size(mode), detector=args.detector,
                               scene_mode=args.scene_mode)
    result = diagnose(args.out, dataset=args.dataset, configs=args.config, gt_dir=args.gt_dir, mask_dir=args.mask_dir,
                      predictions=predictions, metrics=args.metrics, options=options,
                      eval_options=EvalOptions(device="cpu") if predictions else None, cache_dir=args.cache,
                      engine=engine, progress=not args.quiet)
    print(result.stats.summary())
    for attr in ATTRIBUTES:
        print(f"  {attr}: {result.table.rules.get(attr, '')}")
    for line in result.headline():
        print(line)
    print(f"wrote {args.out / 'attributes.tsv'}" + (f" and {args.out / 'diagnosis.md'}" if predictions else ""))
    return 0


def _run_removals(args: argparse.Namespace) -> int:
    """``--input-dir``: the diagnosis of object removals (:func:`devil_dataset.diagnosis.removal.diagnose_removals`)."""
    from ..core.engines import get_engine
    from ..diagnosis.attributes import ATTRIBUTES, AttributeOptions
    from ..diagnosis.diagnose import default_scoring_size
    from ..diagnosis.removal import REMOVAL_DIAGNOSIS_METRICS, diagnose_removals
    from ..diagnosis.scores import DEFAULT_METRICS
    from ..eval.metrics.metric import EvalOptions

    if args.dataset is not None or args.gt_dir is not None:
        raise DevilError("--input-dir (object removals) cannot be combined with --dataset or --gt-dir")
    if args.mask_dir is None:
        raise DevilError("--input-dir needs --mask-dir (and --predictions NAME=RESULTS ... to compare methods)")
    metrics = REMOVAL_DIAGNOSIS_METRICS if list(args.metrics) == list(DEFAULT_METRICS) else tuple(args.metrics)
    options = AttributeOptions(scoring_size=args.scoring_size or default_scoring_size("davis"),
                               detector=args.detector, scene_mode=args.scene_mode)
    result = diagnose_removals(args.out, input_dir=args.input_dir, mask_dir=args.mask_dir,
                               predictions=_prediction_mapping(args.predictions) if args.predictions else None,
                               metrics=metrics, options=options,
                               eval_options=EvalOptions(device="cpu", protocol="prove", dino_model=args.dino_model),
                               cache_dir=args.cache, engine=get_engine(args.engine, jobs=args.jobs,
                                                                       address=args.ray_address),
                               progress=not args.quiet)
    print(result.stats.summary())
    for attr in ATTRIBUTES:
        print(f"  {attr}: {result.table.rules.get(attr, '')}")
    for line in result.headline():
        print(line)
    print(f"wrote {args.out / 'attributes.tsv'}" + (f" and {args.out / 'diagnosis.md'}" if args.predictions else ""))
    return 0
