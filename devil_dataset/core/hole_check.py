"""Is this hole the right way round? The one check every command that sees a hole runs (``devil evaluate`` in both
protocols, ``devil benchmark``, ``devil inpaint``, ``devil diagnose``): masks read inverted (white = known where
white = hole was meant, or the reverse) make a hole that covers most of every frame, and a method's changes then
fall outside the hole, where the composite hides them: ``--protocol propainter`` reported PSNR 41.93 instead of
32.00 for such a run, and exited 0.

:func:`check_hole` measures a video (``hole`` bool [T, H, W], True = hole; optionally a prediction and its ground
truth, uint8 [T, H, W, 3]) and :func:`hole_problem` says what is wrong, in words, or ``None``:

- **the hole is implausible**: it covers more than :data:`IMPLAUSIBLE_HOLE_FRACTION` of the frames on average
  (DEVIL's largest masks, the ``fgs-h`` presets, cover at most ~14% of a frame; DAVIS object masks rarely half);
- **the prediction differs from the ground truth mostly outside the hole**: more than
  :data:`OUTSIDE_CHANGED_FRACTION` of the known pixels changed by more than :data:`CHANGED_LEVELS` 8-bit levels
  (above a lossy round trip's noise), and most of the changed pixels are known ones (outside the hole).

:func:`hole_warning` makes the one warning line of a run (the videos named, and how to fix it).

    >>> import numpy as np
    >>> gt = np.zeros((2, 10, 10, 3), np.uint8); hole = np.zeros((2, 10, 10), bool); hole[:, :3, :3] = True
    >>> pred = gt.copy(); pred[hole] = 200                       # inpainted the hole: fine
    >>> hole_problem(check_hole(hole, pred, gt)) is None
    True
    >>> hole_problem(check_hole(~hole, pred, gt))                # the same masks read inverted
    'the hole covers 91% of the frames'
    >>> pred = gt.copy(); pred[:, 5:] = 90                       # changed the known half only
    >>> print(hole_problem(check_hole(hole, pred, gt)))
    the output differs from the ground truth on 55% of the known pixels, 0% of the hole's: mostly outside the hole
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np

#: A hole covering more than this fraction of the frames (mean over the video) is taken for an inverted mask.
IMPLAUSIBLE_HOLE_FRACTION = 0.5
#: A pixel changed by more than this many 8-bit levels on some channel counts as changed (a lossy round trip stays
#: below it).
CHANGED_LEVELS = 8
#: A prediction that changed more than this fraction of the known pixels, most of its changed pixels being known
#: ones, is taken for one made with inverted masks (or one that writes outside the hole).
OUTSIDE_CHANGED_FRACTION = 0.05
#: How to fix it, for every warning.
INVERTED_MASK_FIX = ("check the mask convention: --mask-dir masks (DAVIS / ProPainter), the dataset's hole and "
                     "--callable's hole are white/True = hole; the release's mask PNGs and --command inputs are "
                     "white = known. Masks the other way round: invert them (e.g. `mogrify -negate *.png`) or fix "
                     "how the method reads them, then run again")


@dataclass(frozen=True)
class HoleCheck:
    """What :func:`check_hole` measured: the mean hole fraction, and (with a prediction) the fractions of the known
    pixels and of the hole's pixels the prediction changed (NaN without a prediction or without such pixels)."""

    hole_fraction: float
    known_changed: float = float("nan")
    hole_changed: float = float("nan")


def check_hole(hole: np.ndarray, pred: np.ndarray | None = None, gt: np.ndarray | None = None) -> HoleCheck:
    """Measure one video's hole (bool [T, H, W], True = hole) and, when given, how its prediction differs from the
    ground truth (uint8 [T, H, W, 3] each, the same shape) inside and outside it. See the module docstring."""
    hole = np.asarray(hole, bool)
    fraction = float(hole.mean()) if hole.size else 0.0
    if pred is None or gt is None or np.shape(pred) != np.shape(gt) or np.shape(pred)[:3] != hole.shape:
        return HoleCheck(fraction)
    changed = np.zeros(hole.shape, bool)
    for t in range(len(hole)):  # one frame at a time: no int16 copy of the whole video
        changed[t] = (np.abs(pred[t].astype(np.int16) - gt[t].astype(np.int16)).max(axis=-1) > CHANGED_LEVELS)
    n_hole, n_known = int(hole.sum()), int(hole.size - hole.sum())
    known = float(np.count_nonzero(changed & ~hole)) / n_known if n_known else float("nan")
    inside = float(np.count_nonzero(changed & hole)) / n_hole if n_hole else float("nan")
    return HoleCheck(fraction, known, inside)


def hole_problem(check: HoleCheck) -> str | None:
    """What looks wrong with a checked video, in words, or ``None`` (see the module docstring)."""
    if check.hole_fraction > IMPLAUSIBLE_HOLE_FRACTION:
        return f"the hole covers {check.hole_fraction:.0%} of the frames"
    known, inside = check.known_changed, check.hole_changed
    inside = 0.0 if inside != inside else inside
    if known == known and known > OUTSIDE_CHANGED_FRACTION and \
            known * (1 - check.hole_fraction) > inside * check.hole_fraction:
        return (f"the output differs from the ground truth on {known:.0%} of the known pixels, {inside:.0%} of the "
                "hole's: mostly outside the hole")
    return None


def hole_warning(problems: Mapping[str, str], total: int, where: str = "") -> str | None:
    """The warning line of a run whose videos ``problems`` (video -> :func:`hole_problem`) looked inverted, out of
    ``total``; ``None`` when none did.

    >>> print(hole_warning({"bear": "the hole covers 90% of the frames"}, 2, "MASKS"))  # doctest: +ELLIPSIS
    warning: were the masks read inverted? MASKS: 1 of 2 videos (bear: the hole covers 90% of the frames); check ...
    """
    if not problems:
        return None
    shown = "; ".join(f"{v}: {p}" for v, p in list(problems.items())[:3])
    more = f"; and {len(problems) - 3} more" if len(problems) > 3 else ""
    return (f"warning: were the masks read inverted? {where + ': ' if where else ''}{len(problems)} of {total} "
            f"video{'s' if total != 1 else ''} ({shown}{more}); {INVERTED_MASK_FIX}")


__all__ = ["CHANGED_LEVELS", "HoleCheck", "IMPLAUSIBLE_HOLE_FRACTION", "INVERTED_MASK_FIX", "OUTSIDE_CHANGED_FRACTION",
           "check_hole", "hole_problem", "hole_warning"]
