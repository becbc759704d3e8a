"""Tables and plots from results documents: the paper's Table 1, relative improvements, Figs. 4-5 and 6/9/12.

- :func:`score_table` collects ``{(method, slice): {key: value}}`` from results documents;
- :func:`table1_markdown` / :func:`table1_tsv`: methods x slices x metrics with the release's number formats
  (registry ``formats``) and arrows for the better direction (▲ higher, ▼ lower); best method per slice in bold;
- :func:`relative_improvement`: the symmetric relative change 2 (hi - lo) / (|hi| + |lo|) per attribute (negated where
  lower is better), bounded to +/-200% where the paper's (hi - lo) / lo (section 6.2) explodes for a low score near
  zero (a warp error of 0.0003 gave -4441.67%); for positive scores it orders methods as the paper's ratio does;
- :func:`write_plots`: method performance (paper Fig. 4: mean over slices, standard-error whiskers), slice
  difficulty (Fig. 5: mean over methods, standard-error whiskers, each method with its standard error over
  videos from :func:`video_intervals`) and sensitivity per attribute (Figs. 6, 9, 12: relative improvement of
  each method, one panel per metric in a grid); means are points with whiskers on axes zoomed to the data, only
  computed keys are drawn (:func:`skipped_metrics` / :func:`skipped_line` say what was not computed and why).

    >>> t = {("A", "fg_size_low"): {"psnr": 30.0}, ("A", "fg_size_high"): {"psnr": 27.0}}
    >>> round(relative_improvement(t)[("fg_size", "A")]["psnr"], 4)
    -0.1053
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

from ...core.errors import DevilError
from ...core.slices import ATTRIBUTES, SLICES
from ..metrics.registry import METRICS
from ..protocols.registry import higher_is_better, key_format, key_title, known_result_keys, result_keys
from ..stats.intervals import BOOTSTRAP_METHOD, result_cell
from ..stats.jackknife import JACKKNIFE_GROUPS
from ..stats.significance import SIGNIFICANCE_ALPHA, indistinguishable_from_best
from .caveats import CLIP_MARK, Caveats, clip_mark, significance_floor_note

Table = dict[tuple[str, str], dict[str, float]]

# Column titles, number formats and the better direction of every result key come from the protocols' declarations
# (:func:`~devil_dataset.eval.protocols.registry.key_title`, :func:`~devil_dataset.eval.protocols.registry.key_format`,
# :func:`~devil_dataset.eval.protocols.registry.higher_is_better`), read when a table is drawn (a protocol registered
# later is reported alike). The three names below are the package's protocols' tables, for readers of the module.
KEY_TITLES: dict[str, str] = {k: v.title for k, v in result_keys().items()}
KEY_FORMATS: dict[str, str] = {k: v.format for k, v in result_keys().items()}
KEY_ORDER: tuple[str, ...] = known_result_keys()
UP, DOWN = "\u25b2", "\u25bc"  # paper Table 1: ▲ higher is better, ▼ lower is better


def score_table(docs: Iterable[Mapping]) -> Table:
    """``(method, slice) -> summary`` from results documents; duplicates raise one error naming them all."""
    table: Table = {}
    dupes = []
    for doc in docs:
        key = result_cell(doc)
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
    present = {k for row in table.values() for k, v in row.items() if not math.isnan(v)}  # computed somewhere
    if keys is not None:
        return [k for k in keys if k in present]
    return [k for k in known_result_keys() if k in present] + sorted(present - set(known_result_keys()))


def title(key: str) -> str:
    """Column title with the better-direction arrow, e.g. ``PSNR ▲``."""
    return f"{key_title(key)} {UP if higher_is_better(key) else DOWN}"


def fmt(key: str, value: float | None, tolerance: float = 0.0) -> str:
    """A value in its key's format (the registry's: the release's for DEVIL's keys, four significant digits for
    E_warp; ``.4f`` for unknown keys); empty when missing.

    ``tolerance``: the relative amount by which the value may differ on another CPU (a network metric computed where
    the CPU pins were not in force, :func:`cpu_tolerances`); the value then keeps only the significant digits that
    hold (4 for 1e-4), never more decimals than the release's format.

    >>> fmt("lpips", 0.0273449), fmt("lpips", 0.0273449, 1e-4), fmt("fid", 16.63504, 1e-4)
    ('0.027345', '0.02734', '16.64')
    >>> fmt("ewarp", 0.000512), fmt("ewarp", 0.0013)  # four significant digits, as the papers' E_warp x 10^-3
    ('0.0005120', '0.001300')
    """
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    spec = key_format(key)
    if spec.startswith("sig"):  # significant digits in fixed notation (E_warp: 0.0005120, not 0.0005)
        digits = int(spec[3:])
        decimals = digits - 1 - math.floor(math.log10(abs(value))) if math.isfinite(value) and value != 0 else 0
        spec = f".{max(0, decimals)}f"
    if tolerance > 0 and math.isfinite(value) and value != 0 and spec.endswith("f"):
        significant = max(1, math.floor(-math.log10(tolerance)))
        decimals = max(0, significant - 1 - math.floor(math.log10(abs(value))))
        spec = f".{min(decimals, int(spec[1:-1]))}f"
    return format(value, spec)


def cpu_tolerances(docs: Iterable[Mapping]) -> dict[str, float]:
    """Result key -> the largest relative CPU tolerance its metric's provenance records in ``docs``:
    0 (left out) where the values are bit-identical on every x86-64 CPU with AVX2, ``NETWORK_CPU_TOLERANCE`` for a
    network metric computed without the CPU pins.

    >>> doc = {"provenance": {"metrics": {"lpips": {"arithmetic": {"tolerance_rel": 1e-4}}}}}
    >>> cpu_tolerances([doc])
    {'lpips': 0.0001}
    """
    out: dict[str, float] = {}
    for doc in docs:
        for name, prov in ((doc.get("provenance") or {}).get("metrics") or {}).items():
            arithmetic = prov.get("arithmetic") if isinstance(prov, Mapping) else None
            tol = float(arithmetic.get("tolerance_rel") or 0.0) if isinstance(arithmetic, Mapping) else 0.0
            if tol > 0 and name in METRICS:
                for key in METRICS[name].keys:
                    out[key] = max(out.get(key, 0.0), tol)
    return out


def tolerance_legend(tolerances: Mapping[str, float]) -> str:
    """The legend line of :func:`cpu_tolerances` (empty when every value is bit-reproducible).

    >>> tolerance_legend({"lpips": 1e-4})  # doctest: +ELLIPSIS
    'LPIPS: 4 significant digits ...'
    """
    if not tolerances:
        return ""
    names = ", ".join(key_title(k) for k in tolerances)
    tol = max(tolerances.values())
    return (f"{names}: {max(1, math.floor(-math.log10(tol)))} significant digits (computed where the CPU pins were "
            f"not in force: other CPUs give values within {tol:g} relative; see docs/reliability.md).\n")


def _best(table: Table, slice_name: str, key: str, methods: list[str], tolerance: float = 0.0,
          caveats: Caveats | None = None) -> str | None:
    """The best method of (slice, key) among two or more values; None on a tie, and (``caveats``) when a cell rests
    on clipped videos (the order is not decided) or among the cells scored differently (never best)."""
    vals = [(table[(m, slice_name)][key], m) for m in methods
            if (m, slice_name) in table and key in table[(m, slice_name)]
            and not math.isnan(table[(m, slice_name)][key])]
    if len(vals) < 2:
        return None
    if caveats is not None:
        if caveats.undecided(slice_name, key, [m for _, m in vals]):
            return None
        vals = [(v, m) for v, m in vals if (m, slice_name) not in caveats.mixed]
        if len(vals) < 2:  # best among the results scored alike only
            return None
    best = max(v for v, _ in vals) if higher_is_better(key) else min(v for v, _ in vals)
    winners = [m for v, m in vals if fmt(key, v, tolerance) == fmt(key, best, tolerance)]
    return winners[0] if len(winners) == 1 else None


def _ci_text(key: str, u: Mapping | None, ci: str) -> str:
    """`` ± se`` or `` [lo, hi]`` for a cell (``ci``: ``se`` or ``interval``); empty when not known."""
    if not u:
        return ""
    if ci == "se":
        se = u.get("se")
        return "" if se is None or math.isnan(float(se)) else f" ± {fmt(key, float(se))}"
    lo, hi = (u.get("ci") or [None, None])[:2]
    if lo is None or hi is None or math.isnan(float(lo)) or math.isnan(float(hi)):
        return ""
    return f" [{fmt(key, float(lo))}, {fmt(key, float(hi))}]"


@dataclass(frozen=True)
class _Marks:
    """What Table 1's cells carry besides their mean: significance marks (``comparisons``), the uncertainty (``ci``
    from ``uncertainty``), CPU tolerances and the caveats (clipped videos, mixed scoring)."""

    comparisons: Sequence[Mapping] | None = None
    uncertainty: Mapping[tuple[str, str], Mapping[str, Mapping]] | None = None
    ci: str | None = None
    tolerances: Mapping[str, float] = field(default_factory=dict)
    caveats: Caveats = field(default_factory=Caveats)


def _tsv_header(ks: Sequence[str], mk: _Marks) -> list[str]:
    """TSV: numbers stay numbers; the interval, the marks and the clipped counts get their own columns."""
    extra = {"se": ["se"], "interval": ["ci low", "ci high"]}.get(mk.ci or "", [])
    clip_keys = {k for c in mk.caveats.clipped.values() for k in c}
    return ["slice", "method"] + [c for k in ks for c in
                                  [title(k)] + [f"{title(k)} {e}" for e in extra]
                                  + ([f"{title(k)} vs best"] if mk.comparisons is not None else [])
                                  + ([f"{title(k)} clipped videos"] if k in clip_keys else [])] + (
        ["scored differently"] if mk.caveats.mixed else [])


def _tsv_cells(cell: tuple[str, str, str], table: Table, mk: _Marks, mark: str) -> list[str]:
    m, s, k = cell
    u = (mk.uncertainty or {}).get((m, s), {}).get(k)
    cells = [fmt(k, table[(m, s)].get(k), mk.tolerances.get(k, 0.0))]
    if mk.ci == "se":
        cells.append(fmt(k, None if not u or u.get("se") is None else float(u["se"])))
    elif mk.ci == "interval":
        lo, hi = (u.get("ci") or [None, None])[:2] if u else (None, None)
        cells += [fmt(k, None if lo is None else float(lo)), fmt(k, None if hi is None else float(hi))]
    if mk.comparisons is not None:
        cells.append(mark)
    if k in {key for c in mk.caveats.clipped.values() for key in c}:
        cells.append(str(mk.caveats.clipped_n(m, s, k)))
    return cells


def _markdown_cell(cell: tuple[str, str, str], table: Table, mk: _Marks, mark: str) -> str:
    m, s, k = cell
    text = fmt(k, table[(m, s)].get(k), mk.tolerances.get(k, 0.0))
    if not text:
        return text
    u = (mk.uncertainty or {}).get((m, s), {}).get(k)
    text += (_ci_text(k, u, mk.ci) if mk.ci else "") + mk.caveats.mark(m, s, k)
    return f"**{text}**" if mark == "best" else f"{text}\u2020" if mark == "n.s." else text


def _rows(table: Table, keys: Sequence[str] | None, bold: bool, mk: _Marks) -> tuple[list[str], list[list[str]]]:
    if mk.ci not in (None, "se", "interval"):
        raise DevilError(f"ci: expected 'se' or 'interval', got {mk.ci!r}")
    ks = _keys(table, keys)
    methods = _methods(table)
    marks = mk.comparisons is not None
    header = ["slice", "method"] + [title(k) for k in ks] if bold else _tsv_header(ks, mk)
    rows = []
    for s in _slices(table):
        best = {k: _best(table, s, k, methods, mk.tolerances.get(k, 0.0), mk.caveats) for k in ks}
        ties = {k: indistinguishable_from_best(mk.comparisons or (), s, k, b) for k, b in best.items()
                if b is not None and marks}
        for m in [m for m in methods if (m, s) in table]:
            cells = []
            for k in ks:
                has = bool(fmt(k, table[(m, s)].get(k)))
                mark = "best" if has and best.get(k) == m and (bold or marks) else \
                    "n.s." if has and m in ties.get(k, ()) and (m, s) not in mk.caveats.mixed else ""
                if bold:
                    cells.append(_markdown_cell((m, s, k), table, mk, mark))
                else:
                    cells += _tsv_cells((m, s, k), table, mk, mark)
            if not bold and mk.caveats.mixed:
                cells.append(mk.caveats.mixed.get((m, s), ""))
            rows.append([s, m] + cells)
    return header, rows


def table1_legend(ci: str | None = None, level: float = 0.95, marks: bool = True,
                  set_level: Sequence[str] = ()) -> str:
    """The line under Table 1 saying what bold, the dagger and the +/- or brackets mean (test and level);
    ``set_level``: the keys whose cells carry a jackknife interval (FID, VFID with ``--set-level-ci``).

    >>> table1_legend(marks=False)
    '**bold**: best mean per slice and metric.\\n'
    >>> table1_legend("se", marks=False, set_level=["fid"])  # doctest: +ELLIPSIS
    '...; FID: delete-a-group jackknife standard error over 10 groups of videos.\\n'
    """

    parts = ["**bold**: best mean per slice and metric"]
    if marks:
        parts.append(f"\u2020: not significantly different from the best (two-sided paired sign-flip permutation "
                     f"test over the slice's videos, Holm-adjusted across the method pairs of the slice and metric, "
                     f"\u03b1 = {SIGNIFICANCE_ALPHA:g})")
    if ci == "se":
        parts.append("\u00b1: standard error over videos (sample std / \u221an)")
    elif ci == "interval":
        parts.append(f"[lo, hi]: {100 * level:g}% {BOOTSTRAP_METHOD} bootstrap interval over videos")
    if ci and set_level:
        names = ", ".join(key_title(k) for k in set_level)
        what = "standard error" if ci == "se" else f"{100 * level:g}% t interval"
        parts.append(f"{names}: delete-a-group jackknife {what} over {JACKKNIFE_GROUPS} groups of videos")
    return "; ".join(parts) + ".\n"


def _set_level_keys(uncertainty: Mapping[tuple[str, str], Mapping[str, Mapping]] | None,
                    keys: Sequence[str]) -> list[str]:
    """The keys of ``keys`` whose intervals (any method, slice) come from the set-level jackknife."""
    found = {k for block in (uncertainty or {}).values() for k, u in block.items()
             if str((u or {}).get("method", "")).startswith("jackknife")}
    return [k for k in keys if k in found]


def _markdown(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] * 2 + ["---:"] * (len(header) - 2)) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def _tsv(header: list[str], rows: list[list[str]]) -> str:
    return "\n".join("\t".join(r) for r in [header] + rows) + "\n"


def table1_notes(table: Table, keys: Sequence[str] | None = None, *,
                 comparisons: Sequence[Mapping] | None = None,
                 uncertainty: Mapping[tuple[str, str], Mapping[str, Mapping]] | None = None,
                 ci: str | None = None, tolerances: Mapping[str, float] | None = None,
                 caveats: Caveats | None = None) -> str:
    """What Table 1's marks mean, as the lines under the markdown table (and ``table1_notes.md`` beside the TSV):
    the legend (bold, †, ± / intervals), the caveats (``∞n`` clipped videos, ``§`` mixed scoring), the CPU
    tolerances and, when no method difference can reach significance, that sentence; empty when there is nothing
    to say.

    >>> table1_notes({("A", "s"): {"psnr": 30.0}}, caveats=Caveats(clipped={("A", "s"): {"psnr": 2}})).split(":")[0]
    '∞n'
    """
    ks = _keys(table, keys)
    cav = caveats or Caveats()
    lines = []
    if comparisons is not None or ci:
        lines.append(table1_legend(ci, marks=comparisons is not None,
                                   set_level=_set_level_keys(uncertainty, ks)).rstrip("\n"))
    if cav.legend(ks):
        lines.append(cav.legend(ks) + ".")
    floor = significance_floor_note(comparisons)
    if floor:
        lines.append(floor)
    shown = {k: t for k, t in (tolerances or {}).items() if k in ks}
    if shown:
        lines.append(tolerance_legend(shown).rstrip("\n"))
    return "".join(line + "\n" for line in lines)


def table1_markdown(table: Table, keys: Sequence[str] | None = None, *,
                    comparisons: Sequence[Mapping] | None = None,
                    uncertainty: Mapping[tuple[str, str], Mapping[str, Mapping]] | None = None,
                    ci: str | None = None, tolerances: Mapping[str, float] | None = None,
                    caveats: Caveats | None = None) -> str:
    """Paper Table 1 as markdown: one row per (slice, method), best method per slice and metric in bold.

    With ``comparisons`` (:func:`~devil_dataset.eval.stats.significance.compare_methods`) the methods not significantly
    different from the best carry a dagger; ``ci`` (``"se"`` or ``"interval"``) adds each cell's standard error or
    bootstrap interval from ``uncertainty`` (:func:`video_intervals`); ``tolerances`` (:func:`cpu_tolerances`) cuts
    network metrics computed without the CPU pins to the digits that hold; ``caveats``
    (:class:`~devil_dataset.eval.report.caveats.Caveats`) marks cells resting on clipped videos (``∞n``, never best)
    and cells scored differently (``§``, never best). The legend (:func:`table1_notes`) follows the table.

    >>> print(table1_markdown({("A", "all"): {"psnr": 36.6234, "lpips": 0.0273449}}), end="")
    | slice | method | PSNR ▲ | LPIPS ▼ |
    |---|---|---:|---:|
    | all | A | 36.62 | 0.027345 |
    """
    mk = _Marks(comparisons, uncertainty, ci, dict(tolerances or {}), caveats or Caveats())
    text = _markdown(*_rows(table, keys, True, mk))
    notes = table1_notes(table, keys, comparisons=comparisons, uncertainty=uncertainty, ci=ci, tolerances=tolerances,
                         caveats=caveats)
    return text + ("\n" + notes if notes else "")


def table1_tsv(table: Table, keys: Sequence[str] | None = None, *,
               comparisons: Sequence[Mapping] | None = None,
               uncertainty: Mapping[tuple[str, str], Mapping[str, Mapping]] | None = None,
               ci: str | None = None, tolerances: Mapping[str, float] | None = None,
               caveats: Caveats | None = None) -> str:
    """Paper Table 1 as TSV (no bold), same columns and formats as :func:`table1_markdown`; with ``ci`` and
    ``comparisons``, extra columns per metric (``se`` or ``ci low``/``ci high``; ``vs best``: best / n.s.); with
    clipped videos, ``<metric> clipped videos`` (a count) per metric that has any; with mixed scoring, ``scored
    differently`` (the differing fields). What the marks mean: :func:`table1_notes` (``table1_notes.md``)."""
    mk = _Marks(comparisons, uncertainty, ci, dict(tolerances or {}), caveats or Caveats())
    return _tsv(*_rows(table, keys, False, mk))


# What :func:`relative_improvement` computes, as tables, figures and findings name it.
RELATIVE_CHANGE_NAME = "symmetric relative change"


def symmetric_change(lo: float, hi: float) -> float:
    """``2 (hi - lo) / (|hi| + |lo|)``: the relative change low -> high, bounded to [-2, 2] (+/-200%), symmetric
    (swapping low and high flips the sign only) and defined when one of the two is zero; NaN when both are.
    For positive scores it is ``2r / (2 + r)`` of the paper's ratio ``r = (hi - lo) / lo``: the same order.

    >>> symmetric_change(0.0003, 0.0136), symmetric_change(30.0, 27.0) == -symmetric_change(27.0, 30.0)
    (1.9136690647482015, True)
    """
    den = abs(hi) + abs(lo)
    return 2.0 * (hi - lo) / den if den > 0 else float("nan")


def relative_improvement(table: Table) -> dict[tuple[str, str], dict[str, float]]:
    """``(attribute, method) -> {key: symmetric relative change low -> high}`` (:func:`symmetric_change`), negated
    where lower is better, so a positive value means better on the high slice (the paper's section 6.2 uses
    (hi - lo) / lo, unbounded near a zero low score).

    Only attributes whose low and high slices both have results for the method; keys where both are zero are skipped.
    """
    out: dict[tuple[str, str], dict[str, float]] = {}
    for attr in ATTRIBUTES:
        for m in _methods(table):
            lo, hi = table.get((m, f"{attr}_low")), table.get((m, f"{attr}_high"))
            if lo is None or hi is None:
                continue
            row = {}
            for k in _keys(table):
                if k in lo and k in hi and math.isfinite(lo[k]) and math.isfinite(hi[k]):
                    r = symmetric_change(lo[k], hi[k])
                    if not math.isnan(r):
                        row[k] = r if higher_is_better(k) else -r
            out[(attr, m)] = row
    return out


def _ri_rows(table: Table, keys: Sequence[str] | None, caveats: Caveats | None = None,
             tsv: bool = False) -> tuple[list[str], list[list[str]]]:
    """The relative-change rows; with ``caveats`` a value resting on clipped videos (low or high slice) carries
    `` ∞n`` (markdown, HTML) or is counted in a last ``clipped videos`` column (TSV: numbers stay numbers)."""
    ri = relative_improvement(table)
    ks = _keys(table, keys)
    cav = caveats or Caveats()

    def clipped(attr: str, m: str, k: str) -> int:
        return cav.clipped_n(m, f"{attr}_low", k) + cav.clipped_n(m, f"{attr}_high", k)

    counts = {(a, m): {k: n for k in ks if (n := clipped(a, m, k))} for a, m in ri}
    column = tsv and any(counts.values())
    header = ["attribute", "method"] + [key_title(k) for k in ks] + (["clipped videos"] if column else [])
    rows = []
    for (a, m), v in ri.items():
        cells = [format(v[k], "+.2%") + ("" if tsv else clip_mark(counts[(a, m)].get(k, 0))) if k in v else ""
                 for k in ks]
        if column:
            cells.append(", ".join(f"{key_title(k)} {n}" for k, n in counts[(a, m)].items()))
        rows.append([a, m] + cells)
    return header, rows


def relative_improvement_markdown(table: Table, keys: Sequence[str] | None = None,
                                  caveats: Caveats | None = None) -> str:
    """Relative change low -> high per attribute and method (:func:`relative_improvement`), as signed percentages
    (markdown).

    >>> t = {("A", "fg_size_low"): {"lpips": 0.05}, ("A", "fg_size_high"): {"lpips": 0.04}}
    >>> print(relative_improvement_markdown(t), end="")
    | attribute | method | LPIPS |
    |---|---|---:|
    | fg_size | A | +22.22% |
    """
    return _markdown(*_ri_rows(table, keys, caveats))


def relative_improvement_tsv(table: Table, keys: Sequence[str] | None = None, caveats: Caveats | None = None) -> str:
    """Relative improvement as TSV (see :func:`relative_improvement_markdown`)."""
    return _tsv(*_ri_rows(table, keys, caveats, tsv=True))


def per_video_rows(docs: Iterable[Mapping], keys: Sequence[str] | None = None) -> tuple[list[str], list[list[str]]]:
    """Every video of every results document, one row per (slice, method, clip): the per-video values in the
    release's formats, and per PSNR-type key whether the video's infinite value was clipped (``∞``).

    >>> doc = {"method": "A", "slice": "s", "videos": {"c1": {"psnr": 30.0}, "c0": {"psnr": 40.0}},
    ...        "clipped": {"psnr": ["c0"]}}
    >>> per_video_rows([doc])
    (['slice', 'method', 'clip', 'PSNR ▲'], [['s', 'A', 'c0', '40.00 ∞'], ['s', 'A', 'c1', '30.00']])
    """
    docs = list(docs)
    present = {k for d in docs for row in (d.get("videos") or {}).values() for k in row}
    known = known_result_keys()
    ks = [k for k in (keys if keys is not None else known) if k in present]
    ks += sorted(present - set(ks) - set(known)) if keys is None else []
    order = {s: i for i, s in enumerate(SLICES)}
    rows = []
    for d in sorted(docs, key=lambda d: (order.get(result_cell(d)[1], len(order)), result_cell(d)[1])):
        clipped = {k: set(ids) for k, ids in (d.get("clipped") or {}).items()}
        for clip, row in sorted((d.get("videos") or {}).items()):
            cells = [fmt(k, None if row.get(k) is None else float(row[k]))
                     + (f" {CLIP_MARK}" if clip in clipped.get(k, ()) else "") for k in ks]
            rows.append([result_cell(d)[1], str(d.get("method")), clip] + cells)
    return ["slice", "method", "clip"] + [title(k) for k in ks], rows


def per_video_tsv(docs: Iterable[Mapping], keys: Sequence[str] | None = None) -> str:
    """:func:`per_video_rows` as TSV (``per_video.tsv``)."""
    return _tsv(*per_video_rows(docs, keys))


RELATIVE_IMPROVEMENT_CAPTION = (
    "Relative improvement between each attribute's low and high slice as the symmetric relative change "
    "2 (high - low) / (|high| + |low|), in percent (bounded to ±200%; the paper's (high - low) / low, section 6.2, "
    "explodes when the low score is near zero, as a warp error is, and orders positive scores the same way). For "
    "metrics where lower is better (▼) the sign is flipped, so a positive number always means the method does "
    "better on the high slice.")


def skipped_metrics(docs: Iterable[Mapping]) -> dict[str, str]:
    """``key -> reason`` for the result keys of metrics the evaluation skipped (e.g. network weights missing) and
    that no document computed; the reason is the first sentence of what the results file records.

    >>> skipped_metrics([{"summary": {"psnr": 30.0, "fid": None}, "skipped": {"fid": "w.pth: not cached. Run x"}}])
    {'fid': 'w.pth: not cached'}
    """
    reasons: dict[str, str] = {}
    computed: set[str] = set()
    for doc in docs:
        computed |= {k for k, v in (doc.get("summary") or {}).items()
                     if isinstance(v, (int, float)) and not math.isnan(float(v))}
        for name, reason in (doc.get("skipped") or {}).items():
            entry = METRICS.get(name)
            for k in (entry.keys if entry is not None else (name,)):
                reasons.setdefault(k, str(reason).split(". ")[0].rstrip("."))
    return {k: r for k, r in reasons.items() if k not in computed}


def skipped_line(skipped: Mapping[str, str]) -> str:
    """One line naming what was not computed and why (keys with the same reason grouped); empty if nothing.

    >>> skipped_line({"vfid": "i3d.pt: not cached", "pvcs": "i3d.pt: not cached"})
    'Not computed: PVCS, VFID (i3d.pt: not cached).'
    """
    if not skipped:
        return ""
    by_reason: dict[str, list[str]] = {}
    for k in [k for k in known_result_keys() if k in skipped] + sorted(set(skipped) - set(known_result_keys())):
        by_reason.setdefault(skipped[k], []).append(key_title(k))
    return "Not computed: " + "; ".join(f"{', '.join(ks)} ({r})" for r, ks in by_reason.items()) + "."


