"""The report's files: Table 1 (markdown and TSV), the relative improvements, the comparisons and the figures.

    >>> import tempfile
    >>> written = write_report({("A", "all"): {"psnr": 30.0}}, tempfile.mkdtemp(), plots=False)
    >>> sorted(p.name for p in written)
    ['relative_improvement.md', 'relative_improvement.tsv', 'table1.md', 'table1.tsv']
"""
from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

from ...core.atomic import atomic_write_text
from ..stats.intervals import Intervals
from .comparisons import write_comparisons
from .plots import write_plots
from .tables import (
    RELATIVE_IMPROVEMENT_CAPTION,
    Table,
    relative_improvement_markdown,
    relative_improvement_tsv,
    table1_markdown,
    table1_tsv,
)


def write_report(
    table: Table, out_dir: str | Path, keys: Sequence[str] | None = None, plots: bool = True,
    intervals: Intervals | None = None, *, comparisons: Sequence[Mapping] | None = None, ci: str | None = None,
    tolerances: Mapping[str, float] | None = None,
) -> list[Path]:
    """Write ``table1.md``, ``table1.tsv``, ``relative_improvement.md/.tsv`` and (optionally) the plots; with
    ``comparisons`` (:func:`~devil_dataset.eval.stats.significance.compare_methods`) also ``comparisons.json`` and
    Table 1's significance marks; ``ci`` (``se``/``interval``, from ``intervals``) in Table 1's cells."""
    out_dir = Path(out_dir)
    written = [
        atomic_write_text(out_dir / "table1.md",
                          table1_markdown(table, keys, comparisons=comparisons, uncertainty=intervals, ci=ci,
                                          tolerances=tolerances)),
        atomic_write_text(out_dir / "table1.tsv",
                          table1_tsv(table, keys, comparisons=comparisons, uncertainty=intervals, ci=ci,
                                     tolerances=tolerances)),
        atomic_write_text(out_dir / "relative_improvement.md",
                          RELATIVE_IMPROVEMENT_CAPTION + "\n\n" + relative_improvement_markdown(table, keys)),
        atomic_write_text(out_dir / "relative_improvement.tsv", relative_improvement_tsv(table, keys)),
    ]
    if comparisons is not None:

        written.append(write_comparisons(comparisons, out_dir))
    if plots:
        written += write_plots(table, out_dir, keys, intervals)
    return written


__all__ = ["write_report"]
