"""Mask statistics and the preset table as readable text tables (``devil masks stats`` / ``devil masks presets``).

Columns are two spaces apart; names left-aligned, numbers right-aligned (``%.4g`` for floats, ``-`` for none).
"""
from __future__ import annotations

from dataclasses import asdict


def _table(header: list[str], rows: list[list[str]], keys: int = 1) -> str:
    """The first ``keys`` columns left-aligned, the others (numbers) right-aligned, two spaces apart."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) if i < keys else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip()
             for r in [header, *rows]]
    return "\n".join(lines)


def _number(value: object) -> str:
    """A cell: ``-`` for None, floats with 4 significant digits, anything else as ``str``."""
    return "-" if value is None else f"{value:.4g}" if isinstance(value, float) else str(value)


def stats_text(doc: dict) -> str:
    """``devil masks stats`` as readable tables: per mask (unless summary only), then per preset and statistic
    the median and quartiles.

    >>> print(stats_text({"summary": {"p": {"mean_area": {"median": 0.03, "q25": 0.02, "q75": 0.04, "n": 2}}}}))
    summary (median and quartiles over the masks of each preset)
    preset  statistic  median   q25   q75  n
    p       mean_area    0.03  0.02  0.04  2
    """
    parts = []
    masks = doc.get("masks")
    if masks:
        names = list(masks[0]["stats"])
        rows = [[str(m.get("path") or m.get("preset")), _number(m.get("index")), _number(m.get("seed")),
                 *(_number(m["stats"].get(n)) for n in names)] for m in masks]
        parts.append("masks\n" + _table(["mask", "index", "seed", *names], rows))
    rows = [[preset, stat, _number(q.get("median")), _number(q.get("q25")), _number(q.get("q75")), _number(q.get("n"))]
            for preset, stats in doc["summary"].items() for stat, q in stats.items()]
    parts.append("summary (median and quartiles over the masks of each preset)\n"
                 + _table(["preset", "statistic", "median", "q25", "q75", "n"], rows, keys=2))
    return "\n\n".join(parts)


def presets_text(presets: dict) -> str:
    """The preset table as text, one row per preset (ranges as ``lo-hi``; the release's masks).

    >>> from devil_dataset.core.masks import PRESETS
    >>> print(presets_text(PRESETS).splitlines()[1])  # doctest: +NORMALIZE_WHITESPACE
    fgs-h_fgm-h_fgd-h  7-13  50-70  0-60  150-300  0.8  1.5  300  9-15  300, 0.75  1-3
    """

    def cell(field: str, value: object) -> str:  # ranges lo-hi; the centroid pull is (distance, weight)
        if value is None:
            return "none"
        if isinstance(value, (tuple, list)):
            return ", ".join(_number(v) for v in value) if field == "centroid" else "-".join(map(_number, value))
        return _number(value)

    records = {name: asdict(p) for name, p in presets.items()}
    fields = [f for f in next(iter(records.values())) if f != "name"]
    rows = [[name, *(cell(f, records[name][f]) for f in fields)] for name in records]
    return _table(["preset", *fields], rows)


__all__ = ["presets_text", "stats_text"]
