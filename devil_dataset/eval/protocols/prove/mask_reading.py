"""What a removal run's masks hold, and the one conversion made to them (``docs/removal.md``, "Masks").

PROVE's code reads a mask's grey value (Pillow ``L``): an object is where it is above 127, and RC-S's windows count
every nonzero pixel of a crop as hole. Masks in other conventions silently give other numbers there, so each mask
video is classified once (:func:`read_mask_values`) and the run says what it read:

- ``binary``: only 0 and 255 (or empty): read as PROVE reads it;
- ``zero_one``: only 0 and 1, some 1 (DAVIS-style label PNGs): PROVE's threshold would find no object at all; the
  mask is **converted** to 0 / 255 (1 = object) and the results say so: such masks are never read as empty;
- ``palette``: a folder of palette PNGs (DAVIS's annotations): read by index, every nonzero index an object
  (**converted** to 0 / 255); decoded to colours, DAVIS's first object (dark red) is grey 38, no object above 127;
- ``grey_edges``: a few grey pixels (at most :data:`GREY_EDGE_FRACTION` of the pixels; a resized or anti-aliased
  edge): read as PROVE reads it (object above 127, windows reading the grey values);
- ``lossy``: many pixels near 0 / 255 but not exactly (more than :data:`GREY_EDGE_FRACTION`, nearly all within
  :data:`LOSSY_LEVELS` of 0 or 255: JPEG or a lossy video codec): read as PROVE reads it, but the note says how
  many pixels are faint (1 to 127), which RC-S's windows count as hole while the object threshold does not: a JPEG
  mask whose background is 1 turns every window into hole and RC-S falls (0.63 to 0.21 in one test);
- ``grey``: many mid-grey pixels (a soft mask): read as PROVE reads it, with the same note.

Only ``zero_one`` and ``palette`` are converted; nothing is refused here (an inverted mask is found by
:mod:`devil_dataset.core.hole_check`).

    >>> import numpy as np
    >>> m = np.zeros((2, 8, 8, 3), np.uint8); m[:, 2:5, 2:5] = 1
    >>> masks, reading = read_mask_values(m)
    >>> reading["kind"], int(masks.max())
    ('zero_one', 255)
    >>> read_mask_values(m * 255)[1]["kind"]
    'binary'
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ....core.hole_check import check_hole, hole_problem
from .kernels import MASK_THRESHOLD, grey_mask
from .removal import mask_report

#: At most this fraction of a mask video's pixels grey (neither 0 nor 255): a few grey edges.
GREY_EDGE_FRACTION = 0.01
#: Grey pixels within this many levels of 0 or 255 are compression noise (JPEG, a lossy video codec).
LOSSY_LEVELS = 16
#: A mask video whose grey pixels are at least this fraction compression noise is ``lossy``, else ``grey``.
LOSSY_SHARE = 0.9
KINDS: tuple[str, ...] = ("binary", "zero_one", "palette", "grey_edges", "lossy", "grey")


def _fraction(count: int, total: int) -> float:
    return round(count / total, 6) if total else 0.0


def read_mask_values(masks: np.ndarray, palette: bool = False) -> tuple[np.ndarray, dict[str, Any]]:
    """``(masks to score, reading)`` of one mask video (uint8 [T, H, W, 3] as read, white = object): the masks
    unchanged except a ``zero_one`` video scaled to 0 / 255, and what was read: ``kind`` (:data:`KINDS`), the
    fractions of pixels that are grey (``grey_pixels``: neither 0 nor 255), faint (``faint_pixels``: 1 to 127, read
    as hole by RC-S's windows only) and object (``object_pixels``: above 127), after any conversion. ``palette``:
    ``masks`` holds palette indices (:func:`~.layout.read_palette_indices`): every nonzero index is an object,
    scaled to 255 (``palette``)."""
    if palette:
        masks = (masks > 0).astype(np.uint8) * np.uint8(255)
        kind = "palette"
    elif masks.size and int(masks.max()) == 1:
        masks = masks * np.uint8(255)
        kind = "zero_one"
    else:
        kind = ""
    grey = np.stack([grey_mask(m) for m in masks]) if len(masks) else np.zeros((0, 1, 1), np.uint8)
    total = int(grey.size)
    odd = (grey != 0) & (grey != 255)
    n_odd = int(np.count_nonzero(odd))
    if not kind:
        if n_odd == 0:
            kind = "binary"
        elif n_odd <= GREY_EDGE_FRACTION * total:
            kind = "grey_edges"
        else:
            noise = int(np.count_nonzero(odd & ((grey <= LOSSY_LEVELS) | (grey >= 255 - LOSSY_LEVELS))))
            kind = "lossy" if noise >= LOSSY_SHARE * n_odd else "grey"
    faint = int(np.count_nonzero((grey > 0) & (grey <= MASK_THRESHOLD)))
    reading = {"kind": kind, "grey_pixels": _fraction(n_odd, total), "faint_pixels": _fraction(faint, total),
               "object_pixels": _fraction(int(np.count_nonzero(grey > MASK_THRESHOLD)), total)}
    return masks, reading


@dataclass
class PreparedMasks:
    """One video's masks as scored (``masks`` uint8 [T, H, W, 3], ``hole`` bool [T, H, W]: grey > 127) and the
    notes its results record: ``mask_values`` (the reading, when not plain ``binary``), ``non_binary_mask``
    (:func:`~.removal.mask_report`, when grey values remain) and ``inverted_mask`` (what
    :func:`~devil_dataset.core.hole_check.hole_problem` says, when the hole looks inverted)."""

    masks: np.ndarray
    hole: np.ndarray
    notes: dict[str, Any] = field(default_factory=dict)


def prepare_masks(raw: np.ndarray, palette: bool = False) -> PreparedMasks:
    """Classify and (``zero_one`` only) convert one video's masks, and run the package's inverted-mask check.

    >>> m = np.full((2, 8, 8, 3), 255, np.uint8); m[:, :2, :2] = 0   # white = background: 94% hole
    >>> prepare_masks(m).notes
    {'inverted_mask': 'the hole covers 94% of the frames'}
    """
    masks, reading = read_mask_values(raw, palette)
    hole = np.stack([grey_mask(m) for m in masks]) > MASK_THRESHOLD if len(masks) else np.zeros((0, 1, 1), bool)
    notes: dict[str, Any] = {}
    if reading["kind"] != "binary":
        notes["mask_values"] = reading
    report = mask_report(masks)
    if report["non_binary_frames"]:
        notes["non_binary_mask"] = report
    problem = hole_problem(check_hole(hole))
    if problem is not None:
        notes["inverted_mask"] = problem
    return PreparedMasks(masks, hole, notes)


def mask_reading_lines(readings: dict[str, dict[str, Any]], total: int) -> list[str]:
    """The console lines of a run's mask readings (video -> :func:`read_mask_values`' reading), one per kind that
    is not plain ``binary``.

    >>> mask_reading_lines({"bear": {"kind": "zero_one"}}, 2)  # doctest: +ELLIPSIS
    ['masks hold 0/1 (not 0/255) in 1 of 2 videos (bear): read as 1 = object (scaled to 255), never as empty']
    """
    def named(kind: str) -> list[str]:
        return [n for n, r in readings.items() if r.get("kind") == kind]

    def which(names: list[str]) -> str:
        return f"{len(names)} of {total} videos ({', '.join(names[:3])}{' ...' if len(names) > 3 else ''})"

    lines = []
    if named("palette"):
        lines.append(f"masks are palette PNGs (DAVIS annotations) in {which(named('palette'))}: read by index, every "
                     "nonzero index = object (OpenCV's colours would hide DAVIS's dark-red object from > 127)")
    if named("zero_one"):
        lines.append(f"masks hold 0/1 (not 0/255) in {which(named('zero_one'))}: read as 1 = object (scaled to 255), "
                     "never as empty")
    for kind, what in (("lossy", "lossy-compressed (most grey pixels within "
                                 f"{LOSSY_LEVELS} levels of 0 or 255: JPEG or a lossy video codec)"),
                       ("grey", "soft (many mid-grey pixels)")):
        names = named(kind)
        if names:
            grey = max(readings[n]["grey_pixels"] for n in names)
            faint = max(readings[n]["faint_pixels"] for n in names)
            lines.append(f"warning: masks {what} in {which(names)}: up to {grey:.1%} of the pixels neither 0 nor 255, "
                         f"{faint:.1%} faint (1-{MASK_THRESHOLD}): read as PROVE reads them (object > "
                         f"{MASK_THRESHOLD}), but RC-S's windows count every nonzero pixel as hole, which lowers "
                         "RC-S; exact 0/255 masks (PNG frames, lossless video) avoid it (per video in input_notes)")
    return lines


__all__ = ["GREY_EDGE_FRACTION", "KINDS", "LOSSY_LEVELS", "LOSSY_SHARE", "PreparedMasks", "mask_reading_lines",
           "prepare_masks", "read_mask_values"]
