"""The paper's figures from a score table: method performance (Fig. 4), slice difficulty (Fig. 5), sensitivity
per attribute (Figs. 6, 9, 12), as PNGs with fixed metadata (the same bytes for the same table).

Means are points with standard-error whiskers on axes zoomed to the data; only computed keys are drawn.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

from ...core.atomic import atomic_path
from ...core.slices import ATTRIBUTES, SLICES
from ..metrics.registry import higher_is_better
from ..stats.intervals import Intervals, mean_se
from .tables import DOWN, KEY_TITLES, UP, Table, _keys, _methods, _slices, fmt, relative_improvement

# Figures are drawn PLOT_WIDTH_IN wide at PLOT_DPI: 660 px, shown 1:1 in the HTML report's two plot columns on a
# 1400 px screen and readable as single PNGs (issue 28: legible at the page's width, nothing shrunk to ~380 px).
PLOT_DPI = 110


PLOT_WIDTH_IN = 6.0


def _save(fig, path: Path) -> Path:
    with atomic_path(path) as tmp:  # fixed metadata: the same bytes for the same inputs
        fig.savefig(tmp, format="png", dpi=PLOT_DPI, metadata={"Software": None})
    return path


def _direction(key: str) -> str:
    return "higher is better" if higher_is_better(key) else "lower is better"


@dataclass(frozen=True)
class _PlotData:
    """What every figure reads: the table, its methods and slices, the attribute slices (all slices when none is
    an attribute slice) and the per-slice intervals over videos (empty when absent)."""

    table: Table
    methods: list[str]
    slices: list[str]
    attr_slices: list[str]
    intervals: Intervals


def _method_performance(data: _PlotData, k: str):
    """``method_performance_<key>`` (paper Fig. 4): per method, the mean over the attribute slices with
    standard-error whiskers across slices, on an axis zoomed to the points."""
    from matplotlib.figure import Figure

    table, name = data.table, KEY_TITLES.get(k, k)
    stats = [(m, len(vals), *mean_se(vals)) for m in data.methods
             if (vals := [v for s in data.attr_slices if (m, s) in table
                          and not math.isnan(v := table[(m, s)].get(k, math.nan))])]
    fig = Figure(figsize=(PLOT_WIDTH_IN, 3.4), layout="constrained")
    ax = fig.add_subplot()
    xs = list(range(len(stats)))
    ax.errorbar(xs, [s[2] for s in stats], yerr=[s[3] for s in stats], fmt="o", ms=7, capsize=6, color="C0")
    for x, (_, _, mean, _) in zip(xs, stats):
        ax.annotate(fmt(k, mean), (x, mean), xytext=(9, 0), textcoords="offset points", va="center", fontsize=8)
    ax.set_xticks(xs, [s[0] for s in stats])
    ax.set_xlim(-0.5, len(stats) - 0.3)
    ax.margins(y=0.15)
    ax.grid(axis="y", alpha=0.3)
    ax.set_ylabel(name)
    n_slices = max((s[1] for s in stats), default=0)
    ax.set_title(f"Method performance: {name} ({_direction(k)})\nmean over {n_slices} slices, "
                 "whiskers: standard error across slices", fontsize=10)
    return fig


def _slice_difficulty(data: _PlotData, k: str):
    """``slice_difficulty_<key>`` (paper Figs. 5, 13): per slice, the mean over methods with standard-error whiskers
    across methods (black diamond) and each method's mean with its standard error over videos."""
    from matplotlib.figure import Figure

    table, methods, intervals, name = data.table, data.methods, data.intervals, KEY_TITLES.get(k, k)
    fig = Figure(figsize=(PLOT_WIDTH_IN, 4.4), layout="constrained")
    ax = fig.add_subplot()
    ks_slices = [s for s in data.slices if any((m, s) in table and not math.isnan(table[(m, s)].get(k, math.nan))
                                               for m in methods)]
    xs = list(range(len(ks_slices)))
    step = 0.5 / max(1, len(methods))
    for i, m in enumerate(methods):
        offset = (i - (len(methods) - 1) / 2) * step  # methods side by side around the slice's tick
        pts = [(x + offset, v, intervals.get((m, s), {}).get(k, {}).get("se")) for x, s in zip(xs, ks_slices)
               if (m, s) in table and not math.isnan(v := table[(m, s)].get(k, math.nan))]
        if pts:
            err = [e if isinstance(e, (int, float)) and math.isfinite(e) else 0.0 for _, _, e in pts]
            ax.errorbar([p[0] for p in pts], [p[1] for p in pts], yerr=err if any(err) else None, fmt="o", ms=4,
                        capsize=2, elinewidth=1, color=f"C{i % 10}", label=m)
    stats2 = [mean_se([table[(m, s)].get(k, math.nan) for m in methods if (m, s) in table]) for s in ks_slices]
    ax.errorbar(xs, [s[0] for s in stats2], yerr=[s[1] for s in stats2], fmt="D", ms=6, capsize=6,
                color="black", label="mean over methods", zorder=3)
    ax.set_xticks(xs, ks_slices, rotation=40, ha="right", fontsize=8)
    ax.margins(y=0.1)
    ax.grid(axis="y", alpha=0.3)
    ax.set_ylabel(name)
    has_iv = any(k in intervals.get((m, s), {}) for m in methods for s in ks_slices)
    ax.set_title(f"Slice difficulty: {name} ({_direction(k)})\nwhiskers: standard error across methods (◆)"
                 + (", over videos (●)" if has_iv else ""), fontsize=10)
    fig.legend(loc="outside lower center", ncols=min(4, len(methods) + 1), fontsize=8, frameon=False)
    return fig


def _sensitivity(attr: str, rows: Mapping[str, Mapping[str, float]], panels: Sequence[str]):
    """``sensitivity_<attribute>`` (Figs. 6, 9, 12): relative improvement low -> high of each method (``rows``:
    method -> key -> value), one panel per key of ``panels`` in a two-column grid, the value next to each name."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    ncols = min(2, len(panels))
    nrows = -(-len(panels) // ncols)
    fig = Figure(figsize=(PLOT_WIDTH_IN, 0.8 + (0.45 + 0.32 * len(rows)) * nrows), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False)
    for ax, k in zip(axes.flat, panels):
        ms = [m for m in rows if k in rows[m]]
        vals = [100 * rows[m][k] for m in ms]
        ys = list(range(len(ms)))[::-1]
        ax.barh(ys, vals, color=["tab:green" if v >= 0 else "tab:red" for v in vals], height=0.6)
        ax.axvline(0, color="black", lw=0.8)
        ax.set_yticks(ys, [f"{m} {v:+.1f}%" for m, v in zip(ms, vals)], fontsize=8)
        ax.tick_params(axis="x", labelsize=7)
        ax.xaxis.set_major_locator(MaxNLocator(nbins=4))  # few ticks: labels never run into each other
        ax.set_title(f"{KEY_TITLES.get(k, k)} ({UP if higher_is_better(k) else DOWN})", fontsize=9)
    for ax in list(axes.flat)[len(panels):]:
        fig.delaxes(ax)  # no empty panels
    fig.suptitle(f"Sensitivity to {attr}: relative improvement low → high (%)\n"
                 "positive = better on the high slice (sign flipped where lower is better)", fontsize=10)
    return fig


def plot_figures(table: Table, keys: Sequence[str] | None = None, intervals: Intervals | None = None):
    """``(file stem, matplotlib Figure)`` of every plot, in :func:`write_plots`' order; only computed keys.

    - ``method_performance_<key>`` (paper Fig. 4): per method, the mean over the attribute slices as a point with
      standard-error whiskers across slices, on an axis zoomed to the points (no bars from zero);
    - ``slice_difficulty_<key>`` (paper Figs. 5, 13): per slice, the mean over methods with standard-error
      whiskers across methods (black diamond) and each method's mean with its standard error over videos
      (``intervals``, :func:`video_intervals`; points only when absent);
    - ``sensitivity_<attribute>`` (Figs. 6, 9, 12): relative improvement low -> high of each method, one panel per
      key in a two-column grid, the value written next to each method's name.
    """
    methods, slices, ks = _methods(table), _slices(table), _keys(table, keys)
    attr_slices = [s for s in slices if SLICES.get(s) is not None and SLICES[s].attribute] or slices
    data = _PlotData(table, methods, slices, attr_slices, intervals or {})
    for k in ks:
        yield f"method_performance_{k}", _method_performance(data, k)
        yield f"slice_difficulty_{k}", _slice_difficulty(data, k)
    ri = relative_improvement(table)
    for attr in ATTRIBUTES:
        rows = {m: v for (a, m), v in ri.items() if a == attr}
        panels = [k for k in ks if any(k in v for v in rows.values())]
        if panels:
            yield f"sensitivity_{attr}", _sensitivity(attr, rows, panels)


def write_plots(table: Table, out_dir: str | Path, keys: Sequence[str] | None = None,
                intervals: Intervals | None = None) -> list[Path]:
    """PNG plots of :func:`plot_figures` (matplotlib Agg, fixed metadata: the same bytes for the same inputs):
    ``method_performance_<key>``, ``slice_difficulty_<key>``, ``sensitivity_<attribute>``; returns the paths."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    return [_save(fig, out_dir / f"{stem}.png") for stem, fig in plot_figures(table, keys, intervals)]


__all__ = ["PLOT_DPI", "PLOT_WIDTH_IN", "plot_figures", "write_plots"]
