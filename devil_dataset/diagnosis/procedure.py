"""The one procedure every ``devil diagnose`` follows, whatever its input (a dataset with ground truth,
:mod:`devil_dataset.diagnosis.diagnose`; object removals without it, :mod:`devil_dataset.diagnosis.removal`):

1. every input is checked (:meth:`DiagnosisInputs.check`: every bad file named in one error) before anything is
   written;
2. the cache is opened: a folder that cannot be written is read, not written, and the run says so;
3. the attribute pass (:func:`~devil_dataset.diagnosis.run.compute_attributes`), ``attributes.tsv`` / ``.json``;
4. with methods, their per-pair values, each served from the cache when its content and scoring identity were scored
   before (:class:`~devil_dataset.diagnosis.metric_cache.MetricValuesCache`), the groups compared, the report;
5. the notes: damaged cache entries recomputed and rewritten (attributes and values), writes that failed, what the
   inputs said; the headline (:meth:`DiagnosisResult.headline`) names attributes without a score and groups too
   small for significance.

    >>> open_cache("none")
    (None, True)
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, Sequence

from ..core.atomic import unwritable_reason
from ..core.engines import Engine
from ..core.errors import DevilError
from ..core.progress import progress_bar
from .attribute_table import AttributeTable, write_attribute_table
from .attributes import AttributeOptions
from .cache import AttributeCache, default_attribute_cache_dir
from .compare import Finding, compare_groups, group_documents
from .metric_cache import MetricValuesCache
from .pairs import Pair
from .report import headline, write_report
from .run import PassStats, compute_attributes
from .scores import PairScores

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
        """The report's headline sentences; without scores, a line per attribute without any score."""
        if self.scores:
            return headline(self.findings, list(self.scores), self.table.unseparated, self.table.unscored)
        return [f"{a}: {why}" for a, why in self.table.unscored.items()]


class DiagnosisInputs(Protocol):
    """What a diagnosis reads: its methods, a check of every input, the pairs and each method's per-pair values."""

    @property
    def methods(self) -> list[str]:
        """The methods compared (none: the attributes only)."""

    def check(self) -> None:
        """Read every input far enough to know it is usable; one DevilError naming every bad one. Writes nothing."""

    def pairs(self) -> list[Pair]:
        """The (video, mask) pairs the attribute pass labels (after :meth:`check`; may write under the output)."""

    def labelling_record(self) -> dict[str, Any]:
        """What ``attributes.json`` records (in its options) about how the inputs were read for labelling (after
        :meth:`pairs`; empty when there is nothing to say)."""

    def scoring_identity(self) -> str:
        """What makes the methods' values what they are (metrics, models, parity): part of every value's cache key."""

    def score(self, pairs: Sequence[Pair], cache: MetricValuesCache | None, engine: Engine,
              progress: bool) -> tuple[PairScores, list[str]]:
        """Method -> pair key -> values (``cache``: served and stored there), and the notes about the inputs."""


def open_cache(cache_dir: str | Path | None) -> tuple[Path | None, bool]:
    """The cache folder (None: off, ``"none"``) and whether it can be written; an unwritable one is said on stderr
    (it is still read)."""
    if str(cache_dir) == NO_CACHE:
        return None, True
    root = Path(cache_dir) if cache_dir is not None else default_attribute_cache_dir()
    unwritable = unwritable_reason(root)
    if unwritable:  # read what is there, store nothing (docs/diagnose.md, "The cache")
        print(f"devil diagnose: --cache {root} cannot be written ({unwritable}): running without storing scores "
              "(entries already there are still read); give a writable --cache DIR or --cache none", file=sys.stderr)
    return root, not unwritable


def _compare_and_report(out_dir: Path, result: DiagnosisResult, methods: Sequence[str], progress: bool) -> None:
    steps = progress_bar(total=3, desc="report (tests, intervals, files)", unit="step", enabled=progress)
    result.findings = compare_groups(result.table, result.scores)
    steps.update(1)
    docs = group_documents(result.table, result.scores)
    steps.update(1)
    result.paths += write_report(out_dir, result.table, result.findings, docs, list(methods), result.notes)
    steps.update(1)
    steps.close()


def run_diagnosis(out_dir: str | Path, inputs: DiagnosisInputs, *, options: AttributeOptions,
                  cache_dir: str | Path | None = None, engine: Engine = Engine(),
                  progress: bool = True) -> DiagnosisResult:
    """The procedure of the module docstring on ``inputs``; writes into ``out_dir``."""
    inputs.check()
    pairs = inputs.pairs()
    if not pairs:
        raise DevilError("no video-mask pairs to diagnose")
    root, writable = open_cache(cache_dir)
    table, stats = compute_attributes(pairs, options=options, cache_dir=root, cache_writable=writable, engine=engine,
                                      progress=progress)
    for note in stats.notes():
        print(f"devil diagnose: {note}", file=sys.stderr)
    table.options.update(inputs.labelling_record())
    result = DiagnosisResult(table, stats)
    result.paths += write_attribute_table(out_dir, table)
    if inputs.methods:
        values = MetricValuesCache(AttributeCache(root, writable=writable), inputs.scoring_identity()) \
            if root is not None else None
        result.scores, result.notes = inputs.score(pairs, values, engine, progress)
        if values is not None:
            result.stats.metric_values = (values.served, values.stored)
            result.notes += PassStats(damaged=[str(p) for p in dict.fromkeys(values.cache.damaged)],
                                      write_error=values.cache.write_error if writable else None).notes()
        _compare_and_report(Path(out_dir), result, inputs.methods, progress)
    for note in result.notes:
        print(f"devil diagnose: {note}", file=sys.stderr)
    return result


__all__ = ["DiagnosisInputs", "DiagnosisResult", "NO_CACHE", "open_cache", "run_diagnosis"]
