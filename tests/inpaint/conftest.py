"""Generated videos for the inpainting tests: a textured scene seen by a (possibly panning) camera under a hole."""
from __future__ import annotations

import cv2
import numpy as np
import pytest


def inpaint_texture(height: int, width: int, seed: int = 0) -> np.ndarray:
    """A deterministic uint8 RGB texture with smooth shading, edges and corners (features for alignment)."""
    rng = np.random.default_rng(seed)
    img = np.zeros((height, width, 3), np.float32)
    for octave in (32, 8, 2):  # multi-scale smooth noise
        small = rng.random((height // octave + 2, width // octave + 2, 3)).astype(np.float32)
        img += cv2.resize(small, (width, height), interpolation=cv2.INTER_CUBIC)[:height, :width] * (octave / 42)
    img = img / img.max() * 160
    for _ in range(height * width // 400):  # flat coloured shapes
        colour = rng.integers(0, 256, 3).tolist()
        x, y = int(rng.integers(0, width)), int(rng.integers(0, height))
        r = int(rng.integers(3, 14))
        if rng.random() < 0.5:
            cv2.rectangle(img, (x, y), (x + r, y + int(rng.integers(3, 14))), colour, -1)
        else:
            cv2.circle(img, (x, y), r // 2 + 1, colour, -1)
    return np.clip(img, 0, 255).astype(np.uint8)


def inpaint_video(
    num_frames: int, height: int, width: int, *, pan: tuple[float, float] = (0.0, 0.0),
    hole_size: tuple[int, int] = (24, 32), hole_start: tuple[int, int] = (20, 30),
    hole_speed: tuple[float, float] = (3, 0), seed: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Frames [T, H, W, 3] of a texture panned by ``pan`` (dx, dy px/frame, sub-pixel), and a moving rectangular
    hole."""
    margin = int(np.ceil(max(abs(pan[0]), abs(pan[1])) * num_frames)) + 4
    texture = inpaint_texture(height + 2 * margin, width + 2 * margin, seed)
    frames = np.empty((num_frames, height, width, 3), np.uint8)
    hole = np.zeros((num_frames, height, width), bool)
    for t in range(num_frames):
        shift = np.float32([[1, 0, -margin - pan[0] * t], [0, 1, -margin - pan[1] * t]])
        frames[t] = cv2.warpAffine(texture, shift, (width, height), flags=cv2.INTER_LINEAR)
        x0 = int(round(hole_start[0] + hole_speed[0] * t))
        y0 = int(round(hole_start[1] + hole_speed[1] * t))
        hole[t, y0 : y0 + hole_size[1], x0 : x0 + hole_size[0]] = True
    return frames, hole


def hole_psnr(pred: np.ndarray, gt: np.ndarray, hole: np.ndarray) -> float:
    """PSNR (data range 255) over the hole pixels of all frames."""
    err = (pred[hole].astype(np.float64) - gt[hole]) ** 2
    return float(10 * np.log10(255.0**2 / max(err.mean(), 1e-10)))


@pytest.fixture
def inpaint_panning_clip():
    """Camera panning 1.6 px/frame right and 0.7 down; a 40x36 hole moving 2 px/frame."""
    return inpaint_video(12, 120, 176, pan=(1.6, 0.7), hole_size=(40, 36), hole_start=(40, 40), hole_speed=(2, 0.5))


@pytest.fixture
def inpaint_static_clip():
    """Static camera; a 24x32 hole moving 4 px/frame, so every hidden pixel is visible in some frame."""
    return inpaint_video(12, 96, 144, hole_size=(24, 32), hole_start=(30, 30), hole_speed=(4, 0))


@pytest.fixture(scope="session")
def inpaint_make_video():
    """The :func:`inpaint_video` generator (conftest helpers are not importable under --import-mode=importlib)."""
    return inpaint_video


@pytest.fixture(scope="session")
def inpaint_hole_psnr():
    """The :func:`hole_psnr` helper."""
    return hole_psnr


# The stand-in for ProPainter's inference script is a program run in a subprocess from its own folder (it checks
# that at import, as the real one needs its checkout); pytest's doctest collection must not import it.
collect_ignore_glob = ["propainter_stand_in/*"]
