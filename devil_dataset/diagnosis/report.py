"""The diagnosis report: the headline in plain words, the findings (markdown + TSV), the attribute correlations,
the groups' Table 1 with the methods compared within each group, the worst videos of each group, the attribute
distributions and the paper's sensitivity figure, and one HTML page (``index.html``) showing them all.

The groups' Table 1, the within-group method comparisons (paired sign-flip tests, Holm-adjusted, as ``devil
report``) and the sensitivity figures come from the eval report (:mod:`devil_dataset.eval.report`) reading the
groups as slices (:func:`devil_dataset.diagnosis.compare.group_documents`). The same inputs give the same bytes.

    >>> f = Finding("telea", "psnr", "fg_size", "pairs", {"mean": 38.4, "n": 8}, {"mean": 27.3, "n": 8}, -11.1, 0.001,
    ...             0.004)
    >>> headline([f], ["telea"])[0]
    'telea: fg_size separates its scores: PSNR 38.40 on low vs 27.30 on high (worse on high, Holm p = 0.004).'
"""
from __future__ import annotations

import html
import math
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from ..core.atomic import atomic_path, atomic_write_text
from ..eval.protocols.registry import higher_is_better
from ..eval.report import KEY_TITLES, fmt, plot_figures, score_table, table1_markdown, table1_tsv
from ..eval.stats import SIGNIFICANCE_ALPHA, compare_methods
from .attribute_table import AttributeTable
from .attributes import ATTRIBUTES
from .compare import CONFOUND_RANK_GAP, Finding, attribute_correlations

WORST_PER_GROUP = 3  # the worst units listed per (method, attribute, group)
FINDING_COLUMNS = ("method", "metric", "attribute", "unit", "n_low", "low_mean", "low_ci_lo", "low_ci_hi", "n_high",
                   "high_mean", "high_ci_lo", "high_ci_hi", "diff_high_minus_low", "p", "p_holm", "worse_on",
                   "confounded_by")


def _num(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return format(float(value), ".6g")


def _p(value: float) -> str:
    """A p-value in 3 significant digits; ``n/a`` where no test ran (a group of fewer than two units)."""
    return "n/a" if math.isnan(value) else f"{value:.3g}"


def _title(key: str) -> str:
    return KEY_TITLES.get(key, key)


def _sentence(f: Finding) -> str:
    conf = f"; its groups also differ in {', '.join(f.confounders)}" if f.confounders else ""
    return (f"{_title(f.key)} {fmt(f.key, f.low.get('mean'))} on low vs {fmt(f.key, f.high.get('mean'))} on high "
            f"(worse on {f.worse}, Holm p = {f.p_holm:.3g}{conf})")


def _impossible(findings: Sequence[Finding]) -> str:
    """Why no significance was possible for an attribute's findings (group sizes, the smallest attainable p)."""
    f = min(findings, key=lambda f: (2.0 if math.isnan(f.min_p_holm) else f.min_p_holm, f.key))
    sizes = f"groups of {f.low.get('n', 0)} and {f.high.get('n', 0)} {f.unit}"
    if math.isnan(f.min_p_holm):
        return f"{f.attribute} ({sizes}: too few for a test)"
    return f"{f.attribute} ({sizes}: the smallest attainable Holm p is {f.min_p_holm:.3g})"


def headline(findings: Sequence[Finding], methods: Sequence[str], unseparated: Mapping[str, str] | None = None,
             unscored: Mapping[str, str] | None = None) -> list[str]:
    """One sentence per method: the attributes that separate its scores (the first significant metric of each), then
    those that do not, then those whose groups were too small for any p below the significance level (the smallest
    p the permutation test can give these group sizes, Holm-adjusted: :func:`~devil_dataset.diagnosis.compare.
    smallest_unpaired_p`), then the attributes without a score (``unscored``) and those that do not separate the set
    itself (``unseparated``): no groups, nothing tested.

        >>> f = Finding("m", "psnr", "fg_size", "pairs", {"mean": 30.0, "n": 2}, {"mean": 20.0, "n": 2}, -10.0, 0.33,
        ...             1.0, min_p_holm=0.333)
        >>> headline([f], ["m"])[0].split(": ", 1)[1]
        'no significance was possible at alpha 0.05 for fg_size (groups of 2 and 2 pairs: the smallest attainable \
Holm p is 0.333).'
    """
    out = []
    same = [a for a in ATTRIBUTES if a in (unseparated or {}) and a not in (unscored or {})]
    empty = [a for a in ATTRIBUTES if a in (unscored or {})]
    for m in methods:
        mine = [f for f in findings if f.method == m]
        sep: dict[str, Finding] = {}
        for f in mine:
            if f.significant and f.attribute not in sep:
                sep[f.attribute] = f
        rest = [a for a in ATTRIBUTES if a not in sep and any(f.attribute == a for f in mine)]
        testable = [a for a in rest if any(f.could_be_significant for f in mine if f.attribute == a)]
        parts = [f"{a} separates its scores: {_sentence(f)}" for a, f in sep.items()]
        if testable:
            parts.append(f"no significant difference between the groups of {', '.join(testable)}")
        if len(testable) < len(rest):
            parts.append(f"no significance was possible at alpha {SIGNIFICANCE_ALPHA:g} for " + ", ".join(
                _impossible([f for f in mine if f.attribute == a]) for a in rest if a not in testable))
        if not mine:
            parts = ["no scores to compare"]
        if empty:
            parts.append("; ".join(f"{a}: {(unscored or {})[a]}" for a in empty) + "; not tested")
        if same:
            parts.append(f"{', '.join(same)} {'does' if len(same) == 1 else 'do'} not separate this set (scores too "
                         "close to form groups; not tested)")
        out.append(f"{m}: " + "; ".join(parts) + ".")
    return out


def findings_rows(findings: Sequence[Finding]) -> list[list[str]]:
    """The TSV rows of :data:`FINDING_COLUMNS`."""
    rows = []
    for f in findings:
        lo_ci = f.low.get("ci") or [math.nan, math.nan]
        hi_ci = f.high.get("ci") or [math.nan, math.nan]
        rows.append([f.method, f.key, f.attribute, f.unit, str(f.low.get("n", "")), _num(f.low.get("mean")),
                     _num(lo_ci[0]), _num(lo_ci[1]), str(f.high.get("n", "")), _num(f.high.get("mean")),
                     _num(hi_ci[0]), _num(hi_ci[1]), _num(f.diff), _num(f.p), _num(f.p_holm), f.worse,
                     ",".join(f.confounders)])
    return rows


def _md_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def group_cell(key: str, s: Mapping[str, Any]) -> str:
    """A group's mean with its interval and n; a group of fewer than two units (or an undefined interval) has no
    interval, and says why.

    >>> group_cell("psnr", {"mean": 30.0, "ci": [29.0, 31.0], "n": 5})
    '30.00 [29.00, 31.00] (n=5)'
    >>> group_cell("psnr", {"mean": 30.0, "ci": [float("nan"), float("nan")], "n": 1})
    '30.00 (n=1: no interval from one value)'
    """
    n = int(s.get("n", 0) or 0)
    lo, hi = (s.get("ci") or [None, None])[:2]
    if n < 2:
        return f"{fmt(key, s.get('mean'))} (n={n}: no interval from {'one value' if n == 1 else 'no values'})"
    if not fmt(key, lo) or not fmt(key, hi):
        return f"{fmt(key, s.get('mean'))} (n={n}: interval undefined)"
    return f"{fmt(key, s.get('mean'))} [{fmt(key, lo)}, {fmt(key, hi)}] (n={n})"


def findings_markdown(findings: Sequence[Finding]) -> str:
    """The findings as a markdown table (means with 95% intervals, difference, p, Holm p, confounders)."""
    rows = []
    for f in findings:
        lo, hi = f.low, f.high
        p_holm = f"**{_p(f.p_holm)}**" if f.significant else _p(f.p_holm)
        rows.append([f.method, _title(f.key), f.attribute, group_cell(f.key, lo), group_cell(f.key, hi),
                     _num(f.diff), _p(f.p), p_holm,
                     f.worse, ", ".join(f.confounders)])
    return _md_table(["method", "metric", "attribute", "low: mean [95% CI] (n)", "high: mean [95% CI] (n)",
                      "high - low", "p", "Holm p", "worse on", "groups also differ in"], rows)


def correlation_rows(table: AttributeTable) -> tuple[list[str], list[list[str]]]:
    """Spearman correlation matrix of the attributes (header, rows)."""
    rho = attribute_correlations(table)
    return ["attribute", *ATTRIBUTES], [[a] + ["" if math.isnan(rho[a][b]) else f"{rho[a][b]:.2f}"
                                               for b in ATTRIBUTES] for a in ATTRIBUTES]


def worst_rows(table: AttributeTable, docs: Sequence[Mapping[str, Any]], key: str) -> list[list[str]]:
    """The :data:`WORST_PER_GROUP` worst units by ``key`` of every (method, attribute, group)."""
    rows = []
    for d in docs:
        vals = [(v[key], u) for u, v in d["videos"].items() if key in v]
        vals.sort(key=lambda vu: (vu[0] if higher_is_better(key) else -vu[0], vu[1]))
        for value, unit in vals[:WORST_PER_GROUP]:
            rows.append([d["method"], d["slice"], unit, fmt(key, value)])
    return rows


def _save_png(fig, path: Path) -> Path:
    import matplotlib.pyplot as plt

    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=100, metadata={"Software": None})
    plt.close(fig)
    return path


def distribution_figure(table: AttributeTable):
    """One histogram per attribute (finite scores; the low and high groups coloured)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(ATTRIBUTES), figsize=(3.0 * len(ATTRIBUTES), 2.6))
    for ax, attr in zip(axes, ATTRIBUTES):
        finite = [r.scores[attr] for r in table.rows if math.isfinite(r.scores.get(attr, math.nan))]
        edges = np.histogram_bin_edges(finite, bins=15) if finite else 15
        for level, colour in (("", "#bbbbbb"), ("low", "#2b7bba"), ("high", "#d7301f")):
            x = [r.scores[attr] for r in table.rows if r.groups.get(attr, "") == level
                 and math.isfinite(r.scores.get(attr, math.nan))]
            if x:
                ax.hist(x, bins=edges, color=colour, label=level or "no group", alpha=0.85)
        ax.set_title(attr, fontsize=9)
        ax.tick_params(labelsize=7)
    for ax in axes:  # the legend on the first histogram drawn (an attribute may have no finite score)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
            break
    axes[0].set_ylabel("video-mask pairs", fontsize=8)
    fig.tight_layout()
    return fig


def write_plots(table: AttributeTable, docs: Sequence[Mapping[str, Any]], out: Path) -> list[Path]:
    """``attribute_distributions.png`` and the eval report's ``sensitivity_<attribute>.png`` of the groups."""
    out.mkdir(parents=True, exist_ok=True)
    paths = [_save_png(distribution_figure(table), out / "attribute_distributions.png")]
    if docs:
        for stem, fig in plot_figures(score_table(docs)):
            if stem.startswith("sensitivity_"):
                paths.append(_save_png(fig, out / f"{stem}.png"))
            else:
                import matplotlib.pyplot as plt

                plt.close(fig)
    return paths


def _rules_lines(table: AttributeTable) -> list[str]:
    return [f"- **{a}**: {table.rules.get(a, '')}" for a in ATTRIBUTES]


def diagnosis_markdown(table: AttributeTable, findings: Sequence[Finding], docs: Sequence[Mapping[str, Any]],
                       methods: Sequence[str], notes: Sequence[str] = ()) -> str:
    """The whole report as markdown."""
    lines = headline(findings, methods, table.unseparated, table.unscored)
    parts = ["# DEVIL diagnosis\n", f"{len(table.rows)} video-mask pairs, {len({r.clip_id for r in table.rows})} "
             "videos.\n", "## Headline\n", *[f"- {s}" for s in lines], "",
             "## Groups\n", *_rules_lines(table), ""]
    if findings:
        parts += ["## Low vs high, per method, metric and attribute\n",
                  f"Two-sided unpaired permutation test of the group means, Holm-adjusted over the attributes of a "
                  f"method and metric; **bold**: Holm p < {SIGNIFICANCE_ALPHA}. Video attributes compare videos, "
                  f"foreground attributes video-mask pairs. \"Groups also differ in\": the mean percentile rank of "
                  f"that attribute differs by >= {CONFOUND_RANK_GAP} between the groups.\n",
                  findings_markdown(findings)]
        comparisons = compare_methods(docs)
        parts += ["## Table 1 of the groups (methods compared within each group)\n",
                  table1_markdown(score_table(docs), comparisons=comparisons),
                  "\n**bold**: best mean per group and metric; \u2020: not significantly different from the best "
                  "(paired sign-flip permutation test over the group's units, Holm-adjusted).\n"]
        key = findings[0].key
        parts += [f"## Worst videos of each group ({_title(key)})\n",
                  _md_table(["method", "group", "video (/ mask)", _title(key)], worst_rows(table, docs, key))]
    header, rows = correlation_rows(table)
    parts += ["## Attribute correlations (Spearman, over pairs)\n", _md_table(header, rows)]
    if notes:
        parts += ["## Notes\n", *[f"- {n}" for n in notes], ""]
    return "\n".join(parts) + "\n"


def _html_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def diagnosis_html(table: AttributeTable, findings: Sequence[Finding], docs: Sequence[Mapping[str, Any]],
                   methods: Sequence[str], plots: Sequence[str]) -> str:
    """A self-contained page (plots linked relative to it)."""
    style = ("body{font-family:sans-serif;max-width:1400px;margin:auto;padding:1em}table{border-collapse:collapse;"
             "font-size:13px;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 6px}img{max-width:100%}")
    lines = headline(findings, methods, table.unseparated, table.unscored)
    body = ["<h1>DEVIL diagnosis</h1>", "<h2>Headline</h2><ul>", *[f"<li>{html.escape(s)}</li>" for s in lines],
            "</ul>",
            "<h2>Groups</h2><ul>",
            *[f"<li><b>{a}</b>: {html.escape(table.rules.get(a, ''))}</li>" for a in ATTRIBUTES], "</ul>"]
    body += [f'<img src="{html.escape(p)}" alt="{html.escape(p)}">' for p in plots]
    if findings:
        body += ["<h2>Low vs high</h2>", _html_table(FINDING_COLUMNS, findings_rows(findings)),
                 "<h2>Table 1 of the groups</h2>",
                 _html_table(*_tsv_split(table1_tsv(score_table(docs), comparisons=compare_methods(docs)))),
                 f"<h2>Worst videos of each group ({_title(findings[0].key)})</h2>",
                 _html_table(["method", "group", "video (/ mask)", findings[0].key],
                             worst_rows(table, docs, findings[0].key))]
    body += ["<h2>Attribute correlations (Spearman)</h2>", _html_table(*correlation_rows(table))]
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>DEVIL diagnosis</title><style>{style}</style>"
            f"</head><body>{''.join(body)}</body></html>\n")


def _tsv_split(text: str) -> tuple[list[str], list[list[str]]]:
    lines = text.rstrip("\n").split("\n")
    return lines[0].split("\t"), [line.split("\t") for line in lines[1:]]


def write_report(out_dir: str | Path, table: AttributeTable, findings: Sequence[Finding],
                 docs: Sequence[Mapping[str, Any]], methods: Sequence[str], notes: Sequence[str] = ()) -> list[Path]:
    """Write ``diagnosis.md``, ``diagnosis.tsv``, ``attribute_correlation.tsv``, ``groups_table1.tsv`` (with
    scores), ``plots/*.png`` and ``index.html`` into ``out_dir``; returns the paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    plots = write_plots(table, docs, out / "plots")
    paths = [atomic_write_text(out / "diagnosis.md", diagnosis_markdown(table, findings, docs, methods, notes))]
    header, rows = correlation_rows(table)
    paths.append(atomic_write_text(out / "attribute_correlation.tsv",
                                   "\n".join("\t".join(r) for r in [header, *rows]) + "\n"))
    if findings:
        paths.append(atomic_write_text(out / "diagnosis.tsv", "\n".join(
            "\t".join(r) for r in [list(FINDING_COLUMNS), *findings_rows(findings)]) + "\n"))
        paths.append(atomic_write_text(out / "groups_table1.tsv",
                                       table1_tsv(score_table(docs), comparisons=compare_methods(docs))))
    rel = [p.relative_to(out).as_posix() for p in plots]
    paths.append(atomic_write_text(out / "index.html", diagnosis_html(table, findings, docs, methods, rel)))
    return paths + plots


__all__ = ["FINDING_COLUMNS", "WORST_PER_GROUP", "diagnosis_html", "diagnosis_markdown", "findings_markdown",
           "findings_rows", "group_cell", "headline", "write_report"]
