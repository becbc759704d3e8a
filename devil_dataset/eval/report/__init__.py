"""What a reader sees: Table 1 and the relative improvements, the paper's figures, the method comparisons, the
findings and the HTML report, all from results documents.

The names of the former ``devil_dataset.eval.report`` module are here:

    >>> from devil_dataset.eval.report import table1_markdown
    >>> print(table1_markdown({("A", "all"): {"psnr": 36.6234}}), end="")
    | slice | method | PSNR ▲ |
    |---|---|---:|
    | all | A | 36.62 |
"""
from __future__ import annotations

from ..stats.intervals import Intervals, video_intervals
from .files import write_report
from .plots import PLOT_DPI, PLOT_WIDTH_IN, plot_figures, write_plots
from .tables import (
    KEY_FORMATS,
    KEY_ORDER,
    KEY_TITLES,
    RELATIVE_IMPROVEMENT_CAPTION,
    Table,
    cpu_tolerances,
    fmt,
    relative_improvement,
    relative_improvement_markdown,
    relative_improvement_tsv,
    score_table,
    skipped_line,
    skipped_metrics,
    table1_legend,
    table1_markdown,
    table1_tsv,
    title,
    tolerance_legend,
)

__all__ = ["Intervals", "KEY_FORMATS", "KEY_ORDER", "KEY_TITLES", "PLOT_DPI", "PLOT_WIDTH_IN",
           "RELATIVE_IMPROVEMENT_CAPTION", "Table", "cpu_tolerances", "fmt", "plot_figures", "relative_improvement",
           "relative_improvement_markdown", "relative_improvement_tsv", "score_table", "skipped_line",
           "skipped_metrics", "table1_legend", "table1_markdown", "table1_tsv", "title", "tolerance_legend",
           "video_intervals", "write_plots", "write_report"]
