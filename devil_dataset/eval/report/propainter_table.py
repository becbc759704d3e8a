"""The table video-inpainting papers print (issue 38): one row per method, DAVIS and YouTube-VOS column groups of
PSNR, SSIM, VFID and E_warp, from ``devil evaluate --protocol propainter`` results documents, intervals optional.

Numbers are printed as the papers do: PSNR with 2 decimals, SSIM 4, VFID 3, E_warp multiplied by 10^3 (the
results hold the raw value on the [0, 1] scale; the header states the factor) with 3. ``-`` marks a value the
documents do not hold.

    >>> doc = {"protocol": "propainter", "summary": {"psnr": 34.1712, "ssim": 0.97712, "vfid": 0.0991},
    ...        "uncertainty": {"psnr": {"ci": [33.5, 34.8]}}}
    >>> print(propainter_table_markdown({"ProPainter": {"DAVIS": doc}}, datasets=("DAVIS",), keys=("psnr", "ssim",
    ...       "vfid")), end="")
    | Method | DAVIS PSNR ↑ | DAVIS SSIM ↑ | DAVIS VFID ↓ |
    |---|---:|---:|---:|
    | ProPainter | 34.17 | 0.9771 | 0.099 |
"""
from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

from ...core.errors import DevilError
from ..engine.results import read_results

#: The column groups papers print, in order.
DATASETS: tuple[str, ...] = ("DAVIS", "YouTube-VOS")
#: The metrics of each group, in order; their headers, direction, printed scale and digits.
TABLE_KEYS: tuple[str, ...] = ("psnr", "ssim", "vfid", "ewarp")
COLUMNS: dict[str, tuple[str, str, float, int]] = {
    "psnr": ("PSNR", "↑", 1.0, 2),
    "ssim": ("SSIM", "↑", 1.0, 4),
    "vfid": ("VFID", "↓", 1.0, 3),
    "ewarp": ("E_warp (×10⁻³)", "↓", 1e3, 3),
    "hole_psnr": ("hole PSNR", "↑", 1.0, 2),
    "hole_ssim": ("hole SSIM", "↑", 1.0, 4),
}

Rows = Mapping[str, Mapping[str, Mapping]]  # method -> dataset -> results document


def _cell(doc: Mapping | None, key: str, intervals: bool) -> str:
    if doc is None or key not in (doc.get("summary") or {}):
        return "-"
    value = doc["summary"][key]
    _, _, scale, digits = COLUMNS[key]
    if value is None or value != value:
        return "-"
    text = f"{value * scale:.{digits}f}"
    ci = ((doc.get("uncertainty") or {}).get(key) or {}).get("ci") if intervals else None
    if ci and all(c is not None and c == c for c in ci):
        text += f" [{ci[0] * scale:.{digits}f}, {ci[1] * scale:.{digits}f}]"
    return text


def _grid(rows: Rows, datasets: Sequence[str], keys: Sequence[str], intervals: bool) -> tuple[list[str], list[list]]:
    for method, by_dataset in rows.items():
        for name, doc in by_dataset.items():
            if doc.get("protocol") != "propainter":
                raise DevilError(f"{method} / {name}: not a --protocol propainter results document")
    header = ["Method"] + [f"{d} {COLUMNS[k][0]} {COLUMNS[k][1]}" for d in datasets for k in keys]
    body = [[method] + [_cell(by_dataset.get(d), k, intervals) for d in datasets for k in keys]
            for method, by_dataset in rows.items()]
    return header, body


def propainter_table_markdown(rows: Rows, *, datasets: Sequence[str] = DATASETS, keys: Sequence[str] = TABLE_KEYS,
                              intervals: bool = False) -> str:
    """The table as Markdown: ``rows`` maps method -> dataset -> results document (see the module docstring);
    ``intervals`` adds each value's bootstrap interval ``[lo, hi]`` where the document has one."""
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
    names = {"psnr": "PSNR", "ssim": "SSIM", "vfid": "VFID", "ewarp": r"$E_{warp}$ ($\times 10^{-3}$)",
             "hole_psnr": "hole PSNR", "hole_ssim": "hole SSIM"}
    arrows = {"↑": r"$\uparrow$", "↓": r"$\downarrow$"}
    lines = [r"\begin{tabular}{l" + "r" * (len(datasets) * len(keys)) + "}", r"\toprule",
             " & " + " & ".join(rf"\multicolumn{{{len(keys)}}}{{c}}{{{d}}}" for d in datasets) + r" \\",
             "Method & " + " & ".join(f"{names[k]} {arrows[COLUMNS[k][1]]}" for _ in datasets for k in keys) + r" \\",
             r"\midrule"]
    lines += [" & ".join(r) + r" \\" for r in body]
    lines += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(lines) + "\n"


def read_table_rows(files: Mapping[str, Mapping[str, str | Path]]) -> dict[str, dict[str, dict]]:
    """method -> dataset -> results document, read from method -> dataset -> results file (``devil evaluate
    --protocol propainter --out FILE``)."""
    return {m: {d: read_results(p) for d, p in by_dataset.items()} for m, by_dataset in files.items()}


__all__ = ["COLUMNS", "DATASETS", "TABLE_KEYS", "propainter_table_latex", "propainter_table_markdown",
           "read_table_rows"]
