"""One clip's frame features and the similarities between its frames, each computed once and spread over threads.

Both motion labellers align frames of one clip at the scoring size: the camera-motion scorer its ten sampled frames
pairwise (the release's scorer), the scene-motion scorer frame i onto frame k along its segment walk and every
consecutive pair (the release's scorer). :class:`ClipFeatures` holds that work for one clip:

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
import threading
from typing import Callable, Iterable, Sequence, TypeVar, cast

import numpy as np

from ..core.alignment import Features, detect_features, match_features, reverse_matches, similarity_from_matches
from ..core.thread_map import thread_map

Pair = tuple[int, int]
R = TypeVar("R")


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
        self._wanted: set[int] = set()  # frames a later step needs: described with the next detection
        self._describing: dict[int, threading.Event] = {}  # frames being described in a running detect()
        self._lock = threading.Lock()
        self._matches: dict[Pair, np.ndarray] = {}
        self._similarity: dict[Pair, np.ndarray | None] = {}

    def check_fits(self, frames: np.ndarray, detector: str, scoring_size: tuple[int, int] | None) -> None:
        """Raise ``ValueError`` unless these features describe ``frames`` as a scorer would with ``detector`` at
        ``scoring_size`` (None: the frames' own size): same detector, frame count and size."""
        size = (frames.shape[2], frames.shape[1]) if scoring_size is None else tuple(scoring_size)
        have = (self.frames.shape[2], self.frames.shape[1])
        if self.detector != detector or len(self.frames) != len(frames) or have != size:
            raise ValueError(f"features of {len(self.frames)} frames at {have[0]}x{have[1]} with {self.detector!r} "
                             f"do not fit {len(frames)} frames at {size[0]}x{size[1]} with {detector!r}")

    @property
    def detections(self) -> int:
        """How many frames had their features detected so far (distinct contents only)."""
        return len(self._features)

    def same_as(self, k: int) -> int:
        """The first frame whose bytes equal frame ``k``'s (``k`` itself for a frame unlike any before it)."""
        if self._first is None:
            keys = thread_map(_content_key, list(self.frames), threads=self.threads)
            seen: dict[bytes, int] = {}
            self._first = [seen.setdefault(key, i) for i, key in enumerate(keys)]
        return self._first[k]

    def want(self, indices: Iterable[int]) -> None:
        """Mark frames ``indices`` as needed by a later step: the next :meth:`detect` describes them too (after the
        frames it is asked for), in the same parallel step."""
        self._wanted.update(self.same_as(k) for k in indices)

    def detect(self, indices: Iterable[int], then: Sequence[Callable[[], R]] = ()) -> list[R]:
        """Detect the features of frames ``indices`` that have none yet, then those of the frames :meth:`want` marked
        (in parallel, in that order), and run the tasks ``then`` on the same threads; returns the tasks' results.

        The tasks start as soon as a thread is free, so they fill the threads while the last frames are described
        instead of waiting for the slowest; a task may use the features of any frame in ``indices`` (it waits for
        one still being described)."""
        asked = [self.same_as(k) for k in indices]
        with self._lock:  # frames being described by another thread's call are left to it
            todo = [k for k in dict.fromkeys(asked + sorted(self._wanted))
                    if k not in self._features and k not in self._describing]
            self._wanted.clear()
            self._describing.update((k, threading.Event()) for k in todo)

        def run(item: object) -> object:
            if not isinstance(item, int):  # a task
                return cast("Callable[[], R]", item)()
            try:
                self._features[item] = detect_features(self.frames[item], self.detector)
            finally:  # a task waiting for it goes on (and fails on the missing features) if it raised
                with self._lock:
                    done = self._describing.pop(item)
                done.set()
            return None

        results = thread_map(run, [*todo, *then], threads=self.threads)
        return cast("list[R]", results[len(todo):])  # the tasks' results

    def features(self, k: int) -> Features:
        """Features of frame ``k`` (detected now if needed; waited for while another thread describes it)."""
        key = self.same_as(k)
        for _ in range(2):  # described here, or by another thread (waited for): then it is there
            if key in self._features:
                break
            pending = self._describing.get(key)
            if pending is not None:
                pending.wait()
            else:
                self.detect([key])
        return self._features[key]  # a KeyError only where its description raised (raised there too)

    def has_similarity(self, i: int, j: int) -> bool:
        """Whether the similarity aligning frame ``i`` onto frame ``j`` is computed already."""
        return (self.same_as(i), self.same_as(j)) in self._similarity

    def similarities(self, pairs: Sequence[Pair]) -> list[np.ndarray | None]:
        """The similarity [2, 3] aligning frame i onto frame j for each ``(i, j)`` (None where alignment fails),
        as :func:`~devil_dataset.core.alignment.estimate_similarity` of their features gives it. One task per
        unordered pair (matched once, then the RANSAC of each direction asked), spread over the threads."""
        keys = [(self.same_as(i), self.same_as(j)) for i, j in pairs]
        todo = list(dict.fromkeys(k for k in keys if k not in self._similarity))
        self.detect(k for pair in todo for k in pair)
        directions: dict[Pair, list[Pair]] = {}
        for i, j in todo:
            directions.setdefault((min(i, j), max(i, j)), []).append((i, j))
        found = thread_map(self._align, list(directions.items()), threads=self.threads)
        for (unordered, asked), (matches, sims) in zip(directions.items(), found):
            self._matches[unordered] = matches
            self._similarity.update(zip(asked, sims))
        return [self._similarity[k] for k in keys]

    def similarity(self, i: int, j: int) -> np.ndarray | None:
        """The similarity aligning frame ``i`` onto frame ``j`` (as :meth:`similarities`), computed in this thread
        if it is not known yet: for tasks that already run on the threads (a pair's alignment and its AffineScore or
        flow in one task, without a wait for every pair's alignment in between). Both frames must be detected
        (:meth:`detect`); several threads may ask at once (a pair asked twice is computed twice, the same value)."""
        key = (self.same_as(i), self.same_as(j))
        if key not in self._similarity:
            unordered = (min(key), max(key))
            matches, (sim,) = self._align((unordered, [key]))
            self._matches[unordered] = matches
            self._similarity[key] = sim
        return self._similarity[key]

    def _align(self, task: tuple[Pair, list[Pair]]) -> tuple[np.ndarray, list[np.ndarray | None]]:
        (a, b), asked = task
        matches = self._matches.get((a, b))
        if matches is None:
            matches = match_features(self.features(a), self.features(b))  # frame a -> frame b: query = b
        sims = [similarity_from_matches(self.features(i), self.features(j),
                                        matches if (i, j) == (a, b) else reverse_matches(matches))
                for i, j in asked]
        return matches, sims


__all__ = ["ClipFeatures"]
