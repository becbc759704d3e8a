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


@pytest.fixture(autouse=True)
def _gt_cache_in_tmp(monkeypatch, tmp_path_factory):
    """``devil evaluate`` caches ground truth by default (``$DEVIL_GT_CACHE``): each test gets its own folder."""
    monkeypatch.setenv("DEVIL_GT_CACHE", str(tmp_path_factory.mktemp("gt-cache")))


# A tiny built dataset for the benchmark pipeline's tests (tests/test_benchmark.py, tests/cli/test_cli_benchmark.py):
# 6 small panning H.264 sources built at 64x48 with fake scorers and masks, so every slice holds 2 rows and the
# foreground slices share clips and holes (units).
BENCH_SIZE = (64, 48)


def _bench_fake_mask(preset: str, index: int) -> np.ndarray:
    """A 90-frame box moving right at BENCH_SIZE, larger for the fgs-h presets."""
    w, h = BENCH_SIZE
    side = 20 if "fgs-h" in preset else 8
    rng = np.random.default_rng([index, len(preset), ord(preset[4])])
    x, y = int(rng.integers(0, w - side - 8)), int(rng.integers(0, h - side))
    m = np.zeros((90, h, w), bool)
    for t in range(90):
        x0 = (x + t // 3) % (w - side)
        m[t, y : y + side, x0 : x0 + side] = True
    return m


@pytest.fixture(scope="session")
def bench_tiny_dataset(tmp_path_factory) -> Path:
    """Path of the tiny built dataset (all 11 configs)."""
    from devil_dataset.builder.build import build
    from devil_dataset.builder.build_options import BuildHooks, BuildOptions

    root = tmp_path_factory.mktemp("bench_tiny")
    rng = np.random.default_rng(0)
    w, h = BENCH_SIZE
    sources = []
    for i in range(6):
        base = np.kron((rng.random((h // 4, (w + 60) // 4, 3)) * 255).astype(np.uint8), np.ones((4, 4, 1), np.uint8))
        frames = np.stack([base[:, (k * i) // 2 % 60 : (k * i) // 2 % 60 + w] for k in range(45 + i % 3)])
        sources.append(write_video(root / "src" / f"src{i}.mp4", frames, fps=25))
    build(sources, root / "ds", BuildOptions(size=BENCH_SIZE, curate_options={"min_size": BENCH_SIZE}, progress=False),
          hooks=BuildHooks(camera_scorer=lambda f: float(f[:, :, :, 0].mean()) / 255.0,
                           scene_scorer=lambda f: float(np.abs(np.diff(f[:5].astype(int), axis=0)).mean()),
                           mask_loader=_bench_fake_mask))
    return root / "ds"


@pytest.fixture
def unwritable_folder(tmp_path):
    """A folder this process cannot write: ``chattr +i`` as root (who ignores file modes), else ``chmod 555``."""
    import os
    import shutil
    import subprocess

    folder = tmp_path / "readonly"
    folder.mkdir()
    if os.geteuid() == 0:
        if shutil.which("chattr") is None or subprocess.run(["chattr", "+i", str(folder)]).returncode != 0:
            pytest.skip("running as root without chattr +i here: no folder is unwritable for root")
        yield folder
        subprocess.run(["chattr", "-i", str(folder)], check=True)
    else:
        folder.chmod(0o555)
        yield folder
        folder.chmod(0o755)
