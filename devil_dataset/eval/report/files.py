"""The report's files: Table 1 (markdown and TSV), the relative improvements, the comparisons and the figures.

    >>> import tempfile
    >>> written = write_report({("A", "all"): {"psnr": 30.0}}, tempfile.mkdtemp(), plots=False)
    >>> sorted(p.name for p in written)
    ['relative_improvement.md', 'relative_improvement.tsv', 'table1.md', 'table1.tsv', 'table1_notes.md']
"""
from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Iterator, Mapping, Sequence

from ...core.atomic import TMP_PREFIX, atomic_directory, atomic_write_text
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


@contextlib.contextmanager
def built_in_sibling(out: Path, *, shared: bool = False) -> Iterator[Path]:
    """Yield a temporary folder beside ``out`` to build a report in; on success it becomes ``out`` (one rename when
    ``out`` is new or empty), or its entries replace their namesakes in an existing ``out`` (``index.html`` last,
    other files there kept: ``--out`` and ``--html`` may share a folder); on failure it is removed and ``out`` is as
    it was. ``shared``: another writer (clips encoded in the background) fills ``out`` at the same time, so ``out`` is
    made if needed and never replaced whole.

        >>> import tempfile
        >>> out = Path(tempfile.mkdtemp()) / "report"
        >>> with built_in_sibling(out) as build:
        ...     _ = (build / "index.html").write_text("ok")
        >>> sorted(p.name for p in out.iterdir())
        ['index.html']
    """
    if shared:
        out.mkdir(parents=True, exist_ok=True)
    elif out.is_dir() and not any(out.iterdir()):
        out.rmdir()
    if not out.exists():
        with atomic_directory(out) as build:
            yield build
        return
    out.parent.mkdir(parents=True, exist_ok=True)
    build = Path(tempfile.mkdtemp(prefix=TMP_PREFIX + out.name + ".", dir=out.parent))
    try:
        yield build
        for entry in sorted(build.iterdir(), key=lambda p: p.name == "index.html"):
            target = out / entry.name
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target)
            os.replace(entry, target)
    finally:
        shutil.rmtree(build, ignore_errors=True)


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

    with built_in_sibling(out_dir) as build:  # a failure (a plot, a comparison) leaves no partial report
        written = [
            atomic_write_text(build / "table1.md", marked(table1_markdown)),
            atomic_write_text(build / "table1.tsv", marked(table1_tsv)),
            atomic_write_text(build / "table1_notes.md", "# What the marks of table1.md / table1.tsv mean\n\n"
                              + (marked(table1_notes) or "No marks.\n")),
            atomic_write_text(build / "relative_improvement.md", RELATIVE_IMPROVEMENT_CAPTION + "\n\n"
                              + relative_improvement_markdown(table, keys, caveats)),
            atomic_write_text(build / "relative_improvement.tsv", relative_improvement_tsv(table, keys, caveats)),
        ]
        if docs is not None:
            written.append(atomic_write_text(build / "per_video.tsv", per_video_tsv(docs, keys)))
        if comparisons is not None:
            written.append(write_comparisons(comparisons, build))
        if plots:
            written += write_plots(table, build, keys, intervals, caveats)
        written = [out_dir / p.relative_to(build) for p in written]
    return written


__all__ = ["built_in_sibling", "write_report"]
