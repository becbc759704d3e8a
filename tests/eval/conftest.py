"""Fixtures of the evaluation tests (prefixed ``eval_``): tiny generated videos and release-layout folders.

The plain generators (:func:`make_video`, :func:`panning_scene`, :func:`textured_canvas`) are imported by test
modules that build videos in module-level helpers (``from .conftest import panning_scene``).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from devil_dataset.core.release_format import write_frame_pngs, write_mask_pngs
from devil_dataset.eval.metrics.metric import VideoSample

from ..conftest import load_benchmark

DEVKIT = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "release-devkit"


def make_video(seed: int, t: int = 5, h: int = 72, w: int = 96, shift: tuple[int, int] = (1, 2), noise: int = 3,
               hole_box: tuple[int, int, int, int] | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(gt, pred, hole): a textured scene panning by ``shift`` per frame, a moving box hole, a noisy prediction."""
    rng = np.random.default_rng(seed)
    dy, dx = shift
    base = rng.integers(0, 256, (h + abs(dy) * t + 1, w + abs(dx) * t + 1, 3), dtype=np.uint8)
    gt = np.stack([base[abs(dy) * i : abs(dy) * i + h, abs(dx) * i : abs(dx) * i + w] for i in range(t)])
    pred = np.clip(gt.astype(np.int16) + rng.integers(-noise * 8, noise * 8 + 1, gt.shape), 0, 255).astype(np.uint8)
    hole = np.zeros((t, h, w), bool)
    y0, x0, hh, ww = hole_box or (h // 3, w // 3, h // 4, w // 4)
    for i in range(t):
        hole[i, y0 + i : y0 + i + hh, x0 + i : x0 + i + ww] = True
    return gt, pred, hole


# The synthetic scenes of the reference-free validation experiment, one implementation for it and the tests.
_REFERENCE_FREE = load_benchmark("reference_free_validation")
textured_canvas = _REFERENCE_FREE.textured_canvas
panning_scene = _REFERENCE_FREE.panning_scene


@pytest.fixture
def eval_make_video():
    """Factory of generated (gt, pred, hole) videos; see :func:`make_video`."""
    return make_video



def slice_rows(samples) -> list[dict]:
    """Dataset rows (``evaluate_dataset(rows=...)``) of videos: clip id, frames, hole and their shape."""
    return [{"clip_id": s.clip_id, "frames": s.gt, "hole": s.hole, "num_frames": s.num_frames,
             "height": s.gt.shape[1], "width": s.gt.shape[2]} for s in samples]

@pytest.fixture
def eval_samples() -> list[VideoSample]:
    """Three small generated videos as VideoSamples (different lengths and seeds)."""
    out = []
    for i, t in enumerate((4, 5, 3)):
        gt, pred, hole = make_video(i, t=t)
        out.append(VideoSample(f"clip{i}", gt, pred, hole))
    return out


def write_release_dirs(root: Path, samples: list[VideoSample]) -> tuple[Path, Path]:
    """Write samples in the release layout: GT/<clip>/frame_*_gt|mask.png and PRED/<clip>/frame_*_pred.png."""
    gt_dir, pred_dir = root / "gt", root / "pred"
    for s in samples:
        write_frame_pngs(s.gt, gt_dir / s.clip_id, "gt")
        write_mask_pngs(s.hole, gt_dir / s.clip_id)
        write_frame_pngs(s.pred, pred_dir / s.clip_id, "pred")
    return gt_dir, pred_dir


@pytest.fixture
def eval_release_dirs(tmp_path, eval_samples) -> tuple[Path, Path]:
    """(gt_dir, pred_dir) holding :func:`eval_samples` in the release's folder layout."""
    return write_release_dirs(tmp_path, eval_samples)


@pytest.fixture
def eval_devkit() -> Path:
    """The release devkit sample (../shared/fixtures/release-devkit); skipped when the shared folder is absent."""
    if not (DEVKIT / "sample-inpainting-inputs").is_dir():
        pytest.skip(f"{DEVKIT}: release devkit fixture not available (../shared is absent)")
    return DEVKIT


@pytest.fixture(autouse=True)
def eval_allow_random_weights(monkeypatch):
    """The network tests plant random weights in a temporary cache: accept their (mismatching) checksums.

    They are still read with ``weights_only=True``; tests of the checksum checks remove the variable.
    """
    monkeypatch.setenv("DEVIL_WEIGHTS_ALLOW_UNVERIFIED", "1")
