"""What every metric sees and how it reports: one pass over the videos feeds all requested metrics.

A metric is a small object (torchmetrics-style, :class:`Metric`): its state is declared (``add_state``) so
that ``reset()`` empties it and ``merge(other)`` combines two partial results exactly (per-video lists are
concatenated, sums added, Gaussian statistics pooled with their counts); ``update(video)`` once per video
returns that video's values (``{}`` for set-level metrics such as FID), ``compute()`` gives the slice-level
values. ``prepare(gt, hole)`` (optional) computes what depends on the ground truth only; its result is passed
to ``update(video, prepared)`` and can be shared by every method scored on the same clip.

    >>> import numpy as np
    >>> v = VideoSample("clip", np.zeros((2, 4, 4, 3), np.uint8), np.full((2, 4, 4, 3), 255, np.uint8),
    ...                 np.zeros((2, 4, 4), bool))
    >>> int(v.composite.max())  # no hole: the composite is the ground truth
    0
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Callable, Protocol, runtime_checkable

import numpy as np

from ...core.errors import DevilError, unknown_name
from ...core.networks import DEFAULT_DINO_MODEL, PRECISIONS, check_precision
from ...core.parity import Parity, resolve_modes
from ..kernels.batches import frame_batches
from ..kernels.composite import composite


@dataclass
class VideoSample:
    """One video to score: ground truth, raw prediction and hole mask, all at the evaluation size.

    ``gt`` and ``pred`` are uint8 [T, H, W, 3]; ``hole`` is bool [T, H, W] with True = occluded (to inpaint).
    ``composite`` is the release's C = M*GT + (1-M)*Pred with M = known (the release's metrics), exact in uint8.
    """

    clip_id: str
    gt: np.ndarray
    pred: np.ndarray
    hole: np.ndarray
    meta: dict = field(default_factory=dict)
    cache: dict = field(default_factory=dict, repr=False, compare=False)  # derived per-video work (e.g. I3D pass)

    @cached_property
    def composite(self) -> np.ndarray:
        return composite(self.pred, self.gt, self.hole)

    @property
    def num_frames(self) -> int:
        return int(self.gt.shape[0])


@runtime_checkable
class VideoMetric(Protocol):
    """Protocol of a metric: ``keys`` lists the result keys it produces (e.g. ``("psnr",)``)."""

    keys: tuple[str, ...]

    def update(self, video: VideoSample, prepared: Any = None) -> dict[str, float]:
        """Consume one video; return its per-video values (``{}`` for set-level metrics). ``prepared`` is what the
        metric's optional ``prepare(gt, hole)`` returned for the clip (only a metric with ``prepare`` receives it)."""

    def compute(self) -> dict[str, float]:
        """Slice-level values for every key in ``keys``."""

    def provenance(self) -> dict:
        """Modes, weights hashes and backends that produced the values (stored in the results JSON)."""


def merge_state(a: Any, b: Any) -> Any:
    """Combine two values of one declared state: lists concatenate, dicts merge per key, numbers add, objects
    with a ``merged`` method (e.g. :class:`~devil_dataset.eval.kernels.frechet.GaussianStats`) pool.

    >>> merge_state({"psnr": [1.0]}, {"psnr": [2.0, 3.0]})
    {'psnr': [1.0, 2.0, 3.0]}
    """
    if isinstance(a, list):
        return a + list(b)
    if isinstance(a, dict):
        return {k: merge_state(a[k], b[k]) if k in a and k in b else (a[k] if k in a else b[k])
                for k in dict.fromkeys([*a, *b])}
    if hasattr(a, "merged"):
        return a.merged(b)
    if isinstance(a, (int, float)):
        return a + b
    raise TypeError(f"state of type {type(a).__name__} cannot be merged")


class Metric:
    """Base of the metric classes: declared, resettable, mergeable state (see the module docstring).

    >>> class Count(Metric):
    ...     keys = ("n",)
    ...     def __init__(self):
    ...         super().__init__(); self.add_state("seen", list)
    ...     def update(self, video, prepared=None):
    ...         self.seen.append(video.clip_id); return {}
    ...     def compute(self):
    ...         return {"n": float(len(self.seen))}
    >>> a, b = Count(), Count(); a.seen, b.seen = ["x"], ["y", "z"]
    >>> a.merge(b).compute()
    {'n': 3.0}
    """

    keys: tuple[str, ...] = ()

    def __init__(self) -> None:
        self._state_defaults: dict[str, Callable[[], Any]] = {}

    def add_state(self, name: str, default: Callable[[], Any]) -> None:
        """Declare state ``name``, created by ``default()`` now and at every ``reset()``."""
        self._state_defaults[name] = default
        setattr(self, name, default())

    def state_names(self) -> tuple[str, ...]:
        return tuple(self._state_defaults)

    def reset(self) -> None:
        """Back to the state before the first ``update``."""
        for name, default in self._state_defaults.items():
            setattr(self, name, default())

    def state_dict(self) -> dict[str, Any]:
        """The declared state (plain values, picklable: what a worker sends back)."""
        return {name: getattr(self, name) for name in self._state_defaults}

    def merge(self, other: "Metric | dict[str, Any]") -> "Metric":
        """Add ``other``'s state (a metric of the same class, or its ``state_dict()``) to this one; returns ``self``."""
        if isinstance(other, dict):
            state = other
        elif type(other) is not type(self):
            raise TypeError(f"cannot merge {type(other).__name__} into {type(self).__name__}")
        else:
            state = other.state_dict()
        for name in self._state_defaults:
            setattr(self, name, merge_state(getattr(self, name), state[name]))
        return self

    def prepare(self, gt: np.ndarray, hole: np.ndarray | None = None) -> Any:
        """Ground-truth-only work for one clip (None: nothing to share); passed back to ``update``."""
        return None

    # What the metric prepares, declared for the ground-truth cache (:mod:`devil_dataset.eval.scoring.gt_cache`) and
    # the read-ahead of the evaluation pass: the cache knows no metric by name, it asks these.
    #: ``prepare`` does work worth doing ahead of the scoring and storing (flows, network features).
    prepares_ground_truth: bool = False
    #: The state worth storing is the one under a hole (``prepare(gt, hole)``): entries are keyed by the hole too.
    prepared_per_hole: bool = False

    def prepare_identity(self) -> dict[str, Any] | None:
        """What makes ``prepare``'s output what it is besides the clip (JSON-able: backend, device, precision,
        weights' sha256), or ``None`` when it must not be stored (the default; an injected network or flow)."""
        return None

    def prepared_to_arrays(self, state: Any) -> tuple[str, dict[str, np.ndarray]]:
        """``(kind, arrays)`` of a prepared state, for storage: an array or a list of arrays here; a metric whose
        state is an object overrides this and :meth:`prepared_from_arrays`.

        >>> Metric().prepared_to_arrays([np.zeros(2)])[0]
        'list'
        """
        if isinstance(state, np.ndarray):
            return "array", {"0": state}
        if isinstance(state, (list, tuple)) and all(isinstance(a, np.ndarray) for a in state):
            return "list", {str(i): a for i, a in enumerate(state)}
        raise TypeError(f"{type(self).__name__}: a prepared state of type {type(state).__name__} cannot be stored")

    def prepared_from_arrays(self, kind: str, arrays: dict[str, np.ndarray]) -> Any:
        """The state :meth:`prepared_to_arrays` took apart (``ValueError`` for a kind this metric does not store).

        >>> m = Metric(); m.prepared_from_arrays(*m.prepared_to_arrays([np.ones(1)]))
        [array([1.])]
        """
        if kind == "array":
            return arrays["0"]
        if kind == "list":
            return [arrays[str(i)] for i in range(len(arrays))]
        raise ValueError(f"{type(self).__name__}: unknown prepared state kind {kind!r}")

    def update(self, video: VideoSample, prepared: Any = None) -> dict[str, float]:  # pragma: no cover
        raise NotImplementedError

    def compute(self) -> dict[str, float]:  # pragma: no cover
        raise NotImplementedError

    def provenance(self) -> dict:
        return {}


#: The metric modes each parity sets (:mod:`devil_dataset.core.parity`): ``release`` scores as the release does
#: (the release's metrics: SSIM data range 2; PVCS windows of short videos padded with the ground truth's last frame),
#: ``corrected`` with the fixed definitions (data range 1; each window padded with its own last frame).
EVAL_PARITY_MODES: dict[str, dict[str, str]] = {
    "release": {"ssim_mode": "release", "pvcs_mode": "release", "psnr_cap": "slice_max"},
    "corrected": {"ssim_mode": "standard", "pvcs_mode": "corrected", "psnr_cap": "one_grey_level"},
}
#: ``psnr_cap``: ``slice_max``, the release's clipping of infinite PSNR-type values to the slice's largest
#: finite value (depends on the other videos), or ``one_grey_level``, each frame capped at the PSNR of a one-grey-level
#: error (:func:`devil_dataset.eval.kernels.pixel.one_grey_level_psnr`: depends on the frame size alone).


#: Where the pixel metrics compute (``EvalOptions.pixel_backend``).
PIXEL_BACKENDS = ("auto", "numpy", "torch")
#: What an evaluation protocol's name (``EvalOptions.protocol``) looks like; the protocols themselves are
#: :mod:`devil_dataset.eval.protocols` (its registry refuses an unknown name, listing the known ones).
PROTOCOL_NAME = re.compile(r"^[a-z][a-z0-9_-]*$")
#: The networks' arithmetic (``EvalOptions.precision``): float32 is the reference; tf32 and bf16 are faster on a GPU.
NETWORK_PRECISIONS = PRECISIONS


@dataclass(frozen=True)
class EvalOptions:
    """Options every metric receives at construction: ``MetricClass(options)``.

    ``parity``: ``"release"`` (default) or ``"corrected"``: sets ``ssim_mode`` and ``pvcs_mode`` together
    (:data:`EVAL_PARITY_MODES`). A mode left at ``None`` takes the value parity sets; a mode given explicitly wins.
    After construction both fields hold the resolved mode (what the metrics read and results files record), so
    ``dataclasses.replace(options, parity=...)`` keeps the old modes: build a new ``EvalOptions`` to switch parity.
    ``ssim_mode``: ``"release"`` (data range 2, the release's implicit float range) or ``"standard"`` (range 1).
    ``flow``: ``"auto"`` (RAFT when its weights are cached, else DIS), ``"raft"`` or ``"dis"``.
    ``second_inpainter``: baseline used by the re-inpainting self-consistency metric.
    ``pvcs_mode``: padding of the 10-frame PVCS window for videos shorter than 10 frames (the release's metrics):
    ``"release"`` pads the composite window with the ground truth's last frame, as the release does;
    ``"corrected"`` pads each window with its own last frame. Videos of 10+ frames score the same in both.
    ``psnr_cap``: what an infinite PSNR-type value (PSNR, PCons: an identical frame or patch) becomes:
    ``"slice_max"`` (release: the per-video value is clipped to the largest finite one of the slice)
    or ``"one_grey_level"`` (corrected: each frame or pair capped at the PSNR of a one-grey-level error in one sample,
    10 log10(N 255^2) for N samples, a bound of every measurable value that depends on no other video).
    ``pixel_backend``: where PSNR, SSIM, PCons and the warp error compute: ``"numpy"`` (the reference CPU path),
    ``"torch"`` (float64 torch on ``device``, equal to numpy within 1e-9) or ``"auto"`` (torch when ``device`` is a
    GPU, else numpy).
    ``precision``: the networks' arithmetic (:data:`NETWORK_PRECISIONS`): ``"float32"`` (default, the reference),
    ``"tf32"`` (TensorFloat-32 matmuls and convolutions on an Ampere+ GPU) or ``"bf16"`` (bfloat16 autocast);
    the faster modes' deviation from float32 is printed by ``benchmarks/networks.py``.
    ``protocol``: the whole evaluation protocol (a name of :mod:`devil_dataset.eval.protocols`' registry):
    ``"devil"`` (default), or another protocol (``parity`` keeps its meaning inside it). Results files record it
    when it is not ``"devil"`` (DEVIL's results files keep their bytes).
    ``set_level_ci``: also give FID and VFID an interval (a delete-a-group jackknife over videos, kept as per-group
    Gaussian statistics: opt-in because of its memory and time, see ``devil evaluate --help``).
    ``dino_model``: the DINOv2 of the removal metrics RC-S / RC-T (a ``save_pretrained`` folder or a Hub id in the
    Hugging Face cache; default ``facebook/dinov2-giant``, PROVE's).

    >>> EvalOptions().ssim_mode, EvalOptions(parity="corrected").ssim_mode
    ('release', 'standard')
    >>> EvalOptions(parity="corrected", pvcs_mode="release").pvcs_mode  # an explicit mode wins
    'release'
    """

    device: str = "cpu"
    batch_size: int = 8
    ssim_mode: str | None = None
    pvcs_mode: str | None = None
    flow: str = "auto"
    seed: int = 0
    second_inpainter: str = "telea"
    self_consistency_submetric: str = "lpips"
    self_consistency_k: int = 10
    parity: Parity = "release"
    pixel_backend: str = "auto"
    precision: str = "float32"
    set_level_ci: bool = False
    protocol: str = "devil"
    psnr_cap: str | None = None
    dino_model: str = DEFAULT_DINO_MODEL

    def __post_init__(self) -> None:
        if self.pixel_backend not in PIXEL_BACKENDS:
            raise unknown_name("pixel backend", self.pixel_backend, PIXEL_BACKENDS)
        if not PROTOCOL_NAME.match(self.protocol):
            raise DevilError(f"protocol {self.protocol!r}: not a protocol name (lower-case letters, digits, _ and -)")
        check_precision(self.precision, kind="precision")
        modes = resolve_modes(self.parity, {"ssim_mode": self.ssim_mode, "pvcs_mode": self.pvcs_mode,
                                            "psnr_cap": self.psnr_cap}, EVAL_PARITY_MODES)
        for name, mode in modes.items():
            object.__setattr__(self, name, mode)  # frozen: the resolved modes are set once, here


__all__ = ["EVAL_PARITY_MODES", "EvalOptions", "Metric", "NETWORK_PRECISIONS", "PIXEL_BACKENDS", "PROTOCOL_NAME",
           "VideoMetric", "VideoSample", "composite", "frame_batches", "merge_state"]
