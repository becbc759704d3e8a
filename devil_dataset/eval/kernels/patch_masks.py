"""Patch masks of the re-inpainting self-consistency metric (Chen et al., "Assessing Image Inpainting via
Re-Inpainting Self-Consistency Evaluation", Algorithm 2 and Sec. 3.2).

Algorithm 2: the frame is cut into a grid of square patches and every patch is masked *independently* with
probability ``ratio``. Sec. 3.2: only pixels that were known in the first pass are masked again
(``re-mask = patch mask AND NOT hole``); the first inpainting's hole stays filled.

    >>> import numpy as np
    >>> rng = clip_rng(0, "clip-a")
    >>> m = patch_mask((64, 32), patch_size=16, ratio=0.5, rng=rng)
    >>> m.shape, m.dtype
    ((32, 64), dtype('bool'))
    >>> hole = np.zeros((2, 32, 64), bool); hole[:, :16, :16] = True
    >>> bool((remask(m, hole) & hole).any())  # never re-masks a hole pixel
    False
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Iterator

import numpy as np

# Patch side in pixels at the evaluation size 832x480 (the release's slices): a 26 x 15 grid. Algorithm 2's listing
# is not in our copy of the paper; its text only says patch masks give "isolated small regions" (Sec. 3.3).
# 32 px keeps patches small against DEVIL's holes (brush widths 50-375 px at 1920x1080, i.e. ~22-166 px at
# 832x480) while still needing context from several pixels away. Override per metric (docs/reference-free-metrics.md).
DEFAULT_PATCH_SIZE = 32
# Second-mask ratio: drawn uniformly from [20%, 60%] for every re-inpainting, as in the paper's final
# evaluation and its validation on synthesized inpaintings (Sec. 4.5, 4.6). The ablations fix it at 40%.
DEFAULT_RATIO_RANGE: tuple[float, float] = (0.2, 0.6)
# Sec. 3.2 / Appendix 0.A: K = 10 re-inpaintings per first inpainted image.
DEFAULT_K = 10


def clip_rng(seed: int, clip_id: str) -> np.random.Generator:
    """A generator seeded from ``seed`` and a stable hash of ``clip_id`` (BLAKE2b, not Python's salted ``hash``).

    >>> float(clip_rng(0, "a").random()) == float(clip_rng(0, "a").random())
    True
    >>> float(clip_rng(0, "a").random()) == float(clip_rng(0, "b").random())
    False
    """
    digest = hashlib.blake2b(clip_id.encode("utf-8"), digest_size=16).digest()
    words = [int.from_bytes(digest[i:i + 4], "little") for i in range(0, 16, 4)]
    return np.random.default_rng(np.random.SeedSequence([int(seed) & 0xFFFFFFFF, *words]))


def patch_mask(size: tuple[int, int], patch_size: int, ratio: float, rng: np.random.Generator) -> np.ndarray:
    """Algorithm 2: bool [H, W] for ``size`` (W, H); each ``patch_size`` grid patch is True with prob. ``ratio``.

    The grid starts at the top-left corner; partial patches at the right and bottom edges are drawn like full ones.

    >>> m = patch_mask((8, 4), patch_size=4, ratio=1.0, rng=np.random.default_rng(0))
    >>> int(m.sum())
    32
    """
    width, height = size
    if patch_size < 1:
        raise ValueError(f"patch_size must be >= 1, got {patch_size}")
    if not 0.0 <= ratio <= 1.0:
        raise ValueError(f"ratio must be in [0, 1], got {ratio}")
    rows, cols = -(-height // patch_size), -(-width // patch_size)
    grid = rng.random((rows, cols)) < ratio
    return np.repeat(np.repeat(grid, patch_size, axis=0), patch_size, axis=1)[:height, :width]


def remask(patch: np.ndarray, hole: np.ndarray) -> np.ndarray:
    """The second mask of Sec. 3.2: ``patch`` ([H, W] or [T, H, W]) AND NOT ``hole`` [T, H, W]; bool [T, H, W].

    >>> hole = np.array([[[True, False]]]); bool(remask(np.ones((1, 2), bool), hole)[0, 0, 1])
    True
    """
    return np.logical_and(patch, ~hole)


@dataclass(frozen=True)
class ReMask:
    """One re-inpainting's second mask: the drawn ``ratio`` and the bool [T, H, W] ``mask`` (True = re-masked)."""

    ratio: float
    mask: np.ndarray


def re_inpainting_masks(hole: np.ndarray, rng: np.random.Generator, *, k: int = DEFAULT_K,
                        patch_size: int = DEFAULT_PATCH_SIZE,
                        ratio_range: tuple[float, float] = DEFAULT_RATIO_RANGE,
                        per_frame: bool = False) -> Iterator[ReMask]:
    """The ``k`` second masks of one clip with hole bool [T, H, W].

    For each re-inpainting a ratio is drawn from ``ratio_range`` (uniform; ``(r, r)`` fixes it), then one
    Algorithm-2 patch mask is drawn for the whole clip (``per_frame=False``, the default: the same patch pattern
    in every frame, so a re-masked pixel cannot be copied back from the same place in a neighbouring frame) or
    one per frame (``per_frame=True``). Only previously known pixels are re-masked.

    >>> hole = np.zeros((3, 16, 16), bool)
    >>> ms = list(re_inpainting_masks(hole, np.random.default_rng(0), k=2, patch_size=4))
    >>> len(ms), bool((ms[0].mask[0] == ms[0].mask[2]).all())
    (2, True)
    """
    lo, hi = ratio_range
    if not 0.0 <= lo <= hi <= 1.0:
        raise ValueError(f"ratio_range must satisfy 0 <= low <= high <= 1, got {ratio_range}")
    t, height, width = hole.shape
    for _ in range(k):
        ratio = float(lo + (hi - lo) * rng.random()) if hi > lo else float(lo)
        if per_frame:
            patch = np.stack([patch_mask((width, height), patch_size, ratio, rng) for _ in range(t)])
        else:
            patch = patch_mask((width, height), patch_size, ratio, rng)[None]
        yield ReMask(ratio, remask(patch, hole))
