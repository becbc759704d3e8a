"""The report's files: Table 1 (markdown and TSV), the relative improvements, the comparisons and the figures.

    >>> import tempfile
    >>> written = write_report({("A", "all"): {"psnr": 30.0}}, tempfile.mkdtemp(), plots=False)
    >>> sorted(p.name for p in written)
    ['relative_improvement.md', 'relative_improvement.tsv', 'table1.md', 'table1.tsv', 'table1_notes.md']
"""
from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

from ...core.atomic import atomic_write_text
from ..stats.intervals import Intervals
from .caveats import Caveats
from .comparisons import write_comparisons
from .plots import write_plots
from .tables import (
    RELATIVE_IMPROVEMENT_CAPTION,
    Table,
    per_video_tsv,
    relative_improvement_markdown,
    relative_improvement_tsv,
    table1_markdown,
    table1_notes,
    table1_tsv,
)


def write_report(
    table: Table, out_dir: str | Path, keys: Sequence[str] | None = None, plots: bool = True,
    intervals: Intervals | None = None, *, comparisons: Sequence[Mapping] | None = None, ci: str | None = None,
    tolerances: Mapping[str, float] | None = None, caveats: Caveats | None = None,
    docs: Sequence[Mapping] | None = None,
) -> list[Path]:
    """Write ``table1.md``, ``table1.tsv`` with ``table1_notes.md`` (what its marks mean), ``relative_improvement.md/
    .tsv`` and (optionally) the plots; with ``comparisons`` (:func:`~devil_dataset.eval.stats.significance.
    compare_methods`) also ``comparisons.json`` and Table 1's significance marks; ``ci`` (``se``/``interval``, from
    ``intervals``) in Table 1's cells; ``caveats`` marks clipped and mixed cells in tables and figures; with the
    results documents ``docs`` also ``per_video.tsv`` (every video's values)."""
    out_dir = Path(out_dir)

    def marked(fn) -> str:
        return fn(table, keys, comparisons=comparisons, uncertainty=intervals, ci=ci, tolerances=tolerances,
                  caveats=caveats)

    written = [
        atomic_write_text(out_dir / "table1.md", marked(table1_markdown)),
        atomic_write_text(out_dir / "table1.tsv", marked(table1_tsv)),
        atomic_write_text(out_dir / "table1_notes.md", "# What the marks of table1.md / table1.tsv mean\n\n"
                          + (marked(table1_notes) or "No marks.\n")),
        atomic_write_text(out_dir / "relative_improvement.md",
                          RELATIVE_IMPROVEMENT_CAPTION + "\n\n" + relative_improvement_markdown(table, keys, caveats)),
        atomic_write_text(out_dir / "relative_improvement.tsv", relative_improvement_tsv(table, keys, caveats)),
    ]
    if docs is not None:
        written.append(atomic_write_text(out_dir / "per_video.tsv", per_video_tsv(docs, keys)))
    if comparisons is not None:
        written.append(write_comparisons(comparisons, out_dir))
    if plots:
        written += write_plots(table, out_dir, keys, intervals, caveats)
    return written


__all__ = ["write_report"]
