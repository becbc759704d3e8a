"""The network-based DEVIL metrics (SPEC section 7): LPIPS, PVCS, FID, VFID / VFID (clips), warp error (mask).

Each metric follows :mod:`devil_dataset.eval.protocol`: ``Metric(options)`` loads its network (raising
:class:`~devil_dataset.errors.WeightsMissingError` when weights are not cached), ``update(video)`` consumes one
video and returns its per-video values (``{}`` for the set-level FID/VFID), ``compute()`` returns slice-level
values and ``provenance()`` names the weights (sha256), modes and flow backend. Tests inject networks with
random weights through the ``network=`` keyword.

Memory: a video's frames are processed in batches (``EvalOptions.batch_size`` frames; I3D windows in batches of
``max(1, batch_size // 4)`` GT/composite pairs); set-level metrics keep streaming float64 sums (mean and
covariance), never the per-frame features.

    >>> import numpy as np
    >>> frechet_distance(np.zeros(3), np.eye(3), np.ones(3), np.eye(3))
    3.0
"""
from __future__ import annotations

import weakref
from typing import Callable

import numpy as np
import torch
from scipy import linalg

from .protocol import EvalOptions, VideoSample

# SPEC section 7 constants.
FRECHET_EPS = 1e-6  # added to the covariance diagonals when sqrtm(sigma1 sigma2) is not finite (pytorch-fid)
FRECHET_IMAG_ATOL = 1e-3  # tolerated imaginary part on the diagonal of sqrtm (pytorch-fid / the release)
PVCS_WINDOW = 10  # frames per window, stride 1, max(1, T - 9) windows
# Padding of a window past the last frame (T < 10): "release" pads the composite with the GT's last frame (the
# release's behaviour, issue 10), "corrected" pads each video with its own last frame.
PVCS_MODES: tuple[str, ...] = ("release", "corrected")
PVCS_NORM_EPS = 1e-10  # unit-normalisation epsilon (LPIPS normalize_tensor)
OCC_FB_REL, OCC_FB_ABS = 0.01, 0.5  # forward-backward check: |fw + bw_w|^2 > 0.01 (|bw_w|^2 + |fw|^2) + 0.5
OCC_GRAD_REL, OCC_GRAD_ABS = 0.01, 0.002  # motion boundary: |grad fw|^2 > 0.01 |fw|^2 + 0.002


# ----------------------------------------------------------------------------------------------- Frechet distance
def frechet_distance(mu1: np.ndarray, sigma1: np.ndarray, mu2: np.ndarray, sigma2: np.ndarray,
                     eps: float = FRECHET_EPS) -> float:
    """Frechet distance between N(mu1, sigma1) and N(mu2, sigma2), as pytorch-fid and the release compute it.

    d^2 = |mu1 - mu2|^2 + Tr(sigma1 + sigma2 - 2 sqrt(sigma1 sigma2)); if the matrix square root is not finite,
    ``eps`` is added to both diagonals and it is retried. An imaginary part beyond 1e-3 on the diagonal is
    reported as a warning and dropped (the release warns; pytorch-fid raises).

    >>> frechet_distance(np.zeros(2), np.diag([1.0, 4.0]), np.zeros(2), np.diag([4.0, 9.0]))
    2.0
    """
    mu1, mu2 = np.atleast_1d(mu1), np.atleast_1d(mu2)
    sigma1, sigma2 = np.atleast_2d(sigma1), np.atleast_2d(sigma2)
    if mu1.shape != mu2.shape or sigma1.shape != sigma2.shape:
        raise ValueError(f"mismatched statistics: {mu1.shape} vs {mu2.shape}, {sigma1.shape} vs {sigma2.shape}")
    diff = mu1 - mu2
    covmean = linalg.sqrtm(sigma1.dot(sigma2))
    if not np.isfinite(covmean).all():
        offset = np.eye(sigma1.shape[0]) * eps
        covmean = linalg.sqrtm((sigma1 + offset).dot(sigma2 + offset))
    if np.iscomplexobj(covmean):
        if not np.allclose(np.diagonal(covmean).imag, 0, atol=FRECHET_IMAG_ATOL):
            import warnings

            warnings.warn(f"frechet_distance: imaginary component {np.max(np.abs(covmean.imag))} dropped", RuntimeWarning)
        covmean = covmean.real
    return float(diff.dot(diff) + np.trace(sigma1) + np.trace(sigma2) - 2 * np.trace(covmean))


class GaussianStats:
    """Streaming mean and sample covariance (``np.cov(rowvar=False)``) of feature vectors, in float64.

    Sums are taken around a shift (the first batch's mean) to avoid cancellation.

    >>> g = GaussianStats(); x = np.random.default_rng(0).normal(size=(50, 3))
    >>> g.add(x[:20]); g.add(x[20:])
    >>> bool(np.allclose(g.mean(), x.mean(0)) and np.allclose(g.cov(), np.cov(x, rowvar=False)))
    True
    """

    def __init__(self) -> None:
        self.n = 0
        self.shift: np.ndarray | None = None
        self.s1: np.ndarray | None = None
        self.s2: np.ndarray | None = None

    def add(self, features: np.ndarray) -> None:
        x = np.asarray(features, dtype=np.float64).reshape(len(features), -1)
        if len(x) == 0:
            return
        if self.shift is None:
            self.shift = x.mean(axis=0)
            self.s1 = np.zeros_like(self.shift)
            self.s2 = np.zeros((x.shape[1], x.shape[1]))
        x = x - self.shift
        self.n += len(x)
        self.s1 += x.sum(axis=0)
        self.s2 += x.T @ x

    def mean(self) -> np.ndarray:
        return self.shift + self.s1 / self.n

    def cov(self) -> np.ndarray:
        m = self.s1 / self.n
        return (self.s2 - self.n * np.outer(m, m)) / (self.n - 1)


def _frechet_of(a: GaussianStats, b: GaussianStats) -> float:
    """Frechet distance between two accumulated sets; NaN with fewer than 2 samples (covariance undefined)."""
    if a.n < 2 or b.n < 2:
        return float("nan")
    return frechet_distance(a.mean(), a.cov(), b.mean(), b.cov())


# ------------------------------------------------------------------------------------------------------ helpers
def _batches(n: int, size: int):
    size = max(1, int(size))
    for start in range(0, n, size):
        yield slice(start, min(n, start + size))


def _weights_provenance(names: tuple[str, ...], injected: bool) -> dict:
    if injected:
        return {n: {"name": n, "verified": "injected (not from the cache)"} for n in names}
    from .weights import weights_info

    return {n: weights_info(n) for n in names}


# ------------------------------------------------------------------------------------------------------- LPIPS
class LPIPSMetric:
    """LPIPS (AlexNet, v0.1) between the composite and the ground truth, full frame, mean over frames."""

    keys = ("lpips",)

    def __init__(self, options: EvalOptions, network=None) -> None:
        from .networks.lpips import LPIPSNetwork

        self.options = options
        self._injected = network is not None
        self.net = network if network is not None else LPIPSNetwork(options.device)
        self.values: list[float] = []

    def update(self, video: VideoSample) -> dict[str, float]:
        comp, gt = video.composite, video.gt
        per_frame = np.concatenate(
            [self.net.distance(gt[s], comp[s]) for s in _batches(len(gt), self.options.batch_size)]
        )
        value = float(per_frame.mean())
        self.values.append(value)
        return {"lpips": value}

    def compute(self) -> dict[str, float]:
        return {"lpips": float(np.mean(self.values)) if self.values else float("nan")}

    def provenance(self) -> dict:
        from .networks.lpips import LPIPS_NET, LPIPS_VERSION, lpips_heads_path
        from .weights import file_sha256

        return {
            "network": f"lpips {LPIPS_NET} v{LPIPS_VERSION}", "input": "composite vs GT, full frame, (x/255)*2-1",
            "weights": {**_weights_provenance(("alexnet",), self._injected),
                        "lpips_heads": {"file": f"lpips/weights/v{LPIPS_VERSION}/{LPIPS_NET}.pth",
                                        "sha256": file_sha256(lpips_heads_path()), "verified": "shipped in the lpips wheel"}},
        }


# --------------------------------------------------------------------------------------------------------- FID
class FIDMetric:
    """FID between all composite frames and all GT frames of the slice (pool3 of the FID Inception)."""

    keys = ("fid",)

    def __init__(self, options: EvalOptions, network=None) -> None:
        from .networks.inception import FIDInception

        self.options = options
        self._injected = network is not None
        self.net = network if network is not None else FIDInception(options.device)
        self.gt_stats, self.comp_stats = GaussianStats(), GaussianStats()

    def update(self, video: VideoSample) -> dict[str, float]:
        comp, gt = video.composite, video.gt
        for s in _batches(len(gt), self.options.batch_size):
            self.gt_stats.add(self.net.features(gt[s]))
            self.comp_stats.add(self.net.features(comp[s]))
        return {}

    def compute(self) -> dict[str, float]:
        return {"fid": _frechet_of(self.gt_stats, self.comp_stats)}

    def provenance(self) -> dict:
        return {"network": "pytorch-fid InceptionV3 pool3 (2048-d)", "input": "x/255, bilinear 299x299, 2x-1",
                "samples": {"gt_frames": self.gt_stats.n, "composite_frames": self.comp_stats.n},
                "weights": _weights_provenance(("inception",), self._injected)}


# ---------------------------------------------------------------------------------------------------- I3D pass


def _shared_i3d(device: str):
    """One I3D per (device, weights file) per process, shared by PVCS and VFID."""
    from .networks.i3d import load_i3d
    from .weights import cached_network

    return cached_network("i3d", device, lambda: load_i3d(device))


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
        from .networks.i3d import PVCS_ENDPOINTS

        self.net, self.device = net, torch.device(device)
        self.gt_u8 = torch.as_tensor(np.ascontiguousarray(video.gt)).to(self.device)
        self.comp_u8 = torch.as_tensor(np.ascontiguousarray(video.composite)).to(self.device)
        if pvcs_mode not in PVCS_MODES:
            raise ValueError(f"unknown pvcs_mode {pvcs_mode!r}; valid: {', '.join(PVCS_MODES)}")
        t = int(video.num_frames)
        comp_pad = self.gt_u8[t - 1] if pvcs_mode == "release" else None
        n_windows = max(1, t - PVCS_WINDOW + 1)
        pvcs, gt_w, comp_w = [], [], []
        with torch.inference_mode():
            for s in _batches(n_windows, batch_pairs):
                starts = list(range(s.start, s.stop))
                x = torch.cat([_window_input(self.gt_u8, starts), _window_input(self.comp_u8, starts, comp_pad)])
                b = len(starts)
                dist = torch.zeros(b, dtype=torch.float64, device=self.device)
                for name, act in net.iter_endpoints(x, PVCS_ENDPOINTS[-1]):
                    if name in PVCS_ENDPOINTS:
                        d = (_unit(act[:b]) - _unit(act[b:])).pow(2).sum(dim=1)
                        dist += d.flatten(1).mean(dim=1).double()
                    if name == PVCS_ENDPOINTS[-1]:
                        feats = _mean_thw(act).double().cpu().numpy()
                        gt_w.append(feats[:b])
                        comp_w.append(feats[b:])
                    del act
                del x
                pvcs.append(dist.cpu().numpy())
        self.pvcs = np.concatenate(pvcs)
        self.gt_windows = np.concatenate(gt_w)
        self.comp_windows = np.concatenate(comp_w)

    @torch.inference_mode()
    def _video_feature(self, frames: torch.Tensor) -> np.ndarray:
        x = frames.permute(3, 0, 1, 2).float().div_(255.0)[None]  # [1, 3, T, H, W]
        from .networks.i3d import VFID_ENDPOINT

        act = self.net.endpoints(x, (VFID_ENDPOINT,))[0]
        return _mean_thw(act)[0].double().cpu().numpy()

    def video_features(self) -> tuple[np.ndarray, np.ndarray]:
        """Whole-video Mixed_5c means (GT, composite), one forward pass each."""
        return self._video_feature(self.gt_u8), self._video_feature(self.comp_u8)


# Memo of the last video's pass, keyed by the VideoSample object (checked through a weak reference).
_PASS_MEMO: dict[str, object] = {}


def _video_pass(net, video: VideoSample, options: EvalOptions) -> I3DVideoPass:
    ref = _PASS_MEMO.get("video")
    if ref is not None and ref() is video and _PASS_MEMO.get("net") is net and _PASS_MEMO.get("mode") == options.pvcs_mode:
        return _PASS_MEMO["pass"]  # type: ignore[return-value]
    _PASS_MEMO.clear()
    result = I3DVideoPass(net, video, options.device, max(1, options.batch_size // 4), options.pvcs_mode)
    _PASS_MEMO.update({"video": weakref.ref(video), "net": net, "pass": result, "mode": options.pvcs_mode})
    return result


def _i3d_provenance(injected: bool) -> dict:
    return {"network": "I3D (pytorch-i3d layout), input in [0, 1] not normalised",
            "weights": _weights_provenance(("i3d",), injected)}


# -------------------------------------------------------------------------------------------------------- PVCS
class PVCSMetric:
    """PVCS: I3D feature distance between composite and GT over 10-frame windows, mean over windows."""

    keys = ("pvcs",)

    def __init__(self, options: EvalOptions, network=None) -> None:
        self.options = options
        self._injected = network is not None
        self.net = network if network is not None else _shared_i3d(options.device)
        self.values: list[float] = []

    def update(self, video: VideoSample) -> dict[str, float]:
        value = float(_video_pass(self.net, video, self.options).pvcs.mean())
        self.values.append(value)
        return {"pvcs": value}

    def compute(self) -> dict[str, float]:
        return {"pvcs": float(np.mean(self.values)) if self.values else float("nan")}

    def provenance(self) -> dict:
        from .networks.i3d import PVCS_ENDPOINTS

        return {**_i3d_provenance(self._injected), "layers": list(PVCS_ENDPOINTS), "window": PVCS_WINDOW,
                "pvcs_mode": self.options.pvcs_mode}


# -------------------------------------------------------------------------------------------------------- VFID
class VFIDMetric:
    """VFID (one I3D Mixed_5c mean per whole video) and VFID (clips) (one per 10-frame window), composite vs GT."""

    keys = ("vfid", "vfid_clips")

    def __init__(self, options: EvalOptions, network=None) -> None:
        self.options = options
        self._injected = network is not None
        self.net = network if network is not None else _shared_i3d(options.device)
        self.gt_video, self.comp_video = GaussianStats(), GaussianStats()
        self.gt_clips, self.comp_clips = GaussianStats(), GaussianStats()

    def update(self, video: VideoSample) -> dict[str, float]:
        p = _video_pass(self.net, video, self.options)
        self.gt_clips.add(p.gt_windows)
        self.comp_clips.add(p.comp_windows)
        g, c = p.video_features()
        self.gt_video.add(g[None])
        self.comp_video.add(c[None])
        return {}

    def compute(self) -> dict[str, float]:
        return {"vfid": _frechet_of(self.gt_video, self.comp_video),
                "vfid_clips": _frechet_of(self.gt_clips, self.comp_clips)}

    def provenance(self) -> dict:
        return {**_i3d_provenance(self._injected), "layer": "Mixed_5c mean over T, H, W", "window": PVCS_WINDOW,
                "samples": {"videos": self.gt_video.n, "clips": self.gt_clips.n}}


# -------------------------------------------------------------------------------------------------- warp error
def warp_backward(image: np.ndarray, flow: np.ndarray) -> np.ndarray:
    """Sample ``image`` [H, W, C] (or [H, W]) at p + flow(p), bilinear, coordinates clamped to the border.

    The FlowNet2 ``Resample2d`` semantics the release uses: weights from the unclamped position, the four
    neighbours clamped into the frame. Float32 arithmetic.

    >>> img = np.arange(12, dtype=np.float32).reshape(3, 4)
    >>> warp_backward(img, np.full((3, 4, 2), 0.5, np.float32))[0].tolist()
    [2.5, 3.5, 4.5, 5.0]
    """
    h, w = flow.shape[:2]
    xf = np.arange(w, dtype=np.float32)[None, :] + flow[..., 0].astype(np.float32)
    yf = np.arange(h, dtype=np.float32)[:, None] + flow[..., 1].astype(np.float32)
    x0, y0 = np.floor(xf), np.floor(yf)
    a, b = xf - x0, yf - y0
    xl = np.clip(x0, 0, w - 1).astype(np.intp)
    xr = np.clip(x0 + 1, 0, w - 1).astype(np.intp)
    yt = np.clip(y0, 0, h - 1).astype(np.intp) * w  # row offsets into the flattened image
    yb = np.clip(y0 + 1, 0, h - 1).astype(np.intp) * w
    img = image.astype(np.float32, copy=False)
    flat = img.reshape(h * w, *img.shape[2:])
    if img.ndim == 3:
        a, b = a[..., None], b[..., None]

    def px(index: np.ndarray) -> np.ndarray:  # img[y, x] gathered through flat indices (2x faster, same values)
        return np.take(flat, index, axis=0)

    return ((1 - a) * (1 - b) * px(yt + xl) + a * (1 - b) * px(yt + xr)
            + (1 - a) * b * px(yb + xl) + a * b * px(yb + xr)).astype(np.float32)


def occlusion_mask(fw: np.ndarray, bw: np.ndarray) -> np.ndarray:
    """Occluded pixels of frame t-1 (bool [H, W]) from forward flow ``fw`` (t-1 -> t) and backward ``bw``.

    SPEC section 7: with bw_w = bw warped by fw, occluded where |fw + bw_w|^2 > 0.01 (|bw_w|^2 + |fw|^2) + 0.5
    or where the squared forward-flow gradient > 0.01 |fw|^2 + 0.002 (forward differences, 0 on the last
    row/column), as ``detect_occlusion`` of fast_blind_video_consistency that the release calls.

    >>> z = np.zeros((4, 4, 2), np.float32)
    >>> bool(occlusion_mask(z, z).any())
    False
    """
    bw_w = warp_backward(bw, fw).astype(np.float64)
    fw64 = fw.astype(np.float64)
    mag = lambda f: f[..., 0] ** 2 + f[..., 1] ** 2  # noqa: E731
    mask1 = mag(fw64 + bw_w) > OCC_FB_REL * (mag(bw_w) + mag(fw64)) + OCC_FB_ABS
    du = np.zeros_like(fw64)
    dv = np.zeros_like(fw64)
    du[:, :-1] = fw64[:, :-1] - fw64[:, 1:]
    dv[:-1, :] = fw64[:-1, :] - fw64[1:, :]
    grad = (du ** 2 + dv ** 2).sum(axis=-1)
    mask2 = grad > OCC_GRAD_REL * mag(fw64) + OCC_GRAD_ABS
    return mask1 | mask2


def warp_error_pair(comp0: np.ndarray, comp1: np.ndarray, hole0: np.ndarray, hole1: np.ndarray,
                    fw: np.ndarray, bw: np.ndarray) -> float:
    """Warp error (mask) of one pair: C_t warped back to t-1, squared error over non-occluded pixels where a
    flow vector starts or ends in a hole; mean over those pixels and the 3 channels (NaN if there are none).
    """
    c0 = comp0.astype(np.float32) / 255.0
    c1 = comp1.astype(np.float32) / 255.0
    warped = warp_backward(c1, fw)
    touched = (hole0.astype(np.float32) + warp_backward(hole1.astype(np.float32), fw)) > 0
    valid = touched & ~occlusion_mask(fw, bw)
    if not valid.any():
        return float("nan")
    diff = (warped - c0)[valid]
    return float(np.mean(np.square(diff.astype(np.float64))))


class WarpErrorMetric:
    """Warp error (mask): flow on GT frames (RAFT if cached, else DIS, per ``EvalOptions.flow``)."""

    keys = ("warp_error_mask",)

    def __init__(self, options: EvalOptions, flow_fn: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None) -> None:
        from ..flow import resolve_flow_backend

        self.options = options
        self.values: list[float] = []
        self._injected = flow_fn is not None
        self.backend = "injected" if flow_fn is not None else resolve_flow_backend(options.flow)
        if flow_fn is not None:
            self._flow_batch = lambda a, b: np.stack([flow_fn(x, y) for x, y in zip(a, b)])
        elif self.backend == "raft":
            from .networks.raft import cached_raft

            self._flow_batch = cached_raft(options.device).flow_batch
        else:
            from ..flow import dis_flow

            self._flow_batch = lambda a, b: np.stack([dis_flow(x, y) for x, y in zip(a, b)])

    def update(self, video: VideoSample) -> dict[str, float]:
        gt, comp, hole = video.gt, video.composite, video.hole
        values: list[float] = []
        for s in _batches(len(gt) - 1, self.options.batch_size):
            a, b = gt[s.start: s.stop], gt[s.start + 1: s.stop + 1]
            fws, bws = self._flow_batch(a, b), self._flow_batch(b, a)
            for k, t in enumerate(range(s.start + 1, s.stop + 1)):
                values.append(warp_error_pair(comp[t - 1], comp[t], hole[t - 1], hole[t], fws[k], bws[k]))
        arr = np.asarray(values, dtype=np.float64)
        value = float(np.mean(arr[~np.isnan(arr)])) if (~np.isnan(arr)).any() else float("nan")
        self.values.append(value)
        return {"warp_error_mask": value}

    def compute(self) -> dict[str, float]:
        v = np.asarray(self.values, dtype=np.float64)
        ok = ~np.isnan(v)
        return {"warp_error_mask": float(v[ok].mean()) if ok.any() else float("nan")}

    def provenance(self) -> dict:
        prov: dict = {"flow_backend": self.backend, "flow_on": "GT frames", "occlusion": "forward-backward + motion boundary"}
        if self.backend == "raft" and not self._injected:
            from .networks.raft import RAFT_ITERATIONS

            prov["raft_iterations"] = RAFT_ITERATIONS
            prov["weights"] = _weights_provenance(("raft",), False)
        elif self.backend == "dis":
            from ..flow import DIS_PRESET

            prov["dis_preset"] = int(DIS_PRESET)
        return prov


__all__ = ["FIDMetric", "GaussianStats", "I3DVideoPass", "LPIPSMetric", "PVCSMetric", "VFIDMetric", "WarpErrorMetric",
           "frechet_distance", "occlusion_mask", "warp_backward", "warp_error_pair"]
