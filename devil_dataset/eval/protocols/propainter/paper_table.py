"""The table video-inpainting papers print (issues 38, 46): one row per method, DAVIS and YouTube-VOS column groups of
PSNR, SSIM, VFID and E_warp, then every other metric the results computed (the hole-only ones), from
``devil evaluate --protocol propainter`` results documents, with their intervals and a caption saying what the
intervals are (``devil report --paper-table``).

Numbers are printed as the papers do: PSNR with 2 decimals, SSIM 4, VFID 3, E_warp multiplied by 10^3 (the
results hold the raw value on the [0, 1] scale; the header states the factor) with 3. ``-`` marks a value the
documents do not hold. The better direction of every column is the metric registry's
(:func:`~devil_dataset.eval.metrics.registry.higher_is_better`).

    >>> doc = {"protocol": "propainter", "summary": {"psnr": 34.1712, "ssim": 0.97712, "vfid": 0.0991},
    ...        "uncertainty": {"psnr": {"ci": [33.5, 34.8]}}}
    >>> print(propainter_table_markdown({"ProPainter": {"DAVIS": doc}}, datasets=("DAVIS",), keys=("psnr", "ssim",
    ...       "vfid")), end="")
    | Method | DAVIS PSNR ↑ | DAVIS SSIM ↑ | DAVIS VFID ↓ |
    |---|---:|---:|---:|
    | ProPainter | 34.17 | 0.9771 | 0.099 |
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Mapping, Sequence

from ....core.errors import DevilError
from ...metrics.registry import PROTOCOL_KEYS, higher_is_better
from ...scoring.results import read_results

#: The column groups papers print, in order.
DATASETS: tuple[str, ...] = ("DAVIS", "YouTube-VOS")
#: The metrics papers print in each group, in order (the other computed metrics follow them).
TABLE_KEYS: tuple[str, ...] = ("psnr", "ssim", "vfid", "ewarp")
#: Every metric of the protocol: its header, printed scale and digits (the direction is the registry's).
COLUMNS: dict[str, tuple[str, float, int]] = {
    "psnr": ("PSNR", 1.0, 2),
    "ssim": ("SSIM", 1.0, 4),
    "vfid": ("VFID", 1.0, 3),
    "ewarp": ("E_warp (×10⁻³)", 1e3, 3),
    "hole_psnr": ("hole PSNR", 1.0, 2),
    "hole_ssim": ("hole SSIM", 1.0, 4),
    "hole_lpips": ("hole LPIPS", 1.0, 4),
}
_LATEX_NAMES = {"ewarp": r"$E_{warp}$ ($\times 10^{-3}$)"}

Rows = Mapping[str, Mapping[str, Mapping]]  # method -> dataset -> results document


def arrow(key: str) -> str:
    """``↑`` where a higher value of ``key`` is better, ``↓`` where lower is (from the registry).

    >>> arrow("psnr"), arrow("ewarp")
    ('↑', '↓')
    """
    return "↑" if higher_is_better(key) else "↓"


def _finite(value: object) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(float(value))


def _cell(doc: Mapping | None, key: str, intervals: bool) -> str:
    if doc is None or key not in (doc.get("summary") or {}):
        return "-"
    value = doc["summary"][key]
    _, scale, digits = COLUMNS[key]
    if value is None or value != value:
        return "-"
    text = f"{value * scale:.{digits}f}"
    u = (doc.get("uncertainty") or {}).get(key) or {}
    ci = u.get("ci") if intervals and u.get("n", 2) > 1 else None
    if ci and all(_finite(c) for c in ci):
        text += f" [{ci[0] * scale:.{digits}f}, {ci[1] * scale:.{digits}f}]"
    return text


def table_keys(rows: Rows) -> tuple[str, ...]:
    """The columns of each group: the papers' four, then every other metric some document computed, in the
    registry's order of the protocol's keys.

    >>> table_keys({"A": {"DAVIS": {"summary": {"psnr": 30.0, "hole_ssim": 0.9, "ewarp": None}}}})
    ('psnr', 'ssim', 'vfid', 'ewarp', 'hole_ssim')
    """
    computed = {k for by_dataset in rows.values() for doc in by_dataset.values()
                for k, v in (doc.get("summary") or {}).items() if _finite(v) or v == math.inf}
    return TABLE_KEYS + tuple(k for k in PROTOCOL_KEYS["propainter"] if k in computed and k not in TABLE_KEYS)


def _grid(rows: Rows, datasets: Sequence[str], keys: Sequence[str], intervals: bool) -> tuple[list[str], list[list]]:
    for method, by_dataset in rows.items():
        for name, doc in by_dataset.items():
            if doc.get("protocol") != "propainter":
                raise DevilError(f"{method} / {name}: not a --protocol propainter results document")
    header = ["Method"] + [f"{d} {COLUMNS[k][0]} {arrow(k)}" for d in datasets for k in keys]
    body = [[method] + [_cell(by_dataset.get(d), k, intervals) for d in datasets for k in keys]
            for method, by_dataset in rows.items()]
    return header, body


def propainter_table_markdown(rows: Rows, *, datasets: Sequence[str] = DATASETS, keys: Sequence[str] = TABLE_KEYS,
                              intervals: bool = False) -> str:
    """The table as Markdown: ``rows`` maps method -> dataset -> results document (see the module docstring);
    ``intervals`` adds each value's bootstrap interval ``[lo, hi]`` where the document has one (none for a single
    video); :func:`table_keys` gives every computed metric, :func:`propainter_table_caption` what the intervals are."""
    header, body = _grid(rows, datasets, keys, intervals)
    lines = ["| " + " | ".join(header) + " |", "|---|" + "---:|" * (len(header) - 1)]
    lines += ["| " + " | ".join(r) + " |" for r in body]
    return "\n".join(lines) + "\n"


def propainter_table_latex(rows: Rows, *, datasets: Sequence[str] = DATASETS, keys: Sequence[str] = TABLE_KEYS,
                           intervals: bool = False) -> str:
    r"""The table as a LaTeX ``tabular`` with a multicolumn header per dataset.

    >>> doc = {"protocol": "propainter", "summary": {"psnr": 34.17, "ewarp": 0.0013}}
    >>> print(propainter_table_latex({"A": {"DAVIS": doc}}, datasets=("DAVIS",), keys=("psnr", "ewarp")), end="")
    \begin{tabular}{lrr}
    \toprule
     & \multicolumn{2}{c}{DAVIS} \\
    Method & PSNR $\uparrow$ & $E_{warp}$ ($\times 10^{-3}$) $\downarrow$ \\
    \midrule
    A & 34.17 & 1.300 \\
    \bottomrule
    \end{tabular}
    """
    _, body = _grid(rows, datasets, keys, intervals)
    arrows = {"↑": r"$\uparrow$", "↓": r"$\downarrow$"}
    lines = [r"\begin{tabular}{l" + "r" * (len(datasets) * len(keys)) + "}", r"\toprule",
             " & " + " & ".join(rf"\multicolumn{{{len(keys)}}}{{c}}{{{d}}}" for d in datasets) + r" \\",
             "Method & " + " & ".join(f"{_LATEX_NAMES.get(k, COLUMNS[k][0])} {arrows[arrow(k)]}"
                                      for _ in datasets for k in keys) + r" \\",
             r"\midrule"]
    lines += [" & ".join(r) + r" \\" for r in body]
    lines += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(lines) + "\n"


def propainter_table_caption(rows: Rows, keys: Sequence[str] = TABLE_KEYS, intervals: bool = True) -> str:
    """What the table's numbers and intervals are, from the documents' ``uncertainty`` records: per interval kind
    its level and method and the metrics that carry it; VFID (one number per dataset) has none; ``-``: not computed.

    >>> u = {"n": 3, "ci": [1.0, 2.0], "level": 0.95, "method": "bootstrap BCa, 9999 resamples over videos, seed 0"}
    >>> doc = {"summary": {"psnr": 1.5, "vfid": 0.1}, "uncertainty": {"psnr": u}}
    >>> print(propainter_table_caption({"A": {"DAVIS": doc}}, ("psnr", "vfid")))  # doctest: +NORMALIZE_WHITESPACE
    ↑ / ↓: higher / lower is better. [lo, hi]: 95% bootstrap BCa, 9999 resamples over videos, seed 0 (PSNR).
    VFID: one number per dataset, no interval. -: not computed.
    """
    kinds: dict[str, list[str]] = {}
    singles = []
    for by_dataset in rows.values():
        for doc in by_dataset.values():
            for key in keys:
                u = (doc.get("uncertainty") or {}).get(key) or {}
                if not u.get("ci"):
                    continue
                if u.get("n", 2) < 2:
                    singles.append(key)
                    continue
                what = f"{round(100 * float(u.get('level', 0.95)))}% {u.get('method', 'bootstrap over videos')}"
                if COLUMNS[key][0] not in kinds.setdefault(what, []):
                    kinds[what].append(COLUMNS[key][0])
    parts = ["↑ / ↓: higher / lower is better"]
    if intervals:
        parts += [f"[lo, hi]: {what} ({', '.join(names)})" for what, names in kinds.items()]
        if singles:
            parts.append("no interval where a dataset has one video (nothing to resample)")
    if "vfid" in keys:
        parts.append("VFID: one number per dataset, no interval")
    return ". ".join(parts) + ". -: not computed."


def parse_table_spec(spec: str) -> tuple[str | None, str, Path]:
    """One ``devil report --paper-table`` argument: ``[METHOD:]DATASET=FILE`` -> (method or None: the file's own
    ``method``, dataset, file).

    >>> parse_table_spec("mine:DAVIS=out/davis.json"), parse_table_spec("YouTube-VOS=y.json")
    (('mine', 'DAVIS', PosixPath('out/davis.json')), (None, 'YouTube-VOS', PosixPath('y.json')))
    """
    name, sep, file = spec.partition("=")
    if not sep or not name or not file:
        raise DevilError(f"--paper-table: expected [METHOD:]DATASET=RESULTS.json, got {spec!r}")
    method, colon, dataset = name.rpartition(":")
    if colon and not method or not dataset:
        raise DevilError(f"--paper-table: expected [METHOD:]DATASET=RESULTS.json, got {spec!r}")
    return (method or None), dataset, Path(file)


def _propainter_doc(path: str | Path) -> dict:
    doc = read_results(path)
    if doc.get("protocol") != "propainter":
        raise DevilError(f"{path}: not a --protocol propainter results document (protocol "
                         f"{doc.get('protocol') or 'devil'}); the paper table compares ProPainter-protocol "
                         "results only")
    return doc


def read_table_rows(files: Mapping[str, Mapping[str, str | Path]]) -> dict[str, dict[str, dict]]:
    """method -> dataset -> results document, read from method -> dataset -> results file (``devil evaluate
    --protocol propainter --out FILE``); a file of another protocol is refused, named."""
    return {m: {d: _propainter_doc(p) for d, p in by_dataset.items()} for m, by_dataset in files.items()}


def read_table_specs(specs: Sequence[str]) -> tuple[dict[str, dict[str, dict]], tuple[str, ...]]:
    """The rows and the column groups (the papers' DAVIS, YouTube-VOS, then any other dataset named) of
    ``[METHOD:]DATASET=FILE`` arguments (:func:`parse_table_spec`); a (method, dataset) given twice is an error."""
    rows: dict[str, dict[str, dict]] = {}
    given: dict[tuple[str, str], Path] = {}
    for spec in specs:
        method, dataset, path = parse_table_spec(spec)
        doc = _propainter_doc(path)
        name = method or str(doc.get("method") or path.stem)
        if (name, dataset) in given:
            raise DevilError(f"--paper-table: {name} on {dataset} given twice ({given[(name, dataset)]}, {path})")
        given[(name, dataset)] = path
        rows.setdefault(name, {})[dataset] = doc
    named = dict.fromkeys(d for _, d in given)
    return rows, DATASETS + tuple(d for d in named if d not in DATASETS)


__all__ = ["COLUMNS", "DATASETS", "TABLE_KEYS", "arrow", "parse_table_spec", "propainter_table_caption",
           "propainter_table_latex", "propainter_table_markdown", "read_table_rows", "read_table_specs", "table_keys"]
