"""Dense optical flow shared by scene-motion scoring, warp error, fidelity metrics and the flow baseline.

OpenCV DIS is the default (no weights needed). RAFT (torchvision) is used where its weights are present.

    >>> import numpy as np
    >>> a = np.zeros((64, 64, 3), np.uint8); a[20:40, 20:40] = 255
    >>> dis_flow(a, a).shape
    (64, 64, 2)
"""
from __future__ import annotations

from typing import Callable

import cv2
import numpy as np

from .cv_determinism import follow_opencv_pin
from .errors import UnknownNameError
from .weights import available

# DIS preset: MEDIUM is OpenCV's balance of speed and accuracy; named once here.
DIS_PRESET = cv2.DISOPTICAL_FLOW_PRESET_MEDIUM


def _gray(frame: np.ndarray) -> np.ndarray:
    return cv2.cvtColor(frame, cv2.COLOR_RGB2GRAY) if frame.ndim == 3 else frame


# OpenCV 5.0's DIS raises on frames under 12 px and can crash on frames 12-15 px high or wide (with a long other
# side): smaller frames are edge-padded to this many pixels per side before DIS and the flow is cropped back (the
# one guard: every DIS caller goes through dis_flow).
DIS_MIN_SIDE = 32


def dis_flow(frame0: np.ndarray, frame1: np.ndarray) -> np.ndarray:
    """Flow [H, W, 2] (dx, dy) from uint8 RGB ``frame0`` to ``frame1`` with OpenCV DIS:
    frame0(p) ~ frame1(p + flow(p))."""
    follow_opencv_pin()  # IPP is switched per thread: this may run in the evaluation's read-ahead thread
    g0, g1 = _gray(frame0), _gray(frame1)
    h, w = g0.shape
    pad_h, pad_w = max(0, DIS_MIN_SIDE - h), max(0, DIS_MIN_SIDE - w)
    if pad_h or pad_w:
        g0 = np.pad(g0, ((0, pad_h), (0, pad_w)), mode="edge")
        g1 = np.pad(g1, ((0, pad_h), (0, pad_w)), mode="edge")
    dis = cv2.DISOpticalFlow.create(DIS_PRESET)  # = cv2.DISOpticalFlow_create(), the name OpenCV's type stubs declare
    flow = dis.calc(g0, g1, None)  # type: ignore[call-overload]  # None: OpenCV allocates the output (the stubs omit it)
    return np.ascontiguousarray(flow[:h, :w])


# Flow backends for estimate_flow: "auto" = RAFT when its weights are cached, else DIS (the release's warp error uses a
# learned flow).
FLOW_BACKENDS = ("auto", "dis", "raft")


def resolve_flow_backend(backend: str = "auto") -> str:
    """``"raft"`` or ``"dis"``: ``"auto"`` picks RAFT when its weights are in the cache (no download).

    >>> resolve_flow_backend("dis")
    'dis'
    """
    if backend not in FLOW_BACKENDS:
        raise UnknownNameError(f"unknown flow backend {backend!r}; valid: {', '.join(FLOW_BACKENDS)}")
    if backend != "auto":
        return backend
    return "raft" if available("raft") else "dis"


class FlowEstimator:
    """One optical-flow estimator: ``est(frame0, frame1)`` -> flow [H, W, 2]; ``est.batch(frames0, frames1)`` ->
    [N, H, W, 2]; ``est.name`` is the backend actually used (``"dis"``, ``"raft"`` or ``"injected"``).

    >>> est = flow_estimator("dis")
    >>> a = np.zeros((2, 32, 32, 3), np.uint8)
    >>> est.name, est.batch(a, a).shape
    ('dis', (2, 32, 32, 2))
    """

    def __init__(self, name: str, pair: Callable[[np.ndarray, np.ndarray], np.ndarray],
                 batch: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None) -> None:
        self.name = name
        self._pair = pair
        self._batch = batch

    def __call__(self, frame0: np.ndarray, frame1: np.ndarray) -> np.ndarray:
        return self._pair(frame0, frame1)

    def batch(self, frames0: np.ndarray, frames1: np.ndarray) -> np.ndarray:
        if self._batch is not None:
            return self._batch(frames0, frames1)
        return np.stack([self._pair(a, b) for a, b in zip(frames0, frames1)])


def flow_estimator(backend: str = "auto", device: str = "cpu",
                   flow_fn: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None,
                   precision: str = "float32") -> FlowEstimator:
    """The one dispatcher of flow backends: ``"dis"`` (OpenCV, :func:`dis_flow`), ``"raft"`` (torchvision RAFT,
    cached weights required: :class:`~devil_dataset.core.errors.WeightsMissingError` here, not mid-pass) or ``"auto"``
    (RAFT if cached, else DIS). ``flow_fn`` injects a pair function (tests): the estimator is named ``"injected"``.
    ``precision``: RAFT's arithmetic (``"float32"``, the reference, ``"tf32"`` or ``"bf16"``:
    :mod:`devil_dataset.core.networks.precision`); DIS ignores it.

    >>> flow_estimator("dis").name
    'dis'
    """
    if flow_fn is not None:
        return FlowEstimator("injected", flow_fn)
    name = resolve_flow_backend(backend)
    if name == "dis":
        return FlowEstimator("dis", dis_flow)
    from .networks.raft import cached_raft  # upward import until networks/weights move to a lower layer

    raft = cached_raft(device, precision)
    return FlowEstimator("raft", raft.flow, raft.flow_batch)


def estimate_flow(frame0: np.ndarray, frame1: np.ndarray, backend: str = "auto", device: str = "cpu") -> np.ndarray:
    """Flow [H, W, 2] from uint8 RGB ``frame0`` to ``frame1`` (frame0(p) ~ frame1(p + flow(p))); see
    :func:`flow_estimator` for ``backend``.

    >>> a = np.zeros((32, 32, 3), np.uint8)
    >>> estimate_flow(a, a, backend="dis").shape
    (32, 32, 2)
    """
    return flow_estimator(backend, device)(frame0, frame1)
