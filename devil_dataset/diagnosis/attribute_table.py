"""The attribute table: one row per (clip_id, mask_id) with each attribute's score and group, as ``attributes.tsv``
(what users read and re-use) and ``attributes.json`` (the same rows with the options, the group rules and the
configs that hold each pair). Both written atomically; the same inputs give the same bytes.

TSV columns: ``clip_id``, ``mask_id``, then for each attribute of :data:`~devil_dataset.diagnosis.attributes.ATTRIBUTES`
``<attribute>_score`` (``repr`` of the float; ``inf``; empty when there is no score) and ``<attribute>_group``
(``low``, ``high`` or empty).

    >>> row = AttributeRow("bear", "bear", {"fg_size": 0.25}, {"fg_size": "high"})
    >>> tsv_text(AttributeTable([row])).splitlines()[1].split("\\t")[:2]
    ['bear', 'bear']
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from ..builder.scene_motion import MIN_SEGMENT_FRAMES
from ..core.atomic import atomic_write_text
from ..core.errors import DevilError
from ..eval.scoring.storage import decode_value, encode_value
from .attributes import ATTRIBUTES, MIN_VIDEO_FRAMES, VIDEO_ATTRIBUTES
from .groups import rank_groups, separation_problem

TABLE_FORMAT = "devil-attributes"
TABLE_FORMAT_VERSION = 1
GROUPS = ("low", "high")
#: Why an attribute can lack a score for every pair: what its labeller needs (the release's labellers).
UNSCORED_REASON: dict[str, str] = {
    "camera_motion": f"no video has a score (camera motion needs at least {MIN_VIDEO_FRAMES} frames)",
    "bg_scene_motion": "no video has a score (scene motion needs a low-camera-motion segment of at least "
                       f"{MIN_SEGMENT_FRAMES} frames)",
    **{a: "no pair has a score (an empty or unreadable hole)" for a in ("fg_size", "fg_displacement", "fg_motion")},
}


@dataclass
class AttributeRow:
    """A pair's scores and groups (attribute -> value; a missing attribute has no score / no group)."""

    clip_id: str
    mask_id: str
    scores: dict[str, float]
    groups: dict[str, str] = field(default_factory=dict)
    configs: tuple[str, ...] = ()

    @property
    def key(self) -> tuple[str, str]:
        return (self.clip_id, self.mask_id)


@dataclass
class AttributeTable:
    """The rows, each attribute's group rule (a sentence) and the scoring options."""

    rows: list[AttributeRow]
    rules: dict[str, str] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    #: Attributes whose spread is too small to separate this set (attribute -> why): no groups, nothing tested.
    unseparated: dict[str, str] = field(default_factory=dict)

    def scores(self, attribute: str) -> dict[tuple[str, str], float]:
        """Pair key -> score of ``attribute``."""
        return {r.key: r.scores.get(attribute, math.nan) for r in self.rows}

    @property
    def unscored(self) -> dict[str, str]:
        """Attributes without a score for any pair (attribute -> why: what the labeller needs), so no groups.

            >>> AttributeTable([AttributeRow("v", "m", {"camera_motion": math.nan, "fg_size": 0.1})]).unscored
            {'camera_motion': 'no video has a score (camera motion needs at least 10 frames)'}
        """
        out = {}
        for attr in ATTRIBUTES:
            values = [r.scores[attr] for r in self.rows if attr in r.scores]
            if values and all(math.isnan(v) for v in values):
                out[attr] = UNSCORED_REASON[attr]
        return out


def assign_groups(table: AttributeTable) -> AttributeTable:
    """Fill every row's groups and the table's rules (:mod:`devil_dataset.diagnosis.groups`): video attributes ranked
    over distinct videos, foreground attributes over pairs. An attribute whose groups differ too little to mean
    anything (:func:`~devil_dataset.diagnosis.groups.separation_problem`) gets no groups, and the reason in
    ``rules`` and ``unseparated``. Returns ``table``."""
    for attr in ATTRIBUTES:
        if attr in VIDEO_ATTRIBUTES:
            per_clip: dict[str, float] = {}
            for r in table.rows:
                per_clip.setdefault(r.clip_id, r.scores.get(attr, math.nan))
            clip_groups, rule = rank_groups(per_clip)
            groups_of = {r.key: clip_groups.get(r.clip_id, "") for r in table.rows}
            low = [per_clip[c] for c, g in clip_groups.items() if g == "low"]
            high = [per_clip[c] for c, g in clip_groups.items() if g == "high"]
            units = "videos"
        else:
            scores = table.scores(attr)
            pair_groups, rule = rank_groups(scores)
            groups_of = {r.key: pair_groups.get(r.key, "") for r in table.rows}
            low = [scores[k] for k, g in pair_groups.items() if g == "low"]
            high = [scores[k] for k, g in pair_groups.items() if g == "high"]
            units = "video-mask pairs"
        problem = separation_problem(attr, low, high)
        table.rules[attr] = f"{rule.text} ({units})"
        table.unseparated.pop(attr, None)
        if problem:
            groups_of = {k: "" for k in groups_of}
            table.unseparated[attr] = problem
            table.rules[attr] += f"; does not separate this set: {problem}; no groups, no test"
        for r in table.rows:
            r.groups[attr] = groups_of[r.key]
    return table


def _cell(value: float) -> str:
    if math.isnan(value):
        return ""
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return repr(float(value))


def tsv_text(table: AttributeTable) -> str:
    """The TSV of the module docstring."""
    header = ["clip_id", "mask_id"] + [c for a in ATTRIBUTES for c in (f"{a}_score", f"{a}_group")]
    lines = ["\t".join(header)]
    for r in table.rows:
        cells = [r.clip_id, r.mask_id]
        for a in ATTRIBUTES:
            cells += [_cell(r.scores.get(a, math.nan)), r.groups.get(a, "")]
        lines.append("\t".join(cells))
    return "\n".join(lines) + "\n"


def json_document(table: AttributeTable) -> dict[str, Any]:
    """The JSON document (``format: devil-attributes``): options, rules and rows (NaN -> null, inf -> "inf")."""
    return {
        "format": TABLE_FORMAT, "format_version": TABLE_FORMAT_VERSION, "attributes": list(ATTRIBUTES),
        "options": table.options, "rules": table.rules, "unseparated": table.unseparated,
        "rows": [{"clip_id": r.clip_id, "mask_id": r.mask_id, "configs": list(r.configs),
                  "scores": {a: encode_value(r.scores.get(a, math.nan)) for a in ATTRIBUTES},
                  "groups": {a: r.groups.get(a, "") for a in ATTRIBUTES}} for r in table.rows],
    }


def write_attribute_table(out_dir: str | Path, table: AttributeTable) -> tuple[Path, Path]:
    """Write ``out_dir/attributes.tsv`` and ``out_dir/attributes.json`` (atomic); returns their paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tsv = atomic_write_text(out / "attributes.tsv", tsv_text(table))
    doc = atomic_write_text(out / "attributes.json", json.dumps(json_document(table), indent=1) + "\n")
    return tsv, doc


def _cell_score(value: object) -> float:
    """A stored score back as a float: an empty cell is a missing score (NaN), as ``null`` is; the rest is the
    package's JSON codec (:func:`~devil_dataset.eval.scoring.storage.decode_value`).

    >>> _cell_score(""), _cell_score(None), _cell_score("-inf"), _cell_score("0.25")
    (nan, nan, -inf, 0.25)
    """
    return decode_value(None if value == "" else value)


def _row_from_tsv(header: list[str], line: str, path: Path, number: int) -> AttributeRow:
    cells = line.rstrip("\n").split("\t")
    if len(cells) != len(header):
        raise DevilError(f"{path}: line {number} has {len(cells)} cells, the header {len(header)}")
    rec = dict(zip(header, cells))
    try:
        scores = {a: _cell_score(rec.get(f"{a}_score", "")) for a in ATTRIBUTES}
    except ValueError as exc:
        raise DevilError(f"{path}: line {number}: not a number ({exc})") from None
    groups = {a: rec.get(f"{a}_group", "") for a in ATTRIBUTES}
    bad = [g for g in groups.values() if g not in ("", *GROUPS)]
    if bad:
        raise DevilError(f"{path}: line {number}: group {bad[0]!r} is not low, high or empty")
    return AttributeRow(rec["clip_id"], rec["mask_id"], scores, groups)


def read_attribute_table(path: str | Path) -> AttributeTable:
    """Read ``attributes.tsv`` or ``attributes.json`` (a folder: its ``attributes.json``, else its TSV).

        >>> import tempfile
        >>> d = tempfile.mkdtemp()
        >>> _ = write_attribute_table(d, AttributeTable([AttributeRow("a", "m", {"fg_size": 0.5})]))
        >>> read_attribute_table(d + "/attributes.tsv").rows[0].scores["fg_size"]
        0.5
    """
    p = Path(path)
    if p.is_dir():
        p = p / "attributes.json" if (p / "attributes.json").is_file() else p / "attributes.tsv"
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise DevilError(f"{p}: cannot read the attribute table ({exc})") from None
    if p.suffix == ".json":
        return _from_json(p, text)
    lines = text.splitlines()
    if not lines or not lines[0].startswith("clip_id\tmask_id"):
        raise DevilError(f"{p}: not an attributes.tsv (the header must start with clip_id, mask_id)")
    header = lines[0].split("\t")
    return AttributeTable([_row_from_tsv(header, line, p, i + 2) for i, line in enumerate(lines[1:]) if line])


def _from_json(p: Path, text: str) -> AttributeTable:
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise DevilError(f"{p}: not JSON ({exc})") from None
    if not isinstance(doc, Mapping) or doc.get("format") != TABLE_FORMAT:
        raise DevilError(f"{p}: not a devil-attributes document")
    rows = [AttributeRow(str(r["clip_id"]), str(r["mask_id"]),
                         {a: _cell_score(v) for a, v in r.get("scores", {}).items()},
                         {a: str(g) for a, g in r.get("groups", {}).items()}, tuple(r.get("configs", ())))
            for r in doc.get("rows", [])]
    return AttributeTable(rows, dict(doc.get("rules", {})), dict(doc.get("options", {})),
                          dict(doc.get("unseparated", {})))


__all__ = ["AttributeRow", "AttributeTable", "GROUPS", "TABLE_FORMAT", "UNSCORED_REASON", "assign_groups",
           "json_document",
           "read_attribute_table", "tsv_text", "write_attribute_table"]
