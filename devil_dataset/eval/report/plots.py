"""The paper's figures from a score table: method performance (Fig. 4), slice difficulty (Fig. 5), sensitivity
per attribute (Figs. 6, 9, 12), as PNGs with fixed metadata (the same bytes for the same table).

Means are points with standard-error whiskers on axes zoomed to the data; only computed keys are drawn.
"""
from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

from ...core.atomic import atomic_path
from ...core.slices import ATTRIBUTES, SLICES
from ..protocols.registry import higher_is_better, key_title
from ..stats.intervals import Intervals, mean_se
from .caveats import CLIP_MARK, Caveats
from .tables import (
    DOWN,
    RELATIVE_CHANGE_NAME,
    UP,
    Table,
    _keys,
    _methods,
    _slices,
    fmt,
    relative_improvement,
)

# Figures are drawn PLOT_WIDTH_IN wide at PLOT_DPI: 660 px, shown 1:1 in the HTML report's two plot columns on a
# 1400 px screen and readable as single PNGs (legible at the page's width, nothing shrunk to ~380 px).
PLOT_DPI = 110


PLOT_WIDTH_IN = 6.0
# Method names on an x axis are wrapped at '-' / '_' into lines of at most this many characters and tilted, so that
# five or more methods' labels never run into each other.
TICK_LABEL_CHARS = 14
TICK_ROTATION = 30
# Method names beside the sensitivity bars are wrapped the same way into lines of at most this many characters.
SENSITIVITY_LABEL_CHARS = 20


def tick_label(name: str, width: int = TICK_LABEL_CHARS) -> str:
    """``name`` wrapped after '-' or '_' into lines of at most ``width`` characters (a longer part stays whole).

    >>> tick_label("aligned-copy-flow-propagation")
    'aligned-copy-\\nflow-\\npropagation'
    """
    parts, line, lines = [], "", []
    for ch in name:
        line += ch
        if ch in "-_":
            parts.append(line)
            line = ""
    parts.append(line)
    current = ""
    for part in parts:
        if current and len(current) + len(part) > width:
            lines.append(current)
            current = ""
        current += part
    lines.append(current)
    return "\n".join(x for x in lines if x)


# The width of an average character of the figures' font (DejaVu Sans) in ems, with a margin: what a title line may
# hold is computed from it (a title cut at both ends lost its clipped-videos clause).
_CHAR_EM = 0.6


def fit_title(text: str, fontsize: float, width_in: float = PLOT_WIDTH_IN) -> str:
    """``text`` with every line wrapped at spaces so that it fits a figure ``width_in`` inches wide at ``fontsize``
    points (a title is centred: a line wider than the figure is cut at both ends).

    >>> print(fit_title("mean over 10 slices, whiskers: standard error across slices; ∞n: n videos clipped", 10, 4))
    mean over 10 slices, whiskers: standard
    error across slices; ∞n: n videos clipped
    """
    chars = max(20, int((width_in * 72 - 24) / (_CHAR_EM * fontsize)))
    return "\n".join(textwrap.fill(line, chars, break_on_hyphens=False, break_long_words=False) or line
                     for line in text.split("\n"))


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
    caveats: Caveats

    def clipped(self, m: str, slices: Sequence[str], k: str) -> int:
        """Videos clipped in ``k`` over the method's cells on ``slices``."""
        return sum(self.caveats.clipped_n(m, s, k) for s in slices)


def _method_performance(data: _PlotData, k: str):
    """``method_performance_<key>`` (paper Fig. 4): per method, the mean over the attribute slices with
    standard-error whiskers across slices, on an axis zoomed to the points."""
    from matplotlib.figure import Figure

    table, name = data.table, key_title(k)
    stats = [(m, len(vals), *mean_se(vals)) for m in data.methods
             if (vals := [v for s in data.attr_slices if (m, s) in table
                          and not math.isnan(v := table[(m, s)].get(k, math.nan))])]
    fig = Figure(figsize=(PLOT_WIDTH_IN, 3.4), layout="constrained")
    ax = fig.add_subplot()
    xs = list(range(len(stats)))
    ax.errorbar(xs, [s[2] for s in stats], yerr=[s[3] for s in stats], fmt="o", ms=7, capsize=6, color="C0")
    clipped = [data.clipped(m, data.attr_slices, k) for m, *_ in stats]
    for x, (_, _, mean, _), c in zip(xs, stats, clipped):
        ax.annotate(fmt(k, mean) + (f" {CLIP_MARK}{c}" if c else ""), (x, mean), xytext=(9, 0),
                    textcoords="offset points", va="center", fontsize=8, color="tab:red" if c else "black")
    ax.set_xticks(xs, [tick_label(s[0]) for s in stats], rotation=TICK_ROTATION, ha="right", fontsize=8,
                  rotation_mode="anchor")
    ax.set_xlim(-0.5, len(stats) - 0.3)
    ax.margins(y=0.15)
    ax.grid(axis="y", alpha=0.3)
    ax.set_ylabel(name)
    n_slices = max((s[1] for s in stats), default=0)
    ax.set_title(fit_title(f"Method performance: {name} ({_direction(k)})\nmean over {n_slices} slices, "
                           "whiskers: standard error across slices"
                           + (f"; {CLIP_MARK}n: n videos clipped (the release's rule)" if any(clipped) else ""), 10),
                 fontsize=10)
    return fig


def _slice_difficulty(data: _PlotData, k: str):
    """``slice_difficulty_<key>`` (paper Figs. 5, 13): per slice, the mean over methods with standard-error whiskers
    across methods (black diamond) and each method's mean with its standard error over videos."""
    from matplotlib.figure import Figure

    table, methods, intervals, name = data.table, data.methods, data.intervals, key_title(k)
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
            hollow = [p for p, s in zip(pts, [s for s in ks_slices if (m, s) in table
                                               and not math.isnan(table[(m, s)].get(k, math.nan))])
                      if data.caveats.clipped_n(m, s, k)]
            if hollow:  # cells resting on clipped videos: a white centre
                ax.plot([p[0] for p in hollow], [p[1] for p in hollow], "o", ms=2.5, color="white", zorder=4)
    stats2 = [mean_se([table[(m, s)].get(k, math.nan) for m in methods if (m, s) in table]) for s in ks_slices]
    ax.errorbar(xs, [s[0] for s in stats2], yerr=[s[1] for s in stats2], fmt="D", ms=6, capsize=6,
                color="black", label="mean over methods", zorder=3)
    ax.set_xticks(xs, ks_slices, rotation=40, ha="right", fontsize=8)
    ax.margins(y=0.1)
    ax.grid(axis="y", alpha=0.3)
    ax.set_ylabel(name)
    has_iv = any(k in intervals.get((m, s), {}) for m in methods for s in ks_slices)
    any_clipped = any(data.caveats.clipped_n(m, s, k) for m in methods for s in ks_slices)
    ax.set_title(fit_title(f"Slice difficulty: {name} ({_direction(k)})\nwhiskers: standard error across methods (◆)"
                           + (", over videos (●)" if has_iv else "")
                           + ("; ◉ hollow: videos clipped (the release's rule)" if any_clipped else ""), 10),
                 fontsize=10)
    fig.legend(loc="outside lower center", ncols=min(4, len(methods) + 1), fontsize=8, frameon=False)
    return fig


def _sensitivity(attr: str, rows: Mapping[str, Mapping[str, float]], panels: Sequence[str],
                 clipped: Mapping[tuple[str, str], int] | None = None):
    """``sensitivity_<attribute>`` (Figs. 6, 9, 12): the symmetric relative change low -> high of each method
    (``rows``: method -> key -> value), one panel per key of ``panels`` in a two-column grid, the value next to each
    name (with ``∞n`` where n videos of the method's low and high slices were clipped: ``clipped[(method, key)]``)."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    ncols = min(2, len(panels))
    nrows = -(-len(panels) // ncols)
    names = {m: tick_label(m, SENSITIVITY_LABEL_CHARS) for m in rows}  # long names wrapped: the panel keeps its width
    lines = max((n.count("\n") + 1 for n in names.values()), default=1)
    fig = Figure(figsize=(PLOT_WIDTH_IN, 0.8 + (0.45 + 0.16 * (1 + lines) * len(rows)) * nrows), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False)
    for ax, k in zip(axes.flat, panels):
        ms = [m for m in rows if k in rows[m]]
        vals = [100 * rows[m][k] for m in ms]
        ys = list(range(len(ms)))[::-1]
        ax.barh(ys, vals, color=["tab:green" if v >= 0 else "tab:red" for v in vals], height=0.6)
        ax.axvline(0, color="black", lw=0.8)
        marks = [(f" {CLIP_MARK}{n}" if (n := (clipped or {}).get((m, k), 0)) else "") for m in ms]
        ax.set_yticks(ys, [f"{names[m]} {v:+.1f}%{c}" for m, v, c in zip(ms, vals, marks)], fontsize=8)
        ax.tick_params(axis="x", labelsize=7)
        ax.xaxis.set_major_locator(MaxNLocator(nbins=4))  # few ticks: labels never run into each other
        ax.set_title(fit_title(f"{key_title(k)} ({UP if higher_is_better(k) else DOWN})", 9,
                               PLOT_WIDTH_IN / ncols), fontsize=9)
    for ax in list(axes.flat)[len(panels):]:
        fig.delaxes(ax)  # no empty panels
    any_clipped = any((clipped or {}).values())
    fig.suptitle(fit_title(f"Sensitivity to {attr}: {RELATIVE_CHANGE_NAME} low → high, 2(hi−lo)/(|hi|+|lo|) (%)\n"
                           "positive = better on the high slice (sign flipped where lower is better)"
                           + (f"; {CLIP_MARK}n: n videos clipped" if any_clipped else ""), 10), fontsize=10)
    return fig


def plot_figures(table: Table, keys: Sequence[str] | None = None, intervals: Intervals | None = None,
                 caveats: Caveats | None = None):
    """``(file stem, matplotlib Figure)`` of every plot, in :func:`write_plots`' order; only computed keys.

    - ``method_performance_<key>`` (paper Fig. 4): per method, the mean over the attribute slices as a point with
      standard-error whiskers across slices, on an axis zoomed to the points (no bars from zero);
    - ``slice_difficulty_<key>`` (paper Figs. 5, 13): per slice, the mean over methods with standard-error
      whiskers across methods (black diamond) and each method's mean with its standard error over videos
      (``intervals``, :func:`video_intervals`; points only when absent);
    - ``sensitivity_<attribute>`` (Figs. 6, 9, 12): the symmetric relative change low -> high of each method
      (:func:`~devil_dataset.eval.report.tables.relative_improvement`), one panel per key in a two-column grid, the
      value written next to each method's name.

    ``caveats`` (:class:`~devil_dataset.eval.report.caveats.Caveats`): values resting on clipped videos carry
    ``∞n`` (method performance, sensitivity) or a hollow point (slice difficulty), explained in the title.
    """
    methods, slices, ks = _methods(table), _slices(table), _keys(table, keys)
    attr_slices = [s for s in slices if SLICES.get(s) is not None and SLICES[s].attribute] or slices
    data = _PlotData(table, methods, slices, attr_slices, intervals or {}, caveats or Caveats())
    for k in ks:
        yield f"method_performance_{k}", _method_performance(data, k)
        yield f"slice_difficulty_{k}", _slice_difficulty(data, k)
    ri = relative_improvement(table)
    for attr in ATTRIBUTES:
        rows = {m: v for (a, m), v in ri.items() if a == attr}
        panels = [k for k in ks if any(k in v for v in rows.values())]
        if panels:
            clipped = {(m, k): data.clipped(m, (f"{attr}_low", f"{attr}_high"), k) for m in rows for k in panels}
            yield f"sensitivity_{attr}", _sensitivity(attr, rows, panels, clipped)


def write_plots(table: Table, out_dir: str | Path, keys: Sequence[str] | None = None,
                intervals: Intervals | None = None, caveats: Caveats | None = None) -> list[Path]:
    """PNG plots of :func:`plot_figures` (matplotlib Agg, fixed metadata: the same bytes for the same inputs):
    ``method_performance_<key>``, ``slice_difficulty_<key>``, ``sensitivity_<attribute>``; returns the paths."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    return [_save(fig, out_dir / f"{stem}.png") for stem, fig in plot_figures(table, keys, intervals, caveats)]


__all__ = ["PLOT_DPI", "PLOT_WIDTH_IN", "TICK_LABEL_CHARS", "fit_title", "plot_figures", "tick_label", "write_plots"]
