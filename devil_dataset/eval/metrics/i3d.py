"""PVCS, VFID and VFID (clips) (the release's metrics): one I3D pass per video serves all three.

:class:`I3DMetric` yields ``pvcs``, ``vfid`` and ``vfid_clips`` from one window pass per video;
:class:`PVCSMetric` and :class:`VFIDMetric` are the same object restricted to their keys (the registry's names).
When both score the same :class:`~devil_dataset.eval.metrics.metric.VideoSample`, the pass is computed once: it is
kept on the sample (``video.cache``), which lives as long as that video, not in a module-level memo.
On the CPU each window (ground truth, then composite) goes through the network alone and on one thread
(:func:`~devil_dataset.core.networks.precision.sample_batches`, :func:`~devil_dataset.core.networks.precision.
network_threads`), so PVCS and VFID do not depend on ``EvalOptions.batch_size`` or the thread count; on a GPU in
batches of ``max(1, EvalOptions.batch_size // 4)`` windows per side.
With ``EvalOptions.set_level_ci`` the VFID statistics are also kept per group of videos and ``uncertainty()`` gives
VFID and VFID (clips) a delete-a-group jackknife interval (:mod:`devil_dataset.eval.stats`).
"""
from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np
import torch  # noqa: TID253

from ...core.errors import UnknownNameError
from ...core.networks.precision import network_threads, sample_batches  # noqa: TID253
from ...core.weights import cached_network, weights_provenance
from ..kernels.frechet import GaussianStats, blas_provenance, frechet_of
from ..stats.jackknife import add_grouped, set_level_uncertainty, video_group
from .metric import EvalOptions, Metric, VideoSample

PVCS_WINDOW = 10  # the release's metrics: frames per window, stride 1, max(1, T - 9) windows
PVCS_NORM_EPS = 1e-10  # the release's metrics: unit-normalisation epsilon (LPIPS normalize_tensor)
# Padding of a window past the last frame (T < 10): "release" pads the composite with the GT's last frame (the
# release's behaviour), "corrected" pads each video with its own last frame.
PVCS_MODES: tuple[str, ...] = ("release", "corrected")


def _shared_i3d(device: str, precision: str = "float32"):
    """One I3D per (device, weights file) per process, shared by PVCS and VFID, seen through one view per
    ``precision`` (``I3D.at_precision``: the same object for the same precision, so the pass stays shared)."""
    from ...core.networks.i3d import load_i3d

    return cached_network("i3d", device, lambda: load_i3d(device)).at_precision(precision)


def _unit(x: torch.Tensor) -> torch.Tensor:
    """LPIPS normalize_tensor: x / (||x||_channels + 1e-10)."""
    return x / (x.pow(2).sum(dim=1, keepdim=True).sqrt() + PVCS_NORM_EPS)


def _mean_thw(x: torch.Tensor) -> torch.Tensor:
    """Mean over T, H, W in the release's order (x.mean(4).mean(3).mean(2))."""
    return x.mean(4).mean(3).mean(2)


def _window_input(frames: torch.Tensor, starts: list[int], pad_frame: torch.Tensor | None = None) -> torch.Tensor:
    """uint8 [T, H, W, 3] on device -> float [len(starts), 3, 10, H, W] in [0, 1].

    Window positions past the last frame (videos shorter than 10 frames) repeat the last frame, or ``pad_frame``
    ([H, W, 3]) when given (the release pads the composite window with the GT's last frame).

    >>> f = torch.arange(3, dtype=torch.uint8)[:, None, None, None].expand(3, 1, 1, 3).contiguous()
    >>> (_window_input(f, [0])[0, 0, :, 0, 0] * 255).round().int().tolist()
    [0, 1, 2, 2, 2, 2, 2, 2, 2, 2]
    >>> (_window_input(f, [0], torch.full((1, 1, 3), 9, dtype=torch.uint8))[0, 0, :, 0, 0] * 255).round().int().tolist()
    [0, 1, 2, 9, 9, 9, 9, 9, 9, 9]
    """
    t = frames.shape[0]
    idx = torch.tensor([[min(s + k, t - 1) for k in range(PVCS_WINDOW)] for s in starts], device=frames.device)
    x = frames[idx]  # a copy: [B, 10, H, W, 3]
    if pad_frame is not None:
        past = torch.tensor([[s + k > t - 1 for k in range(PVCS_WINDOW)] for s in starts], device=frames.device)
        x[past] = pad_frame
    return x.permute(0, 4, 1, 2, 3).float() / 255.0


class I3DVideoPass:
    """Everything PVCS and VFID need from I3D for one video, computed once and shared between the metrics.

    ``pvcs``: per-window PVCS distances [W]; ``gt_windows`` / ``comp_windows``: Mixed_5c means per window
    [W, 1024] (VFID clips); ``gt_video`` / ``comp_video``: Mixed_5c means of the whole videos [1024] (VFID),
    computed on demand. Windows: stride 1, ``max(1, T - 9)`` of them. A video shorter than 10 frames is padded:
    ``pvcs_mode="release"`` pads the composite window with the GT's last frame (the release), ``"corrected"`` pads
    each with its own last frame (the window features of VFID (clips) share this padding; DEVIL clips have 45-90
    frames, so published numbers are not affected).
    """

    def __init__(self, net, video: VideoSample, device: str, batch_pairs: int, pvcs_mode: str = "release") -> None:
        from ...core.networks.i3d import PVCS_ENDPOINTS

        self.net, self.device = net, torch.device(device)
        self.gt_u8 = torch.as_tensor(np.ascontiguousarray(video.gt)).to(self.device)
        self.comp_u8 = torch.as_tensor(np.ascontiguousarray(video.composite)).to(self.device)
        if pvcs_mode not in PVCS_MODES:
            raise UnknownNameError(f"unknown pvcs_mode {pvcs_mode!r}; valid: {', '.join(PVCS_MODES)}")
        t = int(video.num_frames)
        comp_pad = self.gt_u8[t - 1] if pvcs_mode == "release" else None
        n_windows = max(1, t - PVCS_WINDOW + 1)
        pvcs, gt_w, comp_w = [], [], []
        with torch.inference_mode(), network_threads(self.device):
            for s in sample_batches(n_windows, self.device, batch_pairs):  # on the CPU one window per pass
                starts = list(range(s.start, s.stop))
                gt_acts = self._pvcs_endpoints(_window_input(self.gt_u8, starts))
                comp_acts = self._pvcs_endpoints(_window_input(self.comp_u8, starts, comp_pad))
                dist = torch.zeros(len(starts), dtype=torch.float64, device=self.device)
                for name in PVCS_ENDPOINTS:
                    d = (gt_acts[name] - comp_acts[name]).pow(2).sum(dim=1)
                    dist += d.flatten(1).mean(dim=1).double()
                gt_w.append(gt_acts["features"])
                comp_w.append(comp_acts["features"])
                del gt_acts, comp_acts
                pvcs.append(dist.cpu().numpy())
        self.pvcs = np.concatenate(pvcs)
        self.gt_windows = np.concatenate(gt_w)
        self.comp_windows = np.concatenate(comp_w)

    def _pvcs_endpoints(self, x: torch.Tensor) -> dict[str, Any]:
        """The unit-normalised activations at the PVCS endpoints of windows ``x`` and (``"features"``) their
        Mixed_5c means over T, H, W (float64 [B, 1024])."""
        from ...core.networks.i3d import PVCS_ENDPOINTS

        out: dict[str, Any] = {}
        for name, act in self.net.iter_endpoints(x, PVCS_ENDPOINTS[-1]):
            if name in PVCS_ENDPOINTS:
                out[name] = _unit(act)
            if name == PVCS_ENDPOINTS[-1]:
                out["features"] = _mean_thw(act).double().cpu().numpy()
            del act
        return out

    @torch.inference_mode()
    def _video_feature(self, frames: torch.Tensor) -> np.ndarray:
        x = frames.permute(3, 0, 1, 2).float().div_(255.0)[None]  # [1, 3, T, H, W]
        from ...core.networks.i3d import VFID_ENDPOINT

        with network_threads(self.device):
            act = self.net.endpoints(x, (VFID_ENDPOINT,))[0]
            return _mean_thw(act)[0].double().cpu().numpy()

    def video_features(self) -> tuple[np.ndarray, np.ndarray]:
        """Whole-video Mixed_5c means (GT, composite), one forward pass each."""
        return self._video_feature(self.gt_u8), self._video_feature(self.comp_u8)


def video_pass(net, video: VideoSample, options: EvalOptions) -> I3DVideoPass:
    """The I3D pass of ``video`` with ``net``, computed once per (sample, network) and kept on the sample."""
    mode = options.pvcs_mode
    assert mode is not None  # resolved by EvalOptions
    key = ("i3d", id(net), options.batch_size, mode)
    found = video.cache.get(key)
    if found is None or found.net is not net:
        found = video.cache[key] = I3DVideoPass(net, video, options.device, max(1, options.batch_size // 4), mode)
    return found


I3D_KEYS = ("pvcs", "vfid", "vfid_clips")


class I3DMetric(Metric):
    """PVCS (mean over windows of the I3D feature distance, per video) and VFID / VFID (clips) (Frechet distance
    of whole-video / per-window Mixed_5c means), composite vs GT, from one I3D pass per video.

    ``outputs`` restricts the keys (the whole-video forward pass of VFID runs only when ``vfid`` is wanted).
    State: per-video PVCS values and four :class:`~devil_dataset.eval.kernels.frechet.GaussianStats` (all mergeable).
    ``EvalOptions(set_level_ci=True)`` adds, for each of ``vfid`` / ``vfid_clips`` computed, the statistics per group
    of videos (``gt_video_groups``, ``comp_video_groups``, ``gt_clips_groups``, ``comp_clips_groups``: group ->
    GaussianStats, 2 x 10 x 8 MiB each for 1024-d; ``group_videos``: group -> videos) for :meth:`uncertainty`.
    """

    keys: tuple[str, ...] = I3D_KEYS
    # declared state (add_state): per-video PVCS values; feature statistics of whole videos and of windows
    values: list[float]
    gt_video: GaussianStats
    comp_video: GaussianStats
    gt_clips: GaussianStats
    comp_clips: GaussianStats
    # declared only with set_level_ci: group -> statistics of its videos (and group -> number of videos)
    gt_video_groups: dict[int, GaussianStats]
    comp_video_groups: dict[int, GaussianStats]
    gt_clips_groups: dict[int, GaussianStats]
    comp_clips_groups: dict[int, GaussianStats]
    group_videos: dict[int, int]

    def __init__(self, options: EvalOptions, network=None, outputs: tuple[str, ...] | None = None) -> None:
        super().__init__()
        if outputs is not None:
            self.keys = tuple(k for k in I3D_KEYS if k in outputs)
        self.options = options
        self._injected = network is not None
        self.net = network if network is not None else _shared_i3d(options.device, options.precision)
        self.add_state("values", list)
        for name in ("gt_video", "comp_video", "gt_clips", "comp_clips"):
            self.add_state(name, GaussianStats)
        if options.set_level_ci:
            for name in self._group_state_names():
                self.add_state(name, dict)

    def _group_state_names(self) -> tuple[str, ...]:
        """The per-group states of ``set_level_ci``: per computed set-level key, GT and composite."""
        names = [f"{side}_{part}_groups" for key, part in (("vfid", "video"), ("vfid_clips", "clips"))
                 if key in self.keys for side in ("gt", "comp")]
        return (*names, "group_videos") if names else ()

    def update(self, video: VideoSample, prepared=None) -> dict[str, float]:
        p = video_pass(self.net, video, self.options)
        out: dict[str, float] = {}
        if "pvcs" in self.keys:
            out["pvcs"] = float(p.pvcs.mean())
            self.values.append(out["pvcs"])
        if "vfid_clips" in self.keys or "vfid" in self.keys:
            self.gt_clips.add(p.gt_windows)
            self.comp_clips.add(p.comp_windows)
        if "vfid" in self.keys:
            g, c = p.video_features()
            self.gt_video.add(g[None])
            self.comp_video.add(c[None])
        if self.options.set_level_ci and ("vfid" in self.keys or "vfid_clips" in self.keys):
            group = video_group(video.clip_id)
            self.group_videos[group] = self.group_videos.get(group, 0) + 1
            if "vfid" in self.keys:
                add_grouped(self.gt_video_groups, video.clip_id, g[None])
                add_grouped(self.comp_video_groups, video.clip_id, c[None])
            if "vfid_clips" in self.keys:
                add_grouped(self.gt_clips_groups, video.clip_id, p.gt_windows)
                add_grouped(self.comp_clips_groups, video.clip_id, p.comp_windows)
        return out

    def compute(self) -> dict[str, float]:
        out = {"pvcs": math.fsum(self.values) / len(self.values) if self.values else float("nan"),  # any order
               "vfid": frechet_of(self.gt_video, self.comp_video),
               "vfid_clips": frechet_of(self.gt_clips, self.comp_clips)}
        return {k: out[k] for k in self.keys}

    def uncertainty(self, computed: Mapping[str, float] | None = None) -> dict[str, dict[str, Any]]:
        """With ``set_level_ci``: ``{"vfid": {...}, "vfid_clips": {...}}`` (the keys computed), each the
        delete-a-group jackknife of :func:`~devil_dataset.eval.stats.jackknife.grouped_jackknife_frechet` centred on
        ``computed[key]`` (what :meth:`compute` returned; computed again when not given); else ``{}``."""
        if not self.options.set_level_ci or not self._group_state_names():
            return {}
        computed = computed if computed is not None else self.compute()
        out: dict[str, dict[str, Any]] = {}
        for key, part in (("vfid", "video"), ("vfid_clips", "clips")):
            if key in self.keys:
                out.update(set_level_uncertainty(key, getattr(self, f"gt_{part}_groups"),
                                                 getattr(self, f"comp_{part}_groups"), self.group_videos, computed))
        return out

    def provenance(self) -> dict:
        from ...core.networks.i3d import PVCS_ENDPOINTS
        from ...core.networks.precision import precision_provenance

        prov: dict = {"network": "I3D (pytorch-i3d layout), input in [0, 1] not normalised",
                **precision_provenance(getattr(self.net, "precision", self.options.precision), self.options.device),
                "weights": weights_provenance(("i3d",), self._injected)}
        if "pvcs" in self.keys:
            prov.update({"layers": list(PVCS_ENDPOINTS), "window": PVCS_WINDOW, "pvcs_mode": self.options.pvcs_mode})
        if "vfid" in self.keys:
            prov.update({"layer": "Mixed_5c mean over T, H, W", "window": PVCS_WINDOW,
                         "samples": {"videos": self.gt_video.n, "clips": self.gt_clips.n},
                         "frechet": {"statistics": "exact fixed-point sums (eval/frechet.GaussianStats)",
                                     **blas_provenance()}})
        return prov


class PVCSMetric(I3DMetric):
    """PVCS: I3D feature distance between composite and GT over 10-frame windows, mean over windows."""

    keys = ("pvcs",)

    def __init__(self, options: EvalOptions, network=None) -> None:
        super().__init__(options, network, outputs=("pvcs",))


class VFIDMetric(I3DMetric):
    """VFID (one I3D Mixed_5c mean per whole video) and VFID (clips) (one per 10-frame window), composite vs GT."""

    keys = ("vfid", "vfid_clips")

    def __init__(self, options: EvalOptions, network=None) -> None:
        super().__init__(options, network, outputs=("vfid", "vfid_clips"))


__all__ = [
    "I3DMetric", "I3DVideoPass", "PVCSMetric", "PVCS_MODES", "PVCS_NORM_EPS", "PVCS_WINDOW", "VFIDMetric", "video_pass",
]
