"""``devil evaluate --protocol prove``: PROVE's reference-free removal metrics RC-S (higher is better) and RC-T
(lower is better) on three folders — inputs, a method's results, masks — as xiaomi-research/prove's
``run_prove_metrics.py`` computes them (``docs/removal.md``).

Per video (:mod:`devil_dataset.eval.protocols.prove.layout`): frames read as their code reads them, RC-S per frame and
RC-T per consecutive pair (:mod:`.removal`), each a mean over what was scored; the dataset
value is the mean of the per-video values. Beyond their code: per-video values (``videos``) with the frames and pairs
scored and the network passes (``video_counts``), a
seeded bootstrap interval over videos, the videos without a score named (``unscored``; left out of the mean as
theirs leaves them out), names missing from a folder (``unmatched``), masks that are not binary and results resized
(``input_notes``), the model's name, revision and weights sha256, and each metric's better direction.

    >>> import tempfile, pathlib, cv2, numpy as np
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> for t in range(3):
    ...     for d in ("IN/cat", "OUT/cat", "MASKS/cat"):
    ...         (root / d).mkdir(parents=True, exist_ok=True)
    ...         m = np.zeros((64, 64, 3), np.uint8); m[20:44, 20 + t:44 + t] = 255
    ...         img = m if d.startswith("MASKS") else np.full((64, 64, 3), 60 * t, np.uint8)
    ...         _ = cv2.imwrite(str(root / d / f"{t:05d}.png"), img)
    >>> rng = np.random.default_rng(0)
    >>> net = lambda images: np.stack([rng.normal(size=(i.shape[0] // 14, i.shape[1] // 14, 4)) for i in images])
    >>> doc = evaluate_prove(root / "IN", root / "OUT", root / "MASKS", ["rc_s", "rc_t"], network=net)
    >>> doc["protocol"], doc["directions"], doc["video_counts"]["cat"]  # a moving mask: 3 squares + 2 pairs x 2
    ('prove', {'rc_s': 'higher', 'rc_t': 'lower'}, {'rc_s_frames': 3, 'rc_t_pairs': 2, 'forward_crops': 7})
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import cv2
import numpy as np

from ....core.cpu_pins import cpu_pinned
from ....core.engines import Engine
from ....core.hole_check import hole_warning
from ....core.progress import progress_bar
from ...metrics.metric import EvalOptions
from ...metrics.removal_fidelity import REMOVAL_FIDELITY_METRICS, fidelity_video
from ...scoring.storage import decode_value
from ..declaration import FolderRequest
from ..runner import (
    StoredVideoScores,
    as_record,
    content_digest,
    folder_document,
    mean_over_videos,
    prepare_run,
    score_videos,
    scoring_identity,
)
from . import kernels as k
from .definition import PROTOCOL, PROVE_METRICS
from .input_check import check_prove_sources
from .layout import MAX_FRAMES, ProveVideo, list_prove_videos, read_prove_video
from .mask_reading import mask_reading_lines, prepare_masks
from .removal import (
    ARITHMETIC_OF_PARITY,
    REMOVAL_METRICS,
    FeatureFn,
    dinov2,
    dinov2_for,
    planned_crops,
    removal_scores,
)


@dataclass
class ProveVideoScores:
    """One video's record: values, counts and what reading changed."""

    name: str
    values: dict[str, float]
    counts: dict[str, int]
    notes: dict[str, Any] = field(default_factory=dict)


def score_prove_video(video: ProveVideo, metrics: tuple[str, ...], model: str, device: str,  # noqa: PLR0913
                      batch_size: int, network: FeatureFn | None = None, limit: int = MAX_FRAMES,
                      arithmetic: str = "float32", progress: bool = False) -> ProveVideoScores:
    """Read and score one video (a module-level function: engine workers run it, loading the model once each);
    ``progress``: a bar over its DINOv2 crops (transient in a terminal, lines in a log)."""
    frames = read_prove_video(video, limit)
    prepared = prepare_masks(frames.masks, frames.masks_palette)  # 0/1, palette masks to 0/255; notes say so
    frames.masks = prepared.masks
    rc = tuple(m for m in metrics if m in REMOVAL_METRICS)
    values: dict[str, float] = {}
    counts = {"frames": len(frames.result)}
    notes: dict[str, Any] = dict(prepared.notes)
    if rc:
        features = network if network is not None else dinov2(model, device).patch_features
        with progress_bar(total=planned_crops(frames.masks, rc), desc=f"prove {video.name}", unit="crop",
                          enabled=progress, leave=not _is_terminal()) as bar:
            scores = removal_scores(frames.result, frames.masks, _counted(features, bar), rc, batch_size,
                                    arithmetic)
        values.update(scores.values(rc))
        counts.update({"rc_s_frames": scores.frames_scored, "rc_t_pairs": scores.pairs_scored,
                       "forward_crops": scores.forward_crops})
    fidelity = [m for m in metrics if m in REMOVAL_FIDELITY_METRICS]
    if fidelity:
        hole = prepared.hole
        inputs = frames.inputs
        if inputs.shape[1:3] != hole.shape[1:3]:
            notes["input_resized"] = {"from": [int(inputs.shape[2]), int(inputs.shape[1])],
                                      "to": [int(hole.shape[2]), int(hole.shape[1])]}
            inputs = np.stack([cv2.resize(f, (hole.shape[2], hole.shape[1]), interpolation=cv2.INTER_LINEAR)
                               for f in inputs])
        for m in fidelity:
            values[m], capped = fidelity_video(m, inputs, frames.result, hole)
            if capped:
                notes.setdefault("capped_frames", {})[m] = capped
    if frames.resized_from is not None:
        notes["result_resized"] = {"from": list(frames.resized_from),
                                   "to": [int(frames.masks.shape[2]), int(frames.masks.shape[1])]}
    if len(set(frames.frame_counts.values())) > 1:
        notes["frames_cut"] = {**frames.frame_counts, "kept": len(frames.result)}
    return ProveVideoScores(video.name, {m: values[m] for m in metrics}, counts, notes)


def _is_terminal() -> bool:
    return bool(getattr(sys.stderr, "isatty", lambda: False)())


def _counted(features: FeatureFn, bar: Any) -> FeatureFn:
    """``features``, advancing ``bar`` by the crops of each call."""
    def run(images: Sequence[np.ndarray]) -> np.ndarray:
        out = features(images)
        bar.update(len(images))
        return out
    return run


def directions(metrics: Sequence[str]) -> dict[str, str]:
    """Each metric's better direction as the protocol declares it.

    >>> directions(["rc_s", "rc_t"])
    {'rc_s': 'higher', 'rc_t': 'lower'}
    """
    return {m: "higher" if PROTOCOL.key(m).higher_is_better else "lower" for m in metrics}


def protocol_record(metrics: Sequence[str], arithmetic: str = "float32") -> dict[str, Any]:
    """What the protocol did, as the results' provenance records it (constants from :mod:`.kernels`)."""
    return {
        "name": "prove", "source": "xiaomi-research/prove run_prove_metrics.py, utils/metrics.py, "
        "utils/predictors.py, utils/bbox.py", "directions": directions(metrics),
        "frames": f"OpenCV decode, BGR->RGB, at most {MAX_FRAMES}, cut to the shortest; results resized to the "
                  "masks' size (INTER_LINEAR)",
        "masks": f"RC-S: Pillow grey > {k.MASK_THRESHOLD}, 4-connected components >= {k.MIN_COMPONENT_AREA} px "
                 "(else the largest); windows read the grey crop (> 0 = hole). RC-T: first channel "
                 f"> {k.MASK_THRESHOLD}, union's square; cells in both pooled masks (> {k.RCT_CELL_THRESHOLD})",
        "crop": f"bounding square grown by {k.SQUARE_EXPANSION:.4f} of its side, clipped to the frame; longer side "
                f"{k.DINO_TARGET_SIZE} (INTER_LINEAR, int), padded to a multiple of {k.PATCH_SIZE} with RGB "
                f"{k.PAD_RGB}; patch tokens (CLS dropped)",
        "windows": f"kernel int({k.WINDOW_KERNEL}*s), stride int({k.WINDOW_STRIDE}*s), s = max(grid)/"
                   f"{k.WINDOW_GRID:g}; RC-S: > {k.RCS_MIN_CELLS} hole and > {k.RCS_MIN_CELLS} known cells, or > "
                   f"{k.RCS_MIN_CELLS} hole and no known cell (vs every known cell of the crop); RC-T: >= "
                   f"{k.RCT_MIN_CELLS} shared cells",
        "mmd": f"RBF, sigma {k.MMD_SIGMA:g}, L2-normalised features, biased, x {k.MMD_SCALE:g}, {arithmetic}; RC-S "
               f"exp(-max(0, mean)/{k.RCS_TAU:g}) averaged over components",
        "averaging": "mean over scored frames (RC-S) / pairs (RC-T) per video; mean over videos with a value",
    }


#: The fields of a prove results document after the head, in their order (``?``: written only when not empty).
FIELDS: tuple[str, ...] = ("num_videos", "num_frames", "metrics", "directions", "summary", "videos", "video_counts",
                           "frame_counts", "uncertainty", "unscored", "unmatched", "input_notes", "infinite", "clipped",
                           "skipped", "provenance", "warnings?")


def _decode_scores(record: Mapping[str, Any]) -> ProveVideoScores:
    """A stored :class:`ProveVideoScores` back (``null`` values: NaN)."""
    return ProveVideoScores(record["name"], {m: decode_value(v) for m, v in record["values"].items()},
                            dict(record["counts"]), dict(record["notes"]))


def _store(cache: str | Path | None, metrics: Sequence[str], options: EvalOptions, network: FeatureFn | None,
           identity: dict[str, Any] | None) -> StoredVideoScores | None:
    """Where the per-video records go (``cache``), keyed by what makes the values what they are; none for an
    injected network without an ``identity`` (nothing says what it computes)."""
    if cache is None or (network is not None and identity is None):
        return None
    model = identity if network is not None else options.dino_model if set(metrics) & set(REMOVAL_METRICS) else None
    return StoredVideoScores(cache, PROTOCOL.name, scoring_identity(PROTOCOL.name, metrics, options, model=model,
                                                                    max_frames=MAX_FRAMES), as_record, _decode_scores)


@cpu_pinned()  # OpenCV pinned for the call, given back after (core/cpu_pins)
def evaluate_prove(  # noqa: PLR0913 - keyword-only options of a public entry point
    input_dir: str | Path,
    pred_dir: str | Path,
    mask_dir: str | Path,
    metric_names: Sequence[str] | None = None,
    options: EvalOptions | None = None,
    *,
    method: str | None = None,
    engine: Engine | None = None,
    network: FeatureFn | None = None,
    identity: dict[str, Any] | None = None,
    progress: bool = False,
    on_video: Callable[[ProveVideoScores], None] | None = None,
    cache: str | Path | None = None,
) -> dict:
    """Score a method's removals (``pred_dir``) with RC-S / RC-T; returns the results document (``protocol:
    "prove"``; ``summary`` holds ``rc_s``, ``rc_t``). ``options``: ``dino_model`` (a ``save_pretrained`` folder or a
    cached Hub id), ``device``, ``batch_size`` (crops per forward pass), ``seed`` (intervals). ``engine``: where the
    videos are scored (local processes or Ray; each worker loads the model once). ``network``: an injected feature
    function (tests; then everything runs here), ``identity`` what to record about it. ``cache``: a folder keeping
    each video's values as it is scored (:class:`~devil_dataset.eval.protocols.runner.StoredVideoScores`): run again
    after an interruption, only the videos without values are scored. See the module docstring."""
    options = options or EvalOptions(protocol="prove")
    # a missing model: RC-S / RC-T skipped with a note (default metrics) or an error (named), before any video
    setup = prepare_run(PROTOCOL, metric_names, options, provided=REMOVAL_METRICS if network is not None else (),
                        networks=REMOVAL_METRICS if network is None else ())
    metrics = setup.metrics
    layout = list_prove_videos(input_dir, pred_dir, mask_dir)
    check_prove_sources(layout)  # every bad file named in one error, before any video is scored
    arithmetic = ARITHMETIC_OF_PARITY[str(options.parity)]
    score = partial(score_prove_video, metrics=metrics, model=options.dino_model, device=setup.device,
                    batch_size=options.batch_size, network=network, arithmetic=arithmetic,
                    progress=progress and (engine is None or network is not None))  # crops: in this process only
    scores = score_videos(layout.videos, score, engine=engine if network is None else None, progress=progress,
                          desc="prove", on_video=on_video, store=_store(cache, metrics, options, network, identity),
                          content_of=lambda v: content_digest((v.inputs, v.results, v.masks)))
    summary, uncertainty, unscored = mean_over_videos([s.values for s in scores], metrics, options.seed,
                                                      names=[s.name for s in scores])
    dino = identity if identity is not None else {"name": "injected"} if network is not None else \
        dinov2(options.dino_model, setup.device).identity() if set(metrics) & set(REMOVAL_METRICS) else None
    return folder_document(PROTOCOL, options, setup, method=method, predictions=pred_dir, inputs={
        "mode": "prove", "input_dir": str(input_dir), "predictions": str(pred_dir), "mask_dir": str(mask_dir)},
        record={"protocol": protocol_record(metrics, arithmetic), "dino": dino}, fields={
        "num_videos": len(scores), "num_frames": sum(s.counts["frames"] for s in scores),
        "directions": directions(metrics), "summary": summary,
        "videos": {s.name: dict(s.values) for s in scores},
        "video_counts": {s.name: {c: v for c, v in s.counts.items() if c != "frames"} for s in scores},
        "frame_counts": {s.name: s.counts["frames"] for s in scores}, "uncertainty": uncertainty,
        "unscored": unscored, "unmatched": layout.unmatched,
        "input_notes": {s.name: s.notes for s in scores if s.notes},
        "infinite": {}, "clipped": {}, "warnings": setup.notes}, order=FIELDS)


def evaluate_request(request: FolderRequest) -> dict:
    """``devil evaluate --protocol prove``: :func:`evaluate_prove` of the request's ``input_dir``, ``pred_dir`` and
    ``mask_dir`` (an engine only when asked for: several processes or Ray; per-video values kept in ``cache``)."""
    folders = request.folders
    return evaluate_prove(folders["input_dir"], folders["pred_dir"], folders["mask_dir"], request.metric_names,
                          request.options, method=request.method, engine=request.engine, progress=request.progress,
                          cache=request.cache)


def removal_lines(doc: dict) -> list[str]:
    """The warnings a prove results document carries, one line each (printed by the CLI on stderr).

    >>> removal_lines({"unmatched": {"dog": ["masks"]}, "unscored": {"rc_t": ["cat"]}, "input_notes": {}})
    ['dog: not in masks, not scored', 'rc_t: no score for cat (no window scored; left out of the mean)']
    """
    lines = [f"{n}: not in {', '.join(w)}, not scored" for n, w in (doc.get("unmatched") or {}).items()]
    lines += [f"{m}: no score for {', '.join(v)} (no window scored; left out of the mean)"
              for m, v in (doc.get("unscored") or {}).items()]
    notes_of = doc.get("input_notes") or {}
    total = doc.get("num_videos", len(notes_of))
    lines += mask_reading_lines({n: notes["mask_values"] for n, notes in notes_of.items() if "mask_values" in notes},
                                total)
    inverted = hole_warning({n: notes["inverted_mask"] for n, notes in notes_of.items() if "inverted_mask" in notes},
                            total, str(((doc.get("provenance") or {}).get("inputs") or {}).get("mask_dir", "")))
    lines += [inverted] if inverted else []
    grey = [n for n, notes in notes_of.items() if "non_binary_mask" in notes
            and (notes.get("mask_values") or {}).get("kind", "grey_edges") == "grey_edges"]
    if grey:
        frames = sum(notes_of[n]["non_binary_mask"]["non_binary_frames"] for n in grey)
        lines.append(f"masks not binary in {len(grey)} of {total} videos ({frames} frames; "
                     f"{', '.join(grey[:3])}{' ...' if len(grey) > 3 else ''}): thresholded at > {k.MASK_THRESHOLD} as "
                     "PROVE does (RC-S windows read the grey values; per video in input_notes)")
    for name, notes in notes_of.items():
        if "result_resized" in notes:
            r = notes["result_resized"]
            lines.append(f"{name}: result {r['from'][0]}x{r['from'][1]} resized to the mask's {r['to'][0]}x"
                         f"{r['to'][1]} (INTER_LINEAR, as PROVE does)")
        if "input_resized" in notes:
            r = notes["input_resized"]
            lines.append(f"{name}: input {r['from'][0]}x{r['from'][1]} resized to the mask's {r['to'][0]}x"
                         f"{r['to'][1]} for the background / masked metrics (INTER_LINEAR)")
        for m, n in (notes.get("capped_frames") or {}).items():
            lines.append(f"{name}: {m}: {n} frame(s) identical where compared (infinite PSNR), capped at the "
                         "one-grey-level PSNR 10 log10(N 255^2)")
        if "frames_cut" in notes:
            cut = notes["frames_cut"]
            lines.append(f"{name}: frame counts differ (input {cut.get('inputs')}, result {cut.get('results')}, mask "
                         f"{cut.get('masks')}): scored on the first {cut.get('kept')}, as PROVE does")
    return lines


__all__ = ["PROVE_METRICS", "ProveVideoScores", "dinov2_for", "directions", "evaluate_prove", "evaluate_request",
           "protocol_record", "removal_lines", "score_prove_video"]
