"""One clip's frame features and the similarities between its frames, each computed once and spread over threads.

Both motion labellers align frames of one clip at the scoring size: the camera-motion scorer its ten sampled frames
pairwise (SPEC section 3), the scene-motion scorer frame i onto frame k along its segment walk and every
consecutive pair (SPEC section 4). :class:`ClipFeatures` holds that work for one clip:

- features of each distinct frame are detected once (frames with identical bytes share them: a still synthetic
  shot is one detection), many frames at once on ``threads`` threads, in a fixed order;
- the cross-checked matches of each unordered pair are computed once (the reversed pair's are the same matches in
  OpenCV's order, :func:`~devil_dataset.core.alignment.reverse_matches`), and each ordered pair's similarity once;
- nothing is kept between clips: the camera-motion scorer returns its ``ClipFeatures`` in its result and the
  scene-motion scorer takes it as an argument (:func:`devil_dataset.builder.motion_scores.motion_scores`).

Every item is a pure function of the frames, so the numbers do not depend on the thread count or on which pairs
were asked first.

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> frames = np.repeat((rng.random((1, 96, 128, 3)) * 255).astype(np.uint8), 3, axis=0)
    >>> cf = ClipFeatures(frames, "orb", threads=2)
    >>> m = cf.similarities([(0, 2), (2, 0)])
    >>> [np.round(x, 6).tolist() for x in m] == [[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]] * 2
    True
    >>> cf.detections  # three identical frames: one detection
    1
"""
from __future__ import annotations

import hashlib
from typing import Iterable, Sequence

import numpy as np

from ..core.alignment import Features, detect_features, match_features, reverse_matches, similarity_from_matches
from ..core.thread_map import thread_map

Pair = tuple[int, int]


def _content_key(frame: np.ndarray) -> bytes:
    digest = hashlib.blake2b(repr((frame.shape, frame.dtype.str)).encode(), digest_size=20)
    digest.update(np.ascontiguousarray(frame).data)
    return digest.digest()


class ClipFeatures:
    """Features of the frames ``frames`` (uint8 [T, H, W, 3], already at the scoring size) with ``detector``, and the
    similarities between them; work spread over ``threads`` threads (results independent of it)."""

    def __init__(self, frames: np.ndarray, detector: str, *, threads: int = 1) -> None:
        self.frames = frames
        self.detector = detector
        self.threads = max(1, int(threads))
        self._first: list[int] | None = None  # frame -> first frame with the same bytes
        self._features: dict[int, Features] = {}
        self._matches: dict[Pair, np.ndarray] = {}
        self._similarity: dict[Pair, np.ndarray | None] = {}

    @property
    def detections(self) -> int:
        """How many frames had their features detected so far (distinct contents only)."""
        return len(self._features)

    def _same_as(self, k: int) -> int:
        if self._first is None:
            keys = thread_map(_content_key, list(self.frames), threads=self.threads)
            seen: dict[bytes, int] = {}
            self._first = [seen.setdefault(key, i) for i, key in enumerate(keys)]
        return self._first[k]

    def detect(self, indices: Iterable[int]) -> None:
        """Detect the features of frames ``indices`` that have none yet (in parallel, in index order)."""
        todo = sorted({self._same_as(k) for k in indices} - set(self._features))
        found = thread_map(lambda k: detect_features(self.frames[k], self.detector), todo, threads=self.threads)
        self._features.update(zip(todo, found))

    def features(self, k: int) -> Features:
        """Features of frame ``k`` (detected now if needed)."""
        self.detect([k])
        return self._features[self._same_as(k)]

    def similarities(self, pairs: Sequence[Pair]) -> list[np.ndarray | None]:
        """The similarity [2, 3] aligning frame i onto frame j for each ``(i, j)`` (None where alignment fails),
        as :func:`~devil_dataset.core.alignment.estimate_similarity` of their features gives it."""
        keys = [(self._same_as(i), self._same_as(j)) for i, j in pairs]
        todo = list(dict.fromkeys(k for k in keys if k not in self._similarity))
        self.detect(k for pair in todo for k in pair)
        unordered = list(dict.fromkeys((min(k), max(k)) for k in todo if (min(k), max(k)) not in self._matches))
        found = thread_map(lambda p: match_features(self._features[p[0]], self._features[p[1]]), unordered,
                           threads=self.threads)
        self._matches.update(zip(unordered, found))
        sims = thread_map(self._similarity_of, todo, threads=self.threads)
        self._similarity.update(zip(todo, sims))
        return [self._similarity[k] for k in keys]

    def _similarity_of(self, key: Pair) -> np.ndarray | None:
        i, j = key
        matches = self._matches[(i, j)] if i <= j else reverse_matches(self._matches[(j, i)])
        return similarity_from_matches(self._features[i], self._features[j], matches)


__all__ = ["ClipFeatures"]
