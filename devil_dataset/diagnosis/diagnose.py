"""``devil diagnose`` as one call: pairs -> attribute pass -> groups -> (with predictions) scores, comparisons and
the report, all written under one folder.

    >>> from devil_dataset.diagnosis.diagnose import input_mode
    >>> input_mode(dataset="ds", gt_dir=None, mask_dir=None)
    'dataset'
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

from ..core.atomic import unwritable_reason
from ..core.engines import Engine
from ..core.errors import DevilError
from ..core.progress import progress_bar
from ..eval.metrics.metric import EvalOptions
from ..eval.metrics.registry import scoring_identity
from ..eval.protocols.propainter.layout import PROTOCOL_SIZE, layout_notes
from .attribute_table import AttributeTable, write_attribute_table
from .attributes import SCORING_SIZE, AttributeOptions
from .cache import AttributeCache, default_attribute_cache_dir
from .compare import Finding, compare_groups, group_documents
from .metric_cache import MetricValuesCache
from .pairs import Pair, dataset_pairs, davis_pairs, directory_pairs
from .report import headline, write_report
from .run import PassStats, compute_attributes
from .scores import DEFAULT_METRICS, PairScores, dataset_scores, davis_scores, directory_scores

NO_CACHE = "none"  # cache_dir value that turns the attribute cache off


@dataclass
class DiagnosisResult:
    """What a diagnosis produced: the attribute table, the pass's costs, per-pair scores, findings and files."""

    table: AttributeTable
    stats: PassStats
    scores: PairScores = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    paths: list[Path] = field(default_factory=list)

    def headline(self) -> list[str]:
        """The report's headline sentences (empty without predictions)."""
        return headline(self.findings, list(self.scores), self.table.unseparated) if self.scores else []


def input_mode(*, dataset: str | Path | None, gt_dir: str | Path | None, mask_dir: str | Path | None) -> str:
    """``dataset``, ``directory`` (release layout) or ``davis``; a clear error for a wrong combination."""
    if dataset is not None and (gt_dir is not None or mask_dir is not None):
        raise DevilError("give either --dataset or --gt-dir (with --mask-dir for the DAVIS layout), not both")
    if dataset is not None:
        return "dataset"
    if gt_dir is None:
        raise DevilError("nothing to diagnose: give --dataset DIR, or --gt-dir DIR [--mask-dir DIR]")
    return "davis" if mask_dir is not None else "directory"


def default_scoring_size(mode: str) -> tuple[int, int]:
    """The size the video attributes are scored at unless one is named: the protocol's resolution of the input, the
    ProPainter / E2FGVI protocol's 432x240 for the DAVIS / YouTube-VOS layout (the frames that protocol scores), the
    release's 854x480 (SPEC section 1) for DEVIL's own layouts.

    >>> default_scoring_size("davis"), default_scoring_size("dataset")
    ((432, 240), (854, 480))
    """
    return PROTOCOL_SIZE if mode == "davis" else SCORING_SIZE


def _pairs(mode: str, dataset, configs, gt_dir, mask_dir, options: AttributeOptions) -> list[Pair]:
    if mode == "dataset":
        return dataset_pairs(dataset, configs)
    if configs:
        raise DevilError("--config selects configs of a built dataset (--dataset)")
    if mode == "davis":
        return davis_pairs(gt_dir, mask_dir, options.scoring_size)
    return directory_pairs(gt_dir)


def _scores(mode: str, pairs: Sequence[Pair], predictions: Mapping[str, str | Path], metrics: Sequence[str], *,
            dataset, gt_dir, eval_options: EvalOptions | None, engine: Engine,
            progress: bool, cache: MetricValuesCache | None = None) -> tuple[PairScores, list[str]]:
    if mode == "dataset":
        return dataset_scores(dataset, pairs, predictions, metrics, options=eval_options, engine=engine,
                              progress=progress, cache=cache)
    notes: list[str] = []
    if mode == "davis":
        return davis_scores(pairs, predictions, metrics, options=eval_options, progress=progress, cache=cache,
                            notes=notes), notes
    return directory_scores(gt_dir, predictions, metrics, options=eval_options, progress=progress, pairs=pairs,
                            cache=cache, notes=notes), notes


def _metric_cache(cache: str | Path | None, writable: bool, metrics: Sequence[str],
                  eval_options: EvalOptions | None) -> MetricValuesCache | None:
    """The per-pair metric-value cache beside the attributes (None without a cache folder)."""
    if cache is None:
        return None
    return MetricValuesCache(AttributeCache(cache, writable=writable),
                             scoring_identity(list(metrics), eval_options or EvalOptions()))


def diagnose(  # noqa: PLR0913  (public API: keyword-only options)
    out_dir: str | Path,
    *,
    dataset: str | Path | None = None,
    configs: Sequence[str] | None = None,
    gt_dir: str | Path | None = None,
    mask_dir: str | Path | None = None,
    predictions: Mapping[str, str | Path] | None = None,
    metrics: Sequence[str] = DEFAULT_METRICS,
    options: AttributeOptions | None = None,
    eval_options: EvalOptions | None = None,
    cache_dir: str | Path | None = None,
    engine: Engine = Engine(),
    progress: bool = True,
) -> DiagnosisResult:
    """Diagnose a dataset: write ``out_dir/attributes.tsv`` / ``attributes.json`` and, with ``predictions``
    (method -> folder), the report (:func:`devil_dataset.diagnosis.report.write_report`).

    Inputs: ``dataset`` (a built dataset; ``configs`` some of its configs), or ``gt_dir`` in the release layout, or
    ``gt_dir`` + ``mask_dir`` in the DAVIS / YouTube-VOS layout. ``cache_dir``: the attribute cache (default
    :func:`~devil_dataset.diagnosis.cache.default_attribute_cache_dir`; ``"none"``: off).

        >>> diagnose("out", dataset="sample-dataset")  # doctest: +SKIP
    """
    mode = input_mode(dataset=dataset, gt_dir=gt_dir, mask_dir=mask_dir)
    options = (options or AttributeOptions(scoring_size=default_scoring_size(mode))).resolved()
    pairs = _pairs(mode, dataset, configs, gt_dir, mask_dir, options)
    if not pairs:
        raise DevilError("no video-mask pairs to diagnose")
    if mode == "davis" and gt_dir is not None and mask_dir is not None:  # videos left out, ._* files: named
        videos = [p.source.video for p in pairs if p.source.video is not None]
        for note in layout_notes(gt_dir, mask_dir, videos, None)[1]:
            print(f"devil diagnose: {note}", file=sys.stderr)
    cache = None if str(cache_dir) == NO_CACHE else (cache_dir or default_attribute_cache_dir())
    unwritable = unwritable_reason(cache) if cache is not None else None
    if unwritable:  # read what is there, store nothing (docs/diagnose.md, "The cache")
        print(f"devil diagnose: --cache {cache} cannot be written ({unwritable}): running without storing scores "
              "(entries already there are still read); give a writable --cache DIR or --cache none", file=sys.stderr)
    table, stats = compute_attributes(pairs, options=options, cache_dir=cache, cache_writable=not unwritable,
                                      engine=engine, progress=progress)
    for note in stats.notes():
        print(f"devil diagnose: {note}", file=sys.stderr)
    result = DiagnosisResult(table, stats)
    result.paths += write_attribute_table(out_dir, table)
    if predictions:
        values = _metric_cache(cache, not unwritable, metrics, eval_options)
        result.scores, result.notes = _scores(mode, pairs, predictions, metrics, dataset=dataset, gt_dir=gt_dir,
                                              eval_options=eval_options, engine=engine, progress=progress,
                                              cache=values)
        if values is not None:
            result.stats.metric_values = (values.served, values.stored)
            result.notes += PassStats(damaged=[str(p) for p in dict.fromkeys(values.cache.damaged)],
                                      write_error=values.cache.write_error if not unwritable else None).notes()
        steps = progress_bar(total=3, desc="report (tests, intervals, files)", unit="step", enabled=progress)
        result.findings = compare_groups(table, result.scores)
        steps.update(1)
        docs = group_documents(table, result.scores)
        steps.update(1)
        result.paths += write_report(out_dir, table, result.findings, docs, list(predictions), result.notes)
        steps.update(1)
        steps.close()
    for note in result.notes:
        print(f"devil diagnose: {note}", file=sys.stderr)
    return result


__all__ = ["DiagnosisResult", "NO_CACHE", "diagnose", "input_mode"]
