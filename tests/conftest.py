"""Tiny generated videos shared by the core and builder tests (fixtures prefixed ``curate_``)."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from devil_dataset.core.video_io import write_video

CURATE_SIZE = (160, 96)  # (W, H): tiny, but wider than decord's 64-pixel minimum


def _texture(seed: int, width: int, height: int) -> np.ndarray:
    """A smooth random colour texture (uint8 [H, W, 3]) with features at several scales."""
    import cv2

    rng = np.random.default_rng(seed)
    out = np.zeros((height, width, 3), np.float32)
    for cells, amp in ((4, 1.0), (12, 0.5), (40, 0.25)):
        grid = rng.random((max(2, height // cells), max(2, width // cells), 3)).astype(np.float32)
        out += amp * cv2.resize(grid, (width, height), interpolation=cv2.INTER_CUBIC)
    out = (out - out.min()) / (out.max() - out.min())
    return (out * 255).astype(np.uint8)


def _pan(seed: int, num_frames: int, *, speed: float = 1.0, size=CURATE_SIZE) -> np.ndarray:
    """A smooth horizontal pan (``speed`` px/frame) over a textured canvas: uint8 [T, H, W, 3]."""
    w, h = size
    canvas = _texture(seed, w + int(np.ceil(speed * num_frames)) + 2, h)
    return np.stack([canvas[:, int(round(speed * t)): int(round(speed * t)) + w] for t in range(num_frames)])


@pytest.fixture
def curate_pan():
    """Factory: ``pan(seed, num_frames, speed=1.0, size=(160, 96))`` -> a smooth pan, uint8 [T, H, W, 3]."""
    return _pan


@pytest.fixture
def curate_texture():
    """Factory: ``texture(seed, width, height)`` -> uint8 [H, W, 3]."""
    return _texture


@pytest.fixture
def curate_make_video(tmp_path: Path):
    """Factory: ``make(name, frames, fps=25) -> Path`` writes an H.264 mp4 into a fresh folder."""
    folder = tmp_path / "sources"

    def make(name: str, frames: np.ndarray, fps: float = 25) -> Path:
        return write_video(folder / name, frames, fps=fps)

    return make


@pytest.fixture
def curate_cut_frames() -> np.ndarray:
    """230 frames: a 100-frame pan shot, a hard cut, a 130-frame pan shot of a different scene."""
    return np.concatenate([_pan(1, 100), _pan(2, 130, speed=0.5)])


@pytest.fixture
def curate_cut_video(curate_make_video, curate_cut_frames) -> Path:
    return curate_make_video("two_shots.mp4", curate_cut_frames)


# The experiment scripts of ``benchmarks/`` are not a package (each runs as ``python benchmarks/<name>.py``): tests
# load one by path, ``load_benchmark("camera_motion_validation")`` (``from ..conftest import load_benchmark``).
BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def load_benchmark(name: str) -> ModuleType:
    """``benchmarks/<name>.py`` as the module ``name`` (loaded once; registered in ``sys.modules`` like a script's
    sibling import, which dataclasses and doctest need)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    assert spec is not None and spec.loader is not None, f"{BENCHMARKS / name}.py: not a loadable script"
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module
