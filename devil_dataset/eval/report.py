"""Tables and plots from results documents: the paper's Table 1, relative improvements, Figs. 4-5 and 6/9/12.

- :func:`score_table` collects ``{(method, slice): {key: value}}`` from results documents;
- :func:`table1_markdown` / :func:`table1_tsv`: methods x slices x metrics with the release's number formats
  (registry ``formats``) and arrows for the better direction (▲ higher, ▼ lower); best method per slice in bold;
- :func:`relative_improvement`: (hi - lo) / lo per attribute (negated where lower is better; paper section 6.2);
- :func:`write_plots`: method performance (paper Fig. 4: mean over slices, standard-error bars), slice
  difficulty (Fig. 5: mean over methods, standard-error bars, one marker per method) and sensitivity per
  attribute (Figs. 6, 9, 12: relative improvement of each method, one panel per metric).

    >>> t = {("A", "fg_size_low"): {"psnr": 30.0}, ("A", "fg_size_high"): {"psnr": 27.0}}
    >>> round(relative_improvement(t)[("fg_size", "A")]["psnr"], 3)
    -0.1
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from ..core.atomic import atomic_path, atomic_write_text
from ..core.errors import DevilError
from ..core.slices import ATTRIBUTES, SLICES
from .registry import METRICS, higher_is_better

Table = dict[tuple[str, str], dict[str, float]]

# Column titles of the report (paper Table 1 names); unknown keys use the key itself.
KEY_TITLES: dict[str, str] = {
    "psnr": "PSNR", "ssim": "SSIM", "lpips": "LPIPS", "pvcs": "PVCS", "fid": "FID", "vfid": "VFID",
    "vfid_clips": "VFID (clips)", "warp_error_mask": "Warp error (mask)", "pcons_psnr_mask": "PCons",
}
# key -> the release's number format, from the registry (one source of truth; the better direction is
# :func:`~devil_dataset.eval.registry.higher_is_better`).
KEY_FORMATS: dict[str, str] = {k: fmt for e in METRICS.values() for k, fmt in zip(e.keys, e.formats)}
KEY_ORDER: tuple[str, ...] = tuple(KEY_FORMATS)
UP, DOWN = "\u25b2", "\u25bc"  # paper Table 1: ▲ higher is better, ▼ lower is better


def score_table(docs: Iterable[Mapping]) -> Table:
    """``(method, slice) -> summary`` from results documents; duplicates raise one error naming them all."""
    table: Table = {}
    dupes = []
    for doc in docs:
        key = (str(doc.get("method") or "?"), str(doc.get("slice") or "-"))
        if key in table:
            dupes.append(f"{key[0]} on {key[1]}")
        table[key] = {k: float(v) for k, v in doc["summary"].items()}
    if dupes:
        raise DevilError("results given twice for: " + ", ".join(dupes))
    return table


def _methods(table: Table) -> list[str]:
    return list(dict.fromkeys(m for m, _ in table))


def _slices(table: Table) -> list[str]:
    present = {s for _, s in table}
    return [s for s in SLICES if s in present] + sorted(present - set(SLICES))


def _keys(table: Table, keys: Sequence[str] | None = None) -> list[str]:
    present = {k for row in table.values() for k in row}
    if keys is not None:
        return [k for k in keys if k in present]
    return [k for k in KEY_ORDER if k in present] + sorted(present - set(KEY_ORDER))


def title(key: str) -> str:
    """Column title with the better-direction arrow, e.g. ``PSNR ▲``."""
    return f"{KEY_TITLES.get(key, key)} {UP if higher_is_better(key) else DOWN}"


def fmt(key: str, value: float | None) -> str:
    """A value in the release's format for its key (``.4f`` for unknown keys); empty when missing."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return format(value, KEY_FORMATS.get(key, ".4f"))


def _best(table: Table, slice_name: str, key: str, methods: list[str]) -> str | None:
    vals = [(table[(m, slice_name)][key], m) for m in methods
            if (m, slice_name) in table and key in table[(m, slice_name)]
            and not math.isnan(table[(m, slice_name)][key])]
    if len(vals) < 2:
        return None
    best = max(v for v, _ in vals) if higher_is_better(key) else min(v for v, _ in vals)
    winners = [m for v, m in vals if fmt(key, v) == fmt(key, best)]
    return winners[0] if len(winners) == 1 else None


def _rows(table: Table, keys: Sequence[str] | None, bold: bool) -> tuple[list[str], list[list[str]]]:
    ks = _keys(table, keys)
    methods = _methods(table)
    header = ["slice", "method"] + [title(k) for k in ks]
    rows = []
    for s in _slices(table):
        best = {k: _best(table, s, k, methods) for k in ks} if bold else {}
        for m in methods:
            if (m, s) not in table:
                continue
            cells = []
            for k in ks:
                text = fmt(k, table[(m, s)].get(k))
                cells.append(f"**{text}**" if bold and text and best.get(k) == m else text)
            rows.append([s, m] + cells)
    return header, rows


def _markdown(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] * 2 + ["---:"] * (len(header) - 2)) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def _tsv(header: list[str], rows: list[list[str]]) -> str:
    return "\n".join("\t".join(r) for r in [header] + rows) + "\n"


def table1_markdown(table: Table, keys: Sequence[str] | None = None) -> str:
    """Paper Table 1 as markdown: one row per (slice, method), best method per slice and metric in bold.

    >>> print(table1_markdown({("A", "all"): {"psnr": 36.6234, "lpips": 0.0273449}}), end="")
    | slice | method | PSNR ▲ | LPIPS ▼ |
    |---|---|---:|---:|
    | all | A | 36.62 | 0.027345 |
    """
    return _markdown(*_rows(table, keys, bold=True))


def table1_tsv(table: Table, keys: Sequence[str] | None = None) -> str:
    """Paper Table 1 as TSV (no bold), same columns and formats as :func:`table1_markdown`."""
    return _tsv(*_rows(table, keys, bold=False))


def relative_improvement(table: Table) -> dict[tuple[str, str], dict[str, float]]:
    """``(attribute, method) -> {key: (hi - lo) / lo}``, negated where lower is better (paper section 6.2).

    Only attributes whose low and high slices both have results for the method; a zero low score is skipped.
    """
    out: dict[tuple[str, str], dict[str, float]] = {}
    for attr in ATTRIBUTES:
        for m in _methods(table):
            lo, hi = table.get((m, f"{attr}_low")), table.get((m, f"{attr}_high"))
            if lo is None or hi is None:
                continue
            row = {}
            for k in _keys(table):
                if k in lo and k in hi and lo[k] != 0 and not (math.isnan(lo[k]) or math.isnan(hi[k])):
                    r = (hi[k] - lo[k]) / lo[k]
                    row[k] = r if higher_is_better(k) else -r
            out[(attr, m)] = row
    return out


def _ri_rows(table: Table, keys: Sequence[str] | None) -> tuple[list[str], list[list[str]]]:
    ri = relative_improvement(table)
    ks = _keys(table, keys)
    header = ["attribute", "method"] + [KEY_TITLES.get(k, k) for k in ks]
    rows = [[a, m] + [format(v[k], "+.2%") if k in v else "" for k in ks] for (a, m), v in ri.items()]
    return header, rows


def relative_improvement_markdown(table: Table, keys: Sequence[str] | None = None) -> str:
    """Relative improvement low -> high per attribute and method, as signed percentages (markdown).

    >>> t = {("A", "fg_size_low"): {"lpips": 0.05}, ("A", "fg_size_high"): {"lpips": 0.04}}
    >>> print(relative_improvement_markdown(t), end="")
    | attribute | method | LPIPS |
    |---|---|---:|
    | fg_size | A | +20.00% |
    """
    return _markdown(*_ri_rows(table, keys))


def relative_improvement_tsv(table: Table, keys: Sequence[str] | None = None) -> str:
    """Relative improvement as TSV (see :func:`relative_improvement_markdown`)."""
    return _tsv(*_ri_rows(table, keys))


def _mean_se(values: list[float]) -> tuple[float, float]:
    vals = [v for v in values if not math.isnan(v)]
    if not vals:
        return float("nan"), 0.0
    mean = sum(vals) / len(vals)
    if len(vals) < 2:
        return mean, 0.0
    var = sum((v - mean) ** 2 for v in vals) / (len(vals) - 1)
    return mean, math.sqrt(var / len(vals))


def _save(fig, path: Path) -> Path:
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=120, metadata={"Software": None})
    return path


def write_plots(table: Table, out_dir: str | Path, keys: Sequence[str] | None = None) -> list[Path]:
    """PNG plots (matplotlib Agg): ``method_performance_<key>``, ``slice_difficulty_<key>``,
    ``sensitivity_<attribute>``; returns the written paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    methods, slices, ks = _methods(table), _slices(table), _keys(table, keys)
    attr_slices = [s for s in slices if SLICES.get(s) is not None and SLICES[s].attribute] or slices
    for k in ks:
        arrow = "higher is better" if higher_is_better(k) else "lower is better"
        # Fig. 4: mean of each method over the (attribute) slices, standard error across slices.
        stats = [_mean_se([table[(m, s)].get(k, float("nan")) for s in attr_slices if (m, s) in table])
                 for m in methods]
        fig, ax = plt.subplots(figsize=(max(4, 0.9 * len(methods) + 2), 3.5))
        ax.bar(methods, [s[0] for s in stats], yerr=[s[1] for s in stats], capsize=4, color="tab:blue")
        ax.set_ylabel(KEY_TITLES.get(k, k))
        ax.set_title(f"Mean {KEY_TITLES.get(k, k)} over slices ({arrow})")
        ax.tick_params(axis="x", rotation=30)
        fig.tight_layout()
        written.append(_save(fig, out_dir / f"method_performance_{k}.png"))
        plt.close(fig)
        # Fig. 5: per slice, mean over methods with standard error across methods; a marker per method.
        stats = [_mean_se([table[(m, s)].get(k, float("nan")) for m in methods if (m, s) in table]) for s in slices]
        fig, ax = plt.subplots(figsize=(max(5, 0.7 * len(slices) + 2), 4))
        xs = list(range(len(slices)))
        ax.bar(xs, [s[0] for s in stats], yerr=[s[1] for s in stats], capsize=4, color="lightgray",
               label="mean over methods")
        for i, m in enumerate(methods):
            pts = [(x, table[(m, s)][k]) for x, s in zip(xs, slices) if (m, s) in table and k in table[(m, s)]]
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], "o", ms=4, label=m, color=f"C{i % 10}")
        ax.set_xticks(xs, slices, rotation=45, ha="right")
        ax.set_ylabel(KEY_TITLES.get(k, k))
        ax.set_title(f"Slice difficulty: {KEY_TITLES.get(k, k)} ({arrow})")
        ax.legend(fontsize=7)
        fig.tight_layout()
        written.append(_save(fig, out_dir / f"slice_difficulty_{k}.png"))
        plt.close(fig)
    # Figs. 6, 9, 12: relative improvement low -> high per attribute, one panel per metric, a bar per method.
    ri = relative_improvement(table)
    for attr in ATTRIBUTES:
        rows = {m: v for (a, m), v in ri.items() if a == attr}
        if not rows:
            continue
        fig, axes = plt.subplots(1, len(ks), figsize=(max(4, 2.6 * len(ks)), 3.5), squeeze=False)
        for ax, k in zip(axes[0], ks):
            ms = [m for m in rows if k in rows[m]]
            vals = [100 * rows[m][k] for m in ms]
            ax.bar(ms, vals, color=["tab:green" if v >= 0 else "tab:red" for v in vals])
            ax.axhline(0, color="black", lw=0.8)
            ax.set_title(KEY_TITLES.get(k, k))
            ax.tick_params(axis="x", rotation=45)
        axes[0][0].set_ylabel("relative improvement (%)")
        fig.suptitle(f"{attr}: low -> high")
        fig.tight_layout()
        written.append(_save(fig, out_dir / f"sensitivity_{attr}.png"))
        plt.close(fig)
    return written


def write_report(
    table: Table, out_dir: str | Path, keys: Sequence[str] | None = None, plots: bool = True
) -> list[Path]:
    """Write ``table1.md``, ``table1.tsv``, ``relative_improvement.md/.tsv`` and (optionally) the plots."""
    out_dir = Path(out_dir)
    written = [
        atomic_write_text(out_dir / "table1.md", table1_markdown(table, keys)),
        atomic_write_text(out_dir / "table1.tsv", table1_tsv(table, keys)),
        atomic_write_text(out_dir / "relative_improvement.md", relative_improvement_markdown(table, keys)),
        atomic_write_text(out_dir / "relative_improvement.tsv", relative_improvement_tsv(table, keys)),
    ]
    if plots:
        written += write_plots(table, out_dir, keys)
    return written
