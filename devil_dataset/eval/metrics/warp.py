"""Warp error (mask) (the release's metrics): the metric that keeps its per-video values and declares what it prepares.

The kernels (flows' occlusion, backward warp, the value at the pixels entering the mean) are in
:mod:`devil_dataset.eval.kernels.warp` (numpy) and :mod:`devil_dataset.eval.kernels.warp_torch` (torch).

    >>> import numpy as np
    >>> m = WarpErrorMetric(EvalOptions(flow="dis"))
    >>> m.prepares_ground_truth, m.prepared_per_hole, m.prepare_identity()["flow_backend"]
    (True, True, 'dis')
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ...core.flow import DIS_PRESET, flow_estimator
from ...core.weights import weights_info, weights_provenance
from ..kernels.batches import frame_batches
from ..kernels.warp import GroundTruthFlow, HoleFlow, warp_error_at
from ..kernels.warp_torch import DeviceGroundTruthFlow
from .metric import EvalOptions, Metric, VideoSample
from .pixel import resolve_pixel_backend

#: The names the ground-truth cache stores the prepared states under (a subclass is stored as its base).
_KINDS_OF: dict[type, str] = {GroundTruthFlow: "GroundTruthFlow", DeviceGroundTruthFlow: "GroundTruthFlow",
                              HoleFlow: "HoleFlow"}


class WarpErrorMetric(Metric):
    """Warp error (mask): flow on GT frames (RAFT if cached, else DIS, per ``EvalOptions.flow``)."""

    keys = ("warp_error_mask",)
    values: list[float]  # declared state (add_state): one value per video

    def __init__(
        self, options: EvalOptions, flow_fn: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None
    ) -> None:
        super().__init__()
        self.options = options
        self.add_state("values", list)
        self._injected = flow_fn is not None
        self.flow = flow_estimator(options.flow, options.device, flow_fn, precision=options.precision)
        self.backend = self.flow.name
        self._flow_batch = self.flow.batch
        self.pixel_backend, self.pixel_device = resolve_pixel_backend(options)

    def prepare(self, gt: np.ndarray, hole: np.ndarray | None = None) -> GroundTruthFlow | HoleFlow:
        """GT forward and backward flow per pair (:class:`GroundTruthFlow`), or with ``hole`` only what the warp
        error needs under it (:class:`HoleFlow`): shared by every method. On the torch backend the occlusion is
        evaluated on the device; the points are the same."""
        fws: list[np.ndarray] = []
        bws: list[np.ndarray] = []
        for s in frame_batches(len(gt) - 1, self.options.batch_size):
            a, b = gt[s.start: s.stop], gt[s.start + 1: s.stop + 1]
            fw, bw = self._flow_batch(a, b), self._flow_batch(b, a)
            fws += list(fw)
            bws += list(bw)
        flow = (DeviceGroundTruthFlow(fws, bws, device=self.pixel_device, batch_size=max(1, self.options.batch_size))
                if self.pixel_backend == "torch" else GroundTruthFlow(fws, bws))
        return flow.for_hole(hole) if hole is not None else flow

    # Declared for the ground-truth cache: the flows are worth preparing ahead and storing, under each hole.
    prepares_ground_truth = True
    prepared_per_hole = True

    def prepare_identity(self) -> dict[str, Any] | None:
        """The flow backend actually used and, for RAFT, the device, batch size, precision and weights' sha256;
        ``None`` for an injected flow function (no stable identity)."""
        if self._injected:
            return None
        if self.backend == "dis":
            return {"metric": "warp_error", "flow_backend": "dis", "dis_preset": int(DIS_PRESET)}
        if self.backend == "raft":
            return {"metric": "warp_error", "flow_backend": "raft", "device": self.options.device,
                    "batch_size": self.options.batch_size, "precision": self.options.precision,
                    "weights": {"raft": str(weights_info("raft")["sha256"])}}
        return None

    def prepared_to_arrays(self, state: Any) -> tuple[str, dict[str, np.ndarray]]:
        """A :class:`GroundTruthFlow` or :class:`HoleFlow` as arrays (their own ``to_arrays``)."""
        if isinstance(state, (GroundTruthFlow, HoleFlow)):
            return _KINDS_OF.get(type(state), type(state).__name__), dict(state.to_arrays())
        return super().prepared_to_arrays(state)

    def prepared_from_arrays(self, kind: str, arrays: dict[str, np.ndarray]) -> Any:
        if kind == "HoleFlow":
            return HoleFlow.from_arrays(arrays)
        if kind == "GroundTruthFlow":
            return GroundTruthFlow.from_arrays(arrays)
        return super().prepared_from_arrays(kind, arrays)

    def update(self, video: VideoSample, prepared: GroundTruthFlow | HoleFlow | None = None) -> dict[str, float]:
        # the value is always computed at the points (numpy, cheap: the hole's pixels only), so that it is the same
        # bit for bit on every backend and with or without the ground-truth cache
        state = prepared if prepared is not None else self.prepare(video.gt, video.hole)
        if isinstance(state, GroundTruthFlow):
            state = state.for_hole(video.hole)
        elif not state.fits(video.hole):  # prepared for another hole: the flows are gone, compute them again
            state = self.prepare(video.gt, video.hole)
        assert isinstance(state, HoleFlow)
        value = warp_error_at(video.composite, state)
        self.values.append(value)
        return {"warp_error_mask": value}

    def compute(self) -> dict[str, float]:
        v = np.asarray(self.values, dtype=np.float64)
        ok = ~np.isnan(v)
        return {"warp_error_mask": float(v[ok].mean()) if ok.any() else float("nan")}

    def provenance(self) -> dict:
        prov: dict = {
            "flow_backend": self.backend, "flow_on": "GT frames", "occlusion": "forward-backward + motion boundary",
            "pixel_backend": self.pixel_backend, "pixel_device": self.pixel_device,
        }
        if self.backend == "raft" and not self._injected:
            from ...core.networks.precision import precision_provenance  # torch
            from ...core.networks.raft import RAFT_ITERATIONS  # torch

            prov["raft_iterations"] = RAFT_ITERATIONS
            prov.update(precision_provenance(self.options.precision, self.options.device))
            prov["weights"] = weights_provenance(("raft",), False)
        elif self.backend == "dis":
            prov["dis_preset"] = int(DIS_PRESET)
        return prov


__all__ = ["WarpErrorMetric"]
