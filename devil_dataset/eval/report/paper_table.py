"""The table papers print from one protocol's results (``devil report --paper-table``): one row per method, one
column group per dataset of the protocol's table keys, then every other key the results computed, with their
intervals and a caption saying what the intervals are. What the columns are is the protocol's
(:class:`~devil_dataset.eval.protocols.declaration.PaperTable`): ProPainter / E2FGVI's DAVIS / YouTube-VOS table
(PSNR, SSIM, VFID, E_warp x 10^3), PROVE's removal table (RC-S ▲, RC-T ▼, background and masked PSNR / SSIM).
Results of different protocols in one table are refused.

Numbers are printed as the papers do (the protocol's scale and digits); ``-`` marks a value the documents do not
hold. The better direction of every column is the protocol's result key's.

A toy protocol's table (a results document names its protocol, ``protocol=`` gives it here):

    >>> from devil_dataset.eval.protocols.declaration import EvaluationProtocol, PaperTable, ResultKey
    >>> table = PaperTable(("Set A",), ("psnr", "ssim", "ewarp"), {"psnr": ("PSNR", 1.0, 2), "ssim": ("SSIM", 1.0, 4),
    ...     "ewarp": ("E_warp (×10⁻³)", 1e3, 3), "hole_ssim": ("hole SSIM", 1.0, 4)},
    ...     key_notes={"ewarp": "E_warp: one per set"})
    >>> keys = (ResultKey("psnr", True, ".2f", "PSNR"), ResultKey("ssim", True, ".4f", "SSIM"),
    ...         ResultKey("ewarp", False, "sig4", "E_warp"), ResultKey("hole_ssim", True, ".4f", "hole SSIM"))
    >>> toy = EvaluationProtocol("toy", "a toy protocol", keys, (), ("psnr",), ("psnr",), paper_table=table)
    >>> doc = {"summary": {"psnr": 34.1712, "ssim": 0.97712, "ewarp": 0.0013},
    ...        "uncertainty": {"psnr": {"ci": [33.5, 34.8]}}}
    >>> print(paper_table_markdown({"A": {"Set A": doc}}, protocol=toy), end="")
    | Method | Set A PSNR ↑ | Set A SSIM ↑ | Set A E_warp (×10⁻³) ↓ |
    |---|---:|---:|---:|
    | A | 34.17 | 0.9771 | 1.300 |
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Mapping, Sequence

from ...core.errors import DevilError
from ..protocols.declaration import EvaluationProtocol, PaperTable
from ..protocols.registry import higher_is_better, protocol_names, protocols, results_protocol_of
from ..scoring.results import read_results

Rows = Mapping[str, Mapping[str, Mapping]]  # method -> dataset -> results document


def _finite(value: object) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(float(value))


def _with_tables() -> str:
    return " or ".join(n for n, p in protocols().items() if p.paper_table is not None)


def table_protocol(rows: Rows) -> EvaluationProtocol:
    """The one protocol of every document of ``rows``, which must have a paper table; anything else is refused,
    naming the document."""
    found: dict[str, str] = {}
    for method, by_dataset in rows.items():
        for name, doc in by_dataset.items():
            protocol = results_protocol_of(doc)
            label = protocol.name if protocol is not None else str(doc.get("protocol"))
            if protocol is None or protocol.paper_table is None:
                raise DevilError(f"{method} / {name}: not a results document of a protocol with a paper table "
                                 f"(protocol {label}); --paper-table takes results of --protocol {_with_tables()}")
            found.setdefault(label, f"{method} / {name}")
    if len(found) > 1:
        raise DevilError("--paper-table: results of different protocols in one table ("
                         + ", ".join(f"{p}: {w}" for p, w in found.items()) + "); one protocol per table")
    if not found:
        raise DevilError("--paper-table: no results")
    return protocols()[next(iter(found))]


def _spec(rows: Rows, protocol: EvaluationProtocol | None) -> tuple[EvaluationProtocol, PaperTable]:
    protocol = protocol or table_protocol(rows)
    if protocol.paper_table is None:
        raise DevilError(f"protocol {protocol.name} has no paper table")
    return protocol, protocol.paper_table


def arrow(key: str, spec: PaperTable) -> str:
    """The table's "higher is better" or "lower is better" arrow of ``key`` (the key's direction)."""
    return spec.arrows[0] if higher_is_better(key) else spec.arrows[1]


def _cell(doc: Mapping | None, key: str, spec: PaperTable, intervals: bool) -> str:
    if doc is None or key not in (doc.get("summary") or {}):
        return "-"
    value = doc["summary"][key]
    _, scale, digits = spec.columns[key]
    if value is None or value != value:
        return "-"
    text = f"{value * scale:.{digits}f}"
    u = (doc.get("uncertainty") or {}).get(key) or {}
    ci = u.get("ci") if intervals and u.get("n", 2) > 1 else None
    if ci and all(_finite(c) for c in ci):
        text += f" [{ci[0] * scale:.{digits}f}, {ci[1] * scale:.{digits}f}]"
    return text


def table_keys(rows: Rows, protocol: EvaluationProtocol | None = None) -> tuple[str, ...]:
    """The columns of each group: the protocol's table keys, then every other key of the protocol some document
    computed, in the protocol's order.

    >>> from devil_dataset.eval.protocols.declaration import EvaluationProtocol, PaperTable, ResultKey
    >>> table = PaperTable(("Set A",), ("psnr", "ssim", "ewarp"), {"psnr": ("PSNR", 1.0, 2), "ssim": ("SSIM", 1.0, 4),
    ...     "ewarp": ("E_warp (×10⁻³)", 1e3, 3), "hole_ssim": ("hole SSIM", 1.0, 4)},
    ...     key_notes={"ewarp": "E_warp: one per set"})
    >>> keys = (ResultKey("psnr", True, ".2f", "PSNR"), ResultKey("ssim", True, ".4f", "SSIM"),
    ...         ResultKey("ewarp", False, "sig4", "E_warp"), ResultKey("hole_ssim", True, ".4f", "hole SSIM"))
    >>> toy = EvaluationProtocol("toy", "a toy protocol", keys, (), ("psnr",), ("psnr",), paper_table=table)
    >>> table_keys({"A": {"Set A": {"summary": {"psnr": 30.0, "hole_ssim": 0.9}}}}, toy)
    ('psnr', 'ssim', 'ewarp', 'hole_ssim')
    """
    protocol, spec = _spec(rows, protocol)
    computed = {k for by_dataset in rows.values() for doc in by_dataset.values()
                for k, v in (doc.get("summary") or {}).items() if _finite(v) or v == math.inf}
    return spec.keys + tuple(k for k in protocol.key_names() if k in computed and k not in spec.keys
                             and k in spec.columns)


def _grid(rows: Rows, datasets: Sequence[str] | None, keys: Sequence[str] | None, intervals: bool,
          protocol: EvaluationProtocol | None) -> tuple[PaperTable, list[str], list[str], list[str], list[list[str]]]:
    protocol, spec = _spec(rows, protocol)
    datasets = list(datasets if datasets is not None else spec.groups)
    keys = list(keys if keys is not None else spec.keys)
    header = ["Method"] + [f"{d} {spec.columns[k][0]} {arrow(k, spec)}" for d in datasets for k in keys]
    body = [[method] + [_cell(by_dataset.get(d), k, spec, intervals) for d in datasets for k in keys]
            for method, by_dataset in rows.items()]
    return spec, datasets, keys, header, body


def paper_table_markdown(rows: Rows, *, datasets: Sequence[str] | None = None, keys: Sequence[str] | None = None,
                         intervals: bool = False, protocol: EvaluationProtocol | None = None) -> str:
    """The table as Markdown: ``rows`` maps method -> dataset -> results document (see the module docstring);
    ``datasets`` / ``keys`` default to the protocol's; ``intervals`` adds each value's bootstrap interval
    ``[lo, hi]`` where the document has one (none for a single video); :func:`table_keys` gives every computed
    metric, :func:`paper_table_caption` what the intervals are."""
    _, _, _, header, body = _grid(rows, datasets, keys, intervals, protocol)
    lines = ["| " + " | ".join(header) + " |", "|---|" + "---:|" * (len(header) - 1)]
    lines += ["| " + " | ".join(r) + " |" for r in body]
    return "\n".join(lines) + "\n"


def paper_table_latex(rows: Rows, *, datasets: Sequence[str] | None = None, keys: Sequence[str] | None = None,
                      intervals: bool = False, protocol: EvaluationProtocol | None = None) -> str:
    r"""The table as a LaTeX ``tabular`` with a multicolumn header per dataset.

    >>> from devil_dataset.eval.protocols.declaration import EvaluationProtocol, PaperTable, ResultKey
    >>> table = PaperTable(("Set A",), ("psnr", "ssim", "ewarp"), {"psnr": ("PSNR", 1.0, 2), "ssim": ("SSIM", 1.0, 4),
    ...     "ewarp": ("E_warp (×10⁻³)", 1e3, 3), "hole_ssim": ("hole SSIM", 1.0, 4)},
    ...     latex_names={"ewarp": r"$E_{warp}$ ($\times 10^{-3}$)"}, key_notes={"ewarp": "E_warp: one per set"})
    >>> keys = (ResultKey("psnr", True, ".2f", "PSNR"), ResultKey("ssim", True, ".4f", "SSIM"),
    ...         ResultKey("ewarp", False, "sig4", "E_warp"), ResultKey("hole_ssim", True, ".4f", "hole SSIM"))
    >>> toy = EvaluationProtocol("toy", "a toy protocol", keys, (), ("psnr",), ("psnr",), paper_table=table)
    >>> doc = {"summary": {"psnr": 34.17, "ewarp": 0.0013}}
    >>> print(paper_table_latex({"A": {"Set A": doc}}, keys=("psnr", "ewarp"), protocol=toy), end="")
    \begin{tabular}{lrr}
    \toprule
     & \multicolumn{2}{c}{Set A} \\
    Method & PSNR $\uparrow$ & $E_{warp}$ ($\times 10^{-3}$) $\downarrow$ \\
    \midrule
    A & 34.17 & 1.300 \\
    \bottomrule
    \end{tabular}
    """
    spec, datasets, keys, _, body = _grid(rows, datasets, keys, intervals, protocol)
    arrows = {spec.arrows[0]: r"$\uparrow$", spec.arrows[1]: r"$\downarrow$"}
    lines = [r"\begin{tabular}{l" + "r" * (len(datasets) * len(keys)) + "}", r"\toprule",
             " & " + " & ".join(rf"\multicolumn{{{len(keys)}}}{{c}}{{{d}}}" for d in datasets) + r" \\",
             "Method & " + " & ".join(f"{spec.latex_names.get(k, spec.columns[k][0])} {arrows[arrow(k, spec)]}"
                                      for _ in datasets for k in keys) + r" \\",
             r"\midrule"]
    lines += [" & ".join(r) + r" \\" for r in body]
    lines += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(lines) + "\n"


def paper_table_caption(rows: Rows, keys: Sequence[str] | None = None, intervals: bool = True,
                        protocol: EvaluationProtocol | None = None) -> str:
    """What the table's numbers and intervals are, from the documents' ``uncertainty`` records: per interval kind
    its level and method and the metrics that carry it, the protocol's sentences on the keys shown; ``-``: not
    computed.

    >>> u = {"n": 3, "ci": [1.0, 2.0], "level": 0.95, "method": "bootstrap BCa, 9999 resamples over videos, seed 0"}
    >>> from devil_dataset.eval.protocols.declaration import EvaluationProtocol, PaperTable, ResultKey
    >>> table = PaperTable(("Set A",), ("psnr", "ssim", "ewarp"), {"psnr": ("PSNR", 1.0, 2), "ssim": ("SSIM", 1.0, 4),
    ...     "ewarp": ("E_warp (×10⁻³)", 1e3, 3), "hole_ssim": ("hole SSIM", 1.0, 4)},
    ...     key_notes={"ewarp": "E_warp: one per set"})
    >>> keys = (ResultKey("psnr", True, ".2f", "PSNR"), ResultKey("ssim", True, ".4f", "SSIM"),
    ...         ResultKey("ewarp", False, "sig4", "E_warp"), ResultKey("hole_ssim", True, ".4f", "hole SSIM"))
    >>> toy = EvaluationProtocol("toy", "a toy protocol", keys, (), ("psnr",), ("psnr",), paper_table=table)
    >>> doc = {"summary": {"psnr": 1.5, "ewarp": 0.1}, "uncertainty": {"psnr": u}}
    >>> print(paper_table_caption({"A": {"Set A": doc}}, ("psnr", "ewarp"), protocol=toy))
    ... # doctest: +NORMALIZE_WHITESPACE
    ↑ / ↓: higher / lower is better. [lo, hi]: 95% bootstrap BCa, 9999 resamples over videos, seed 0 (PSNR).
    E_warp: one per set. -: not computed.
    """
    protocol, spec = _spec(rows, protocol)
    keys = list(keys if keys is not None else spec.keys)
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
                if spec.columns[key][0] not in kinds.setdefault(what, []):
                    kinds[what].append(spec.columns[key][0])
    parts = [f"{spec.arrows[0]} / {spec.arrows[1]}: higher / lower is better"]
    if intervals:
        parts += [f"[lo, hi]: {what} ({', '.join(names)})" for what, names in kinds.items()]
        if singles:
            parts.append("no interval where a dataset has one video (nothing to resample)")
    parts += [note for key, note in spec.key_notes.items() if key in keys]
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


def _table_doc(path: str | Path) -> dict:
    doc = read_results(path)
    protocol = results_protocol_of(doc)
    if protocol is None or protocol.paper_table is None:
        raise DevilError(f"{path}: not a results document of a protocol with a paper table (protocol "
                         f"{doc.get('protocol') or 'devil'}); --paper-table takes results of --protocol "
                         f"{_with_tables()} (known protocols: {', '.join(protocol_names())})")
    return doc


def read_table_rows(files: Mapping[str, Mapping[str, str | Path]]) -> dict[str, dict[str, dict]]:
    """method -> dataset -> results document, read from method -> dataset -> results file; a file of a protocol
    without a paper table is refused, named."""
    return {m: {d: _table_doc(p) for d, p in by_dataset.items()} for m, by_dataset in files.items()}


def read_table_specs(specs: Sequence[str]) -> tuple[dict[str, dict[str, dict]], tuple[str, ...]]:
    """The rows and the column groups (the protocol's, then any other dataset named) of ``[METHOD:]DATASET=FILE``
    arguments (:func:`parse_table_spec`); a (method, dataset) given twice, or results of two protocols, is an
    error."""
    rows: dict[str, dict[str, dict]] = {}
    given: dict[tuple[str, str], Path] = {}
    for spec in specs:
        method, dataset, path = parse_table_spec(spec)
        doc = _table_doc(path)
        name = method or str(doc.get("method") or path.stem)
        if (name, dataset) in given:
            raise DevilError(f"--paper-table: {name} on {dataset} given twice ({given[(name, dataset)]}, {path})")
        given[(name, dataset)] = path
        rows.setdefault(name, {})[dataset] = doc
    _, table = _spec(rows, None)
    named = dict.fromkeys(d for _, d in given)
    return rows, table.groups + tuple(d for d in named if d not in table.groups)


__all__ = ["Rows", "arrow", "paper_table_caption", "paper_table_latex", "paper_table_markdown", "parse_table_spec",
           "read_table_rows", "read_table_specs", "table_keys", "table_protocol"]
