"""The file side of ``devil label``: scoring clips one by one, the scores JSON files, importing hand labels.

- :func:`score_clips`: a scorer (camera motion, scene motion) over video files, clips or frame folders, in order;
  a clip that cannot be read or scored gets ``None`` and an error line instead of stopping the run.
- :func:`json_score` / :func:`score_text`: a score as strict JSON and as the text table prints it;
  :func:`scores_text_lines` the table itself.
- :func:`write_scores_file` / :func:`read_scores_file`: the ``--out`` JSON ``{..., "scores": {path: score}}`` and
  its reading back as ``{clip id: score}`` (also from the plain ``{path: score}`` that ``--json`` prints).
- :func:`import_bg_labels`: merge ``clip_id,label`` rows into a JSON labels file
  (:func:`~devil_dataset.builder.labels.read_bg_labels_csv`, :func:`~devil_dataset.builder.labels.save_labels_file`).

    >>> scores = {"a.mp4": 0.25, "bb.mp4": float("inf"), "c.mp4": None}
    >>> print("\\n".join(scores_text_lines({p: json_score(s) for p, s in scores.items()})))
    a.mp4   0.250000
    bb.mp4  inf
    c.mp4   -
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np

from ..core.atomic import atomic_write_text
from ..core.errors import DevilError
from ..core.progress import progress_bar
from ..core.video_io import load_clip
from .labels import load_labels_file, read_bg_labels_csv, save_labels_file

# Format tags of the scores files written by `devil label camera-motion|scene-motion --out`.
CAMERA_MOTION_SCORES_FORMAT = "devil-camera-motion-scores/1"
SCENE_MOTION_SCORES_FORMAT = "devil-scene-motion-scores/1"

JsonScore = float | str | None  # a score as strict JSON: the float, "inf" for +inf, None for no score


def json_score(score: float | None) -> JsonScore:
    """A score as strict JSON: the float, "inf" for +inf, null for None/NaN.

    >>> json_score(0.25), json_score(float("inf")), json_score(float("nan"))
    (0.25, 'inf', None)
    """
    if score is None or math.isnan(score):
        return None
    return "inf" if math.isinf(score) else float(score)


def score_text(score: JsonScore) -> str:
    """A JSON score (:func:`json_score`) as the text table prints it: six decimals, ``inf``, or ``-`` for none.

    >>> score_text(0.125), score_text("inf"), score_text(None)
    ('0.125000', 'inf', '-')
    """
    return "-" if score is None else (score if isinstance(score, str) else f"{score:.6f}")


def scores_text_lines(scores: Mapping[str, JsonScore]) -> list[str]:
    """One line per path: the path padded to the longest one, two spaces, its :func:`score_text`."""
    width = max(len(p) for p in scores)
    return [f"{p:{width}s}  {score_text(s)}" for p, s in scores.items()]


def score_clips(paths: Sequence[str], score_fn: Callable[[np.ndarray], float], *, desc: str,
                progress: bool) -> tuple[dict[str, float | None], list[str]]:
    """``score_fn(frames)`` of each clip, in order: ({path: score}, error lines).

    A clip that cannot be loaded or scored (:class:`DevilError`, :class:`ValueError`) scores ``None`` and adds one
    error line, starting with its path. ``progress`` shows a bar in a terminal, log lines otherwise.
    """
    scores: dict[str, float | None] = {}
    errors: list[str] = []
    # a bar in a terminal, log lines otherwise (tqdm alone printed nothing for minutes into a file)
    for path in progress_bar(paths, desc=desc, unit="clip", enabled=progress):
        try:
            frames = load_clip(path)
            scores[path] = score_fn(frames)
        except (DevilError, ValueError) as exc:
            scores[path] = None
            errors.append(str(exc) if str(exc).startswith(str(path)) else f"{path}: {exc}")
    return scores, errors


def unscored_paths(scores: Mapping[str, float | None]) -> list[str]:
    """The paths whose scorer returned NaN (scored, but no score: scene motion without a low-camera-motion
    segment); failed clips (``None``) are not among them.

    >>> unscored_paths({"a": float("nan"), "b": None, "c": 0.5})
    ['a']
    """
    return [p for p, s in scores.items() if s is not None and math.isnan(s)]


def write_scores_file(path: str | os.PathLike, record: Mapping[str, object], scores: Mapping[str, JsonScore]) -> Path:
    """Write ``{**record, "scores": scores}`` atomically as indented JSON (``record`` names the format and the
    scorer's settings, e.g. ``{"format": CAMERA_MOTION_SCORES_FORMAT, "detector": "sift", ...}``)."""
    return atomic_write_text(path, json.dumps({**record, "scores": scores}, indent=2) + "\n")


def clip_id_of(key: str) -> str:
    """A scores file's key as a clip id: the file name without its extension.

    >>> clip_id_of("clips/alice-lake-00000.mp4"), clip_id_of("release/JPEGImages/bob-00001")
    ('alice-lake-00000', 'bob-00001')
    """
    clip_id = Path(key).name
    return clip_id[: -len(Path(clip_id).suffix)] if Path(clip_id).suffix else clip_id


def _parse_score(path: Path, key: str, value: object) -> float | None:
    if value is None:
        return None
    if value == "inf":
        return math.inf
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    raise DevilError(f"{path}: score of {key!r} must be a number, \"inf\" or null, got {value!r}")


def read_scores_file(path: Path) -> dict[str, float | None]:
    """``{clip id: score}`` from a scores JSON: the ``{path: score}`` that ``--json`` prints or a
    :func:`write_scores_file` file (``"inf"`` -> +inf, null -> None). A file that is not one, a score of another
    kind, or two keys of one clip id raise :class:`DevilError` naming the file."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DevilError(f"{path}: not a JSON scores file ({exc})") from None
    if isinstance(doc, dict) and isinstance(doc.get("scores"), dict):
        doc = doc["scores"]
    if not isinstance(doc, dict):
        raise DevilError(f"{path}: expected a JSON object {{path: score}}")
    out: dict[str, float | None] = {}
    for key, value in doc.items():
        score = _parse_score(path, key, value)
        clip_id = clip_id_of(key)
        if clip_id in out:
            raise DevilError(f"{path}: two entries give the clip id {clip_id!r}")
        out[clip_id] = score
    return out


@dataclass(frozen=True)
class LabelsImport:
    """What :func:`import_bg_labels` did: rows read, how many were new or changed, the merged labels."""

    rows: dict[str, str]
    changed: int
    labels: dict[str, str]

    def count(self, label: str) -> int:
        """Clips of the merged labels with ``label`` (``low`` or ``high``)."""
        return sum(1 for v in self.labels.values() if v == label)


def import_bg_labels(csv_path: str | os.PathLike, labels_file: str | os.PathLike) -> LabelsImport:
    """Merge a CSV's ``clip_id,label`` rows into ``labels_file`` (created when missing; a row replaces an earlier
    label of its clip). A bad CSV or labels file raises :class:`DevilError` and writes nothing."""
    rows = read_bg_labels_csv(csv_path)
    existing = load_labels_file(labels_file)
    changed = sum(1 for cid, lab in rows.items() if existing.get(cid) != lab)
    merged = {**existing, **rows}
    save_labels_file(labels_file, merged)
    return LabelsImport(rows=rows, changed=changed, labels=merged)


__all__ = ["CAMERA_MOTION_SCORES_FORMAT", "SCENE_MOTION_SCORES_FORMAT", "JsonScore", "LabelsImport", "clip_id_of",
           "import_bg_labels", "json_score", "read_scores_file", "score_clips", "score_text",
           "scores_text_lines", "unscored_paths", "write_scores_file"]
