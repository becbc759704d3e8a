"""``devil evaluate --protocol propainter``: the ProPainter / E2FGVI table (PSNR, SSIM, VFID, E_warp) on DAVIS /
YouTube-VOS layouts, computed as their evaluation code computes it (``docs/propainter-protocol.md``).

For each video of the mask folder (:mod:`devil_dataset.eval.protocols.propainter.layout`): frames read with OpenCV and
resized to 432x240 (``INTER_LINEAR``), masks resized with Pillow ``NEAREST``, ``> 0``, dilated with a 3x3 cross x4;
the method's output ``PRED/<video>/*.png`` composited with the ground truth outside the dilated hole; PSNR and SSIM
(65x65 uniform window) per frame and averaged over **all frames of all videos**; VFID from one I3D vector per whole
video (BatchNorm with each video's own statistics under parity ``release``, as their script leaves the network in
training mode; the running statistics under ``corrected``). Beyond their script: per-video values, bootstrap
intervals over videos (of the frame-weighted means), hole-only PSNR / SSIM, E_warp with a named flow, a VFID that
never crashes on few videos.

The pixel metrics run per video, in ``workers`` processes when asked (values do not depend on it); the network pass
(VFID, E_warp) runs here afterwards.

    >>> import tempfile, pathlib, cv2, numpy as np
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> for d in ("GT/bear", "MASKS/bear", "PRED/bear"):
    ...     (root / d).mkdir(parents=True)
    >>> for t in range(2):
    ...     _ = cv2.imwrite(str(root / f"GT/bear/{t:05d}.png"), np.full((240, 432, 3), 90, np.uint8))
    ...     _ = cv2.imwrite(str(root / f"PRED/bear/{t:05d}.png"), np.full((240, 432, 3), 80, np.uint8))
    ...     m = np.zeros((240, 432), np.uint8); m[100:140, 200:240] = 255
    ...     _ = cv2.imwrite(str(root / f"MASKS/bear/{t:05d}.png"), m)
    >>> doc = evaluate_propainter(root / "GT", root / "MASKS", root / "PRED", ["psnr", "ssim"])
    >>> doc["protocol"], doc["num_frames"], round(doc["summary"]["psnr"], 4)  # 10 log10(255**2 / (2264 * 100 / 103680))
    ('propainter', 2, 44.739)
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ....core.cpu_pins import cpu_pinned
from ....core.engines import Engine
from ....core.errors import DevilError
from ....core.flow import flow_estimator
from ....core.hole_check import check_hole, hole_problem, hole_warning
from ....core.weights import cached_network, weights_provenance
from ...kernels.composite import composite
from ...kernels.frechet import GaussianStats, blas_provenance, frechet_of
from ...metrics.metric import EvalOptions
from ...scoring.storage import decode_value
from ...stats.frame_weighted import frame_weighted_summary
from ...stats.intervals import video_summary
from ..declaration import FolderRequest
from ..declaration import runnable_metrics as shared_runnable_metrics
from ..runner import (
    StoredVideoScores,
    as_record,
    content_digest,
    folder_document,
    prepare_run,
    score_videos,
    scoring_identity,
)
from .definition import (
    DEFAULT_PROPAINTER_METRICS,
    FRAME_METRICS,
    METRIC_NETWORK,
    METRIC_WEIGHTS,
    NETWORK_FRAME_METRICS,
    PROPAINTER_METRICS,
    PROTOCOL,
)
from .i3d import BATCH_NORM_MODES, BATCH_NORM_OF_PARITY, FEATURE_LAYER, video_feature
from .kernels import (
    DILATION_ITERATIONS,
    SSIM_WINDOW,
    dilate_hole,
    ewarp_video,
    hole_crop,
    hole_psnr_frames,
    hole_ssim_frames,
    psnr_frames,
    ssim_frames,
)
from .layout import (
    PROTOCOL_SIZE,
    DavisVideo,
    frames_root,
    layout_notes,
    list_davis_videos,
    list_prediction_frames,
    read_davis_video,
    read_prediction_video,
)

#: The metrics that run a network (the device is resolved for them).
NETWORK_METRICS: tuple[str, ...] = ("vfid", "ewarp", "hole_lpips")
#: The fields of a propainter results document after the head, in their order.
FIELDS: tuple[str, ...] = ("num_videos", "num_frames", "metrics", "summary", "videos", "frame_counts", "uncertainty",
                           "infinite", "clipped", "skipped", "left_out", "warnings", "provenance")

_FRAME_FUNCTIONS: dict[str, Callable[..., np.ndarray]] = {
    "psnr": lambda gt, comp, hole: psnr_frames(comp, gt),
    "ssim": lambda gt, comp, hole: ssim_frames(comp, gt, hole),
    "hole_psnr": lambda gt, comp, hole: hole_psnr_frames(comp, gt, hole),
    "hole_ssim": lambda gt, comp, hole: hole_ssim_frames(comp, gt, hole),
}


@dataclass(frozen=True)
class VideoFrameScores:
    """One video's per-frame values (metric -> float64 [T]) and frame count."""

    name: str
    num_frames: int
    values: dict[str, np.ndarray]
    hole_problem: str | None = None  # :func:`~devil_dataset.core.hole_check.hole_problem` of the video


def protocol_video(video: DavisVideo, pred_paths: tuple[Path, ...], size: tuple[int, int] = PROTOCOL_SIZE,
                   problems: dict[str, str] | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ground truth, composite, dilated hole) of one video as the protocol scores it: uint8 [T, H, W, 3] twice and
    bool [T, H, W]. The output frames must be ``size``. ``problems`` receives the video's
    :func:`~devil_dataset.core.hole_check.hole_problem` (masks read inverted?), if any."""
    gt, hole = read_davis_video(video, size)
    pred = read_prediction_video(pred_paths, size)
    if len(pred) != len(gt):
        raise DevilError(f"{video.name}: {len(pred)} output frames, expected {len(gt)}")
    dilated = dilate_hole(hole)
    if problems is not None:
        problem = hole_problem(check_hole(dilated, pred, gt))
        if problem:
            problems[video.name] = problem
    return gt, composite(pred, gt, dilated), dilated


def score_video_frames(task: tuple[DavisVideo, tuple[Path, ...]], metrics: tuple[str, ...],
                       size: tuple[int, int] = PROTOCOL_SIZE) -> VideoFrameScores:
    """The per-frame metrics of one video (a module-level function: workers run it)."""
    video, pred_paths = task
    problems: dict[str, str] = {}
    gt, comp, hole = protocol_video(video, pred_paths, size, problems)
    return VideoFrameScores(video.name, len(gt), {m: _FRAME_FUNCTIONS[m](gt, comp, hole) for m in metrics},
                            problems.get(video.name))


def runnable_metrics(metrics: Sequence[str], explicit: bool, injected: Sequence[str] = ()
                     ) -> tuple[tuple[str, ...], dict[str, str]]:
    """``(metrics that can run, skipped metric -> reason)``, decided before any frame is read by the protocols' one
    rule (:func:`~devil_dataset.eval.protocols.declaration.runnable_metrics`): a metric whose weights
    (:data:`~.definition.METRIC_WEIGHTS`) are missing or corrupt is skipped with the reason naming the file when the
    metrics are the default ones (as DEVIL's protocol does), and raises
    :class:`~devil_dataset.core.errors.WeightsMissingError` naming every such file when they were asked for
    (``explicit``). ``injected``: networks given by the caller.

        >>> import os, tempfile; os.environ["DEVIL_WEIGHTS_DIR"] = tempfile.mkdtemp()
        >>> ran, skipped = runnable_metrics(("psnr", "ssim", "vfid"), explicit=False)
        >>> ran, skipped["vfid"].split(":")[0]
        (('psnr', 'ssim'), 'rgb_imagenet.pt')
        >>> runnable_metrics(("psnr", "vfid"), explicit=True)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        devil_dataset.core.errors.WeightsMissingError: metric vfid: rgb_imagenet.pt: not in the weights cache ...
        >>> del os.environ["DEVIL_WEIGHTS_DIR"]
    """
    provided = [m for m in metrics if METRIC_NETWORK.get(m) in injected]
    return shared_runnable_metrics(PROTOCOL, list(metrics) if explicit else None, EvalOptions(), provided)


def _frame_summaries(scores: list[VideoFrameScores], metrics: Sequence[str], seed: int
                     ) -> tuple[dict, dict, dict, dict]:
    """(summary, per-video means, uncertainty, videos with an infinite value) of the frame metrics."""
    summary: dict[str, float] = {}
    videos: dict[str, dict[str, float]] = {s.name: {} for s in scores}
    uncertainty: dict[str, dict] = {}
    infinite: dict[str, list[str]] = {}
    for m in metrics:
        sums, counts, pooled = [], [], []
        for s in scores:
            v = s.values[m]
            v = v[~np.isnan(v)]  # hole-only values of frames without a hole: no value
            pooled.append(v)
            sums.append(math.fsum(v) if np.all(np.isfinite(v)) else float(np.sum(v)))
            counts.append(len(v))
            videos[s.name][m] = sums[-1] / len(v) if len(v) else float("nan")
            if np.isinf(v).any():
                infinite.setdefault(m, []).append(s.name)
        all_values = np.concatenate(pooled) if pooled else np.zeros(0)
        summary[m] = _frame_mean(all_values)
        uncertainty[m] = {**frame_weighted_summary(sums, counts, seed=seed), "mean": summary[m]}
    return summary, videos, uncertainty, infinite


def _frame_mean(values: np.ndarray) -> float:
    """Their ``sum(values) / len(values)`` over all frames of all videos, exactly rounded (``math.fsum``): the same
    for any order; ``inf`` when a frame's value is (an identical frame's PSNR, as theirs)."""
    if not len(values):
        return float("nan")
    if not np.all(np.isfinite(values)):
        return float(np.sum(values)) / len(values)
    return math.fsum(values) / len(values)


@dataclass(frozen=True)
class VideoNetworkScores:
    """What the network pass gathers of one video: the I3D vectors of the real and the composite video (VFID), the
    E_warp value, the hole-only LPIPS per frame, and the video's hole problem (masks read inverted?)."""

    name: str
    real: np.ndarray | None = None
    fake: np.ndarray | None = None
    ewarp: float | None = None
    hole_lpips: np.ndarray | None = None
    hole_problem: str | None = None


def _i3d(options: EvalOptions, network: Any) -> Any:
    if network is not None:
        return network
    from ....core.networks.i3d import load_i3d

    return cached_network("i3d", options.device, lambda: load_i3d(options.device)).at_precision(options.precision)


def _lpips(options: EvalOptions, network: Any) -> Any:
    if network is not None:
        return network
    from ....core.networks.lpips import LPIPSNetwork

    return LPIPSNetwork(options.device, precision=options.precision)


def hole_lpips_frames(net: Any, gt: np.ndarray, comp: np.ndarray, hole: np.ndarray) -> np.ndarray:
    """Hole-only LPIPS of each frame: the LPIPS network's distance between the ground truth and the composite
    cropped to :func:`~.kernels.hole_crop` of the (dilated) hole; NaN for a frame without
    a hole. float64 [T]."""
    out = np.full(len(gt), np.nan)
    for t in range(len(gt)):
        box = hole_crop(hole[t])
        if box is not None:
            out[t] = float(net.distance(gt[t][box][None], comp[t][box][None])[0])
    return out


def network_video(task: tuple[DavisVideo, tuple[Path, ...]], metrics: Sequence[str], options: EvalOptions,
                  size: tuple[int, int], nets: dict[str, Any], flow: Any) -> VideoNetworkScores:
    """The network metrics of one video (run in this process: the networks are loaded here)."""
    video, pred_paths = task
    problems: dict[str, str] = {}
    gt, comp, hole = protocol_video(video, pred_paths, size, problems)
    out: dict[str, Any] = {"hole_problem": problems.get(video.name)}
    if "hole_lpips" in metrics:
        out["hole_lpips"] = hole_lpips_frames(nets["lpips"], gt, comp, hole)
    if "vfid" in metrics:  # the real and the composite video each alone in a forward pass
        batch_norm = BATCH_NORM_OF_PARITY[str(options.parity)]
        out["real"] = video_feature(nets["i3d"], gt, batch_norm, options.device)
        out["fake"] = video_feature(nets["i3d"], comp, batch_norm, options.device)
    if "ewarp" in metrics:  # flow on the ground truth, the composite warped (docs/propainter-protocol.md)
        fw = flow.batch(gt[:-1], gt[1:]) if len(gt) > 1 else np.zeros((0, *gt.shape[1:3], 2), np.float32)
        bw = flow.batch(gt[1:], gt[:-1]) if len(gt) > 1 else fw
        out["ewarp"] = ewarp_video(comp, fw, bw)
    return VideoNetworkScores(video.name, **out)


def _array(values: Sequence[Any]) -> np.ndarray:
    return np.array([decode_value(v) for v in values], np.float64)


def _decode_frames(record: Mapping[str, Any]) -> VideoFrameScores:
    return VideoFrameScores(record["name"], int(record["num_frames"]),
                            {m: _array(v) for m, v in record["values"].items()}, record["hole_problem"])


def _decode_network(record: Mapping[str, Any]) -> VideoNetworkScores:
    def array(key: str) -> np.ndarray | None:
        return None if record[key] is None else _array(record[key])

    return VideoNetworkScores(record["name"], array("real"), array("fake"),
                              None if record["ewarp"] is None else decode_value(record["ewarp"]),
                              array("hole_lpips"), record["hole_problem"])


def vfid_of(real: GaussianStats, fake: GaussianStats) -> tuple[float, dict[str, Any]]:
    """VFID (Frechet distance of the two sets of video vectors) and what to record about it: the number of videos,
    the covariances' rank bound and the imaginary part dropped from the matrix square root (never an error: with
    fewer videos than dimensions + 1 the covariances are singular, their product's square root may come out complex,
    and its real part is kept, as their code does when it does not raise)."""
    n = real.n
    dim = len(real.mean()) if n else 0
    note: dict[str, Any] = {"videos": n, "dimensions": dim}
    if n < 2:
        note["value"] = "undefined (fewer than 2 videos: no covariance); reported as null"
        return float("nan"), note
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = frechet_of(real, fake)
    note["covariance_rank_at_most"] = min(n - 1, dim)
    note["rank_deficient"] = n - 1 < dim
    dropped = [str(w.message) for w in caught if "imaginary" in str(w.message)]
    note["imaginary_part"] = dropped[0] if dropped else "none beyond 1e-3 on the diagonal"
    if n - 1 < dim:
        note["value"] = ("real part of Tr(sqrtm(S_real S_fake)) kept (singular covariances: rank <= videos - 1); "
                         "their code raises 'Imaginary component' when the dropped part exceeds 1e-3")
    return value, note


def _protocol_record(metrics: Sequence[str], options: EvalOptions, size: tuple[int, int], flow_name: str | None
                     ) -> dict[str, Any]:
    record: dict[str, Any] = {
        "name": "propainter", "size": list(size),
        "frames": "OpenCV decode, BGR->RGB, resize INTER_LINEAR (skipped at the protocol size)",
        "masks": "Pillow resize NEAREST, then grey, then > 0",
        "dilation": f"3x3 cross, {DILATION_ITERATIONS} iterations", "composite": "prediction inside the dilated hole",
        "psnr": "float64, peak 255, whole frame; frame-weighted mean over all frames",
        "ssim": f"scikit-image structural_similarity: {SSIM_WINDOW}x{SSIM_WINDOW} uniform window, data_range 255, "
                "sample covariance, per channel then mean; frame-weighted mean",
    }
    if {"hole_psnr", "hole_ssim", "hole_lpips"} & set(metrics):
        record["hole_only"] = ("PSNR: mse over the dilated hole's pixels x 3 channels; SSIM: the 65x65 map averaged "
                               "over window centres in the dilated hole; LPIPS (AlexNet v0.1): the bounding box of "
                               "the dilated hole, at least 64x64; frame-weighted over frames with a hole")
    if "vfid" in metrics:
        bn = BATCH_NORM_OF_PARITY[str(options.parity)]
        record["vfid"] = {"network": "I3D (pytorch-i3d layout)", "input": "whole video, batch of one, [0, 1]",
                          "feature": f"{FEATURE_LAYER} mean over W, H, T", "batch_norm": bn,
                          "batch_norm_meaning": BATCH_NORM_MODES[bn], "frechet": blas_provenance()}
    if "ewarp" in metrics:
        record["ewarp"] = {"flow": flow_name, "flow_on": "ground-truth frames", "warped": "composite frames",
                           "scale": "[0, 1] intensities, squared; per-channel mean over non-occluded pixels",
                           "averaging": "mean over pairs per video, mean over videos (video-weighted)"}
    return record


@cpu_pinned()  # OpenCV pinned for the call, given back after (core/cpu_pins)
def evaluate_propainter(  # noqa: PLR0913 - keyword-only options of a public entry point
    gt_dir: str | Path,
    mask_dir: str | Path,
    pred_dir: str | Path,
    metric_names: Sequence[str] | None = None,
    options: EvalOptions | None = None,
    *,
    method: str | None = None,
    size: tuple[int, int] = PROTOCOL_SIZE,
    workers: int = 1,
    engine: Engine | None = None,
    networks: dict[str, Any] | None = None,
    flow_fn: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None,
    progress: bool = False,
    cache: str | Path | None = None,
) -> dict:
    """Score ``pred_dir`` against a DAVIS / YouTube-VOS layout with the ProPainter / E2FGVI protocol; returns the
    results document (``protocol: "propainter"``; ``summary`` holds ``psnr``, ``ssim``, ``vfid`` ...).

    ``metric_names``: of :data:`PROPAINTER_METRICS` (default :data:`DEFAULT_PROPAINTER_METRICS`). ``options``:
    ``parity`` (``release``: their BatchNorm behaviour; ``corrected``: eval mode), ``device``, ``precision``,
    ``flow`` (E_warp), ``seed`` (intervals). ``size`` (W, H): the protocol's 432x240 unless a test asks otherwise.
    ``workers``: processes for the pixel metrics, or ``engine`` (local processes or Ray) runs them. ``networks``
    (``{"i3d": ..., "lpips": ...}``) / ``flow_fn``: networks / a flow function injected (tests). ``cache``: a
    folder keeping each video's values as it is scored
    (:class:`~devil_dataset.eval.protocols.runner.StoredVideoScores`): run again after an interruption, only the videos
    without values are scored. Every layout problem is one DevilError before anything is scored. See the module
    docstring.
    """
    injected = networks or {}
    setup = prepare_run(PROTOCOL, metric_names, options or EvalOptions(),
                        provided=[m for m, net in METRIC_NETWORK.items() if net in injected],
                        networks=NETWORK_METRICS)
    metrics = setup.metrics
    size = (int(size[0]), int(size[1]))
    options = replace(options or EvalOptions(), protocol=PROTOCOL.name, device=setup.device)
    videos = list_davis_videos(gt_dir, mask_dir)
    preds = list_prediction_frames(pred_dir, videos)
    left_out, notes = layout_notes(gt_dir, mask_dir, videos, pred_dir)
    notes = [*setup.notes, *notes]
    flow = flow_estimator(options.flow, options.device, flow_fn, precision=options.precision) \
        if "ewarp" in metrics else None  # before the pixel pass: a missing flow network fails first
    tasks = [(v, preds[v.name]) for v in videos]
    frame_metrics = tuple(m for m in metrics if m in FRAME_METRICS)
    stores = _stores(cache, metrics, options, size, injected, flow, flow_fn)
    content_of = _content_once()  # both passes key their records by the same files: each video hashed once
    scores = score_videos(tasks, partial(score_video_frames, metrics=frame_metrics, size=size), engine=engine,
                          jobs=workers,
                          progress=progress, desc="propainter frames", store=stores[0], name_of=_task_name,
                          content_of=content_of) if frame_metrics else \
        [VideoFrameScores(v.name, len(v.frame_paths), {}) for v in videos]  # the network pass reads the frames
    nets = {**({"i3d": _i3d(options, injected.get("i3d"))} if "vfid" in metrics else {}),
            **({"lpips": _lpips(options, injected.get("lpips"))} if "hole_lpips" in metrics else {})}
    passed = score_videos(tasks, partial(network_video, metrics=metrics, options=options, size=size, nets=nets,
                                         flow=flow), progress=progress, desc="propainter networks",
                          store=stores[1], name_of=_task_name, content_of=content_of) if nets or flow else []
    for s, n in zip(scores, passed):
        if n.hole_lpips is not None:
            s.values["hole_lpips"] = n.hole_lpips
    problems = {s.name: s.hole_problem for s in (scores if frame_metrics else passed) if s.hole_problem}
    inverted = hole_warning(problems, len(videos), str(mask_dir))
    if inverted:
        notes.append(inverted)
    summary, per_video, uncertainty, infinite = _frame_summaries(
        scores, tuple(m for m in metrics if m in FRAME_METRICS + NETWORK_FRAME_METRICS), options.seed)
    vfid_note: dict[str, Any] = {}
    if "vfid" in metrics:
        real, fake = GaussianStats(), GaussianStats()
        for n in passed:
            real.add(np.asarray(n.real)[None])
            fake.add(np.asarray(n.fake)[None])
        summary["vfid"], vfid_note = vfid_of(real, fake)
    if "ewarp" in metrics:
        for n in passed:
            per_video[n.name]["ewarp"] = n.ewarp
        uncertainty["ewarp"] = video_summary([float(n.ewarp) for n in passed if n.ewarp is not None],
                                             seed=options.seed)
        summary["ewarp"] = uncertainty["ewarp"]["mean"]
    return folder_document(PROTOCOL, options, setup, method=method, predictions=pred_dir, inputs={
        "mode": "propainter", "gt_dir": str(gt_dir), "frames": str(frames_root(gt_dir)), "mask_dir": str(mask_dir),
        "predictions": str(pred_dir)}, record={
        "protocol": _protocol_record(metrics, options, size, flow.name if flow is not None else None),
        "weights": _weights_record(metrics, injected), "vfid": vfid_note}, fields={
        "num_videos": len(videos), "num_frames": sum(s.num_frames for s in scores),
        "summary": summary, "videos": per_video,
        "frame_counts": {s.name: s.num_frames for s in scores}, "uncertainty": uncertainty, "infinite": infinite,
        "clipped": {}, "left_out": left_out, "warnings": notes}, order=FIELDS)


def _task_name(task: tuple[DavisVideo, tuple[Path, ...]]) -> str:
    return task[0].name


def _content_once() -> Callable[[tuple[DavisVideo, tuple[Path, ...]]], str]:
    """The :func:`~devil_dataset.eval.protocols.runner.content_digest` of the files one video is scored from (its
    ground-truth frames, masks and output frames), each video's computed once for the calls of one evaluation."""
    digests: dict[str, str] = {}

    def content_of(task: tuple[DavisVideo, tuple[Path, ...]]) -> str:
        video, pred_paths = task
        if video.name not in digests:
            digests[video.name] = content_digest((*video.frame_paths, *video.mask_paths, *pred_paths))
        return digests[video.name]

    return content_of


def _weights_record(metrics: Sequence[str], injected: Mapping[str, Any]) -> dict[str, Any]:
    return {**(weights_provenance(("i3d",), "i3d" in injected) if "vfid" in metrics else {}),
            **(weights_provenance(("alexnet",), "lpips" in injected) if "hole_lpips" in metrics else {})}


def _stores(cache: str | Path | None, metrics: Sequence[str], options: EvalOptions, size: tuple[int, int],
            injected: Mapping[str, Any], flow: Any, flow_fn: Any) -> tuple[StoredVideoScores | None, ...]:
    """Where the frame pass's and the network pass's per-video records go (``cache``), keyed by what makes the
    values what they are (the network pass: the weights files and the flow); none for the network pass when a
    network or flow function was injected (nothing says what it computes)."""
    if cache is None:
        return None, None
    frames = StoredVideoScores(cache, PROTOCOL.name, scoring_identity(
        PROTOCOL.name, [m for m in metrics if m in FRAME_METRICS], options, size=list(size), pass_="frames"),
        as_record, _decode_frames)
    if injected or flow_fn is not None:
        return frames, None
    networks = StoredVideoScores(cache, PROTOCOL.name, scoring_identity(
        PROTOCOL.name, [m for m in metrics if m not in FRAME_METRICS], options, size=list(size), pass_="networks",
        weights=_weights_record(metrics, injected), flow=flow.name if flow is not None else None),
        as_record, _decode_network)
    return frames, networks


def evaluate_request(request: FolderRequest) -> dict:
    """``devil evaluate --protocol propainter``: :func:`evaluate_propainter` of the request's ``gt_dir``, ``mask_dir``
    and ``pred_dir`` (the pixel metrics on the request's engine: several processes or Ray)."""
    folders = request.folders
    return evaluate_propainter(folders["gt_dir"], folders["mask_dir"], folders["pred_dir"], request.metric_names,
                               request.options, method=request.method, workers=request.jobs,
                               engine=request.engine,
                               progress=request.progress, cache=request.cache)


__all__ = ["DEFAULT_PROPAINTER_METRICS", "evaluate_request", "FRAME_METRICS", "METRIC_WEIGHTS", "NETWORK_FRAME_METRICS",
           "PROPAINTER_METRICS", "VideoFrameScores", "VideoNetworkScores", "evaluate_propainter", "hole_lpips_frames",
           "network_video", "protocol_video", "runnable_metrics", "score_video_frames", "vfid_of"]
