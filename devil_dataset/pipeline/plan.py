"""What a benchmark run works from: the units of the slices and one plan object carrying every choice.

A *unit* is one (clip, hole mask) pair, which several slices can share (the sample's six foreground slices reuse
the same clips and some masks): :func:`plan_units` reads the slices' clip ids and holes. :class:`BenchmarkPlan`
holds the dataset, the methods, the slices and their units, the metrics, the options, the engine and the prediction
folders, so that every step of :mod:`devil_dataset.pipeline` takes one argument instead of eleven.

    >>> u = Unit("c", "f", 10, hole_shape=(10, 4, 5), hole_pixels=20)
    >>> u.key, round(clip_work([u], 3), 2)
    ('c-f', 55.0)
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Sequence

import numpy as np

from ..core.engines import Engine
from ..core.errors import DevilError
from ..data import iter_slice
from ..eval.metrics.metric import EvalOptions
from ..inpaint.contract import Inpainter
from ..inpaint.run import PredictionFolder, hole_fingerprint


def pack_hole(hole: np.ndarray) -> tuple[np.ndarray, tuple]:
    """A bool hole [T, H, W] as packed bits and its shape (a unit travels to the workers this small)."""
    return np.packbits(np.ascontiguousarray(hole, bool)), tuple(int(n) for n in hole.shape)


def unpack_hole(bits: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    """The bool hole :func:`pack_hole` packed."""
    return np.unpackbits(bits, count=int(np.prod(shape))).reshape(tuple(shape)).astype(bool)


@dataclass
class Unit:
    """One (clip, hole mask) pair and the slices (with row positions) that contain it."""

    clip_id: str
    fingerprint: str
    num_frames: int
    slices: list[str] = field(default_factory=list)
    hole_bits: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint8), repr=False)  # packed bool hole
    hole_shape: tuple[int, ...] = ()
    hole_pixels: int = 0  # hole pixels over all frames (the work estimate of :func:`clip_work`)

    def hole(self) -> np.ndarray:
        """The bool hole mask [T, H, W] (True = hole)."""
        return unpack_hole(self.hole_bits, self.hole_shape)

    @property
    def key(self) -> str:
        return f"{self.clip_id}-{self.fingerprint}"


def plan_units(dataset: str | os.PathLike, slices: Sequence[str]) -> tuple[dict[str, Unit], dict[str, list[str]]]:
    """Read the slices' clip ids and holes: ``(units by key, slice -> unit keys in row order)``.

    >>> units, order = plan_units("sample-dataset", ["fg_size_low"])  # doctest: +SKIP
    """
    units: dict[str, Unit] = {}
    order: dict[str, list[str]] = {}
    for s in slices:
        keys = []
        for row in iter_slice(dataset, s, columns=["clip_id", "hole"]):
            fp = hole_fingerprint(row["hole"])
            key = f"{row['clip_id']}-{fp}"
            if key not in units:
                bits, shape = pack_hole(row["hole"])
                units[key] = Unit(str(row["clip_id"]), fp, int(len(row["hole"])), [], bits, shape,
                                  int(np.count_nonzero(row["hole"])))
            unit = units[key]
            if unit.key in keys:
                raise DevilError(f"{dataset}: clip {unit.clip_id} appears twice in slice {s}")
            unit.slices.append(s)
            keys.append(unit.key)
        if not keys:
            raise DevilError(f"{dataset}: slice {s} has no videos")
        order[s] = keys
    return units, order


# Work estimate of one (unit, method) relative to the clip's ground-truth preparation (DIS flow both ways per
# pair): a frame costs FRAME_WORK, plus HOLE_WORK per frame fully covered by the hole (Telea and the SSIM windows
# grow with the hole). Measured on the demo: GT preparation ~9 s, an item 3-12 s per 45-frame clip.
GT_FRAME_WORK = 1.3


FRAME_WORK = 1.0


HOLE_WORK = 4.0


def clip_work(units: Sequence[Unit], items: int) -> float:
    """Estimated work of one clip task: its ground-truth preparation and ``items`` (unit, method) pairs spread
    over ``units`` (the order in which clips go to the workers, largest first; any positive measure would do).

    >>> u = Unit("c", "f", 10, hole_shape=(10, 4, 5), hole_pixels=20)
    >>> round(clip_work([u], 3), 2)
    55.0
    """
    if not units:
        return 0.0
    frames = units[0].num_frames
    per_item = sum(FRAME_WORK * u.num_frames + HOLE_WORK * u.hole_pixels / max(1, int(np.prod(u.hole_shape[1:])))
                   for u in units) / len(units)
    return GT_FRAME_WORK * frames + items * per_item



@dataclass
class BenchmarkPlan:
    """Every choice of one benchmark run, made once: what runs, on what, and where its outputs go.

    ``inpainters``: method -> inpainter (in Table 1's row order); ``units`` / ``order``: :func:`plan_units` of
    ``slices``; ``pixel_metrics`` are scored from memory per clip, ``network_metrics`` through the evaluation engine
    on the prediction folders; ``folders[(method, slice)]``: the opened prediction folders. ``provenance``: method ->
    what it is (:meth:`~devil_dataset.inpaint.method_spec.MethodSpec.provenance`; None for a baseline), whose
    ``identity`` keys the stored work; ``rerun``: methods whose stored work is ignored and made again.
    """

    dataset: str
    out: Path
    inpainters: dict[str, Inpainter]
    slices: tuple[str, ...]
    units: dict[str, Unit]
    order: dict[str, list[str]]
    pixel_metrics: list[str]
    network_metrics: list[str]
    skipped_metrics: dict[str, str]
    options: EvalOptions
    engine: Engine = field(default_factory=Engine)
    folders: dict[tuple[str, str], PredictionFolder] = field(default_factory=dict)
    provenance: dict[str, dict | None] = field(default_factory=dict)
    rerun: frozenset[str] = frozenset()

    @property
    def methods(self) -> tuple[str, ...]:
        return tuple(self.inpainters)

    def identity(self, method: str) -> str | None:
        """The method's identity (a hash of its code), None for a baseline."""
        record = self.provenance.get(method)
        return None if record is None else str(record["identity"])

    def without(self, methods: set[str]) -> "BenchmarkPlan":
        """The same plan without ``methods`` (methods that failed: the others are reported)."""
        return replace(self, inpainters={m: i for m, i in self.inpainters.items() if m not in methods},
                       folders={k: f for k, f in self.folders.items() if k[0] not in methods})

    @property
    def metrics(self) -> list[str]:
        """Every metric that runs (pixel, then network)."""
        return self.pixel_metrics + self.network_metrics

    def slice_counts(self) -> dict[str, int]:
        """Videos per slice."""
        return {s: len(self.order[s]) for s in self.slices}


__all__ = ["BenchmarkPlan", "Unit", "clip_work", "pack_hole", "plan_units", "unpack_hole"]
