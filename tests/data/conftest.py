"""Fixtures of tests/data: one tiny built dataset (6 clips of 45-50 frames at 64x48) shared by the session."""
from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

import numpy as np
import pytest

DATA_SIZE = (64, 48)


def data_fake_mask(preset: str, index: int) -> np.ndarray:
    """A 90-frame mask at 64x48 whose pixels depend on preset, index and frame (so reversal is visible)."""
    w, h = DATA_SIZE
    rng = np.random.default_rng([index, len(preset), ord(preset[4])])
    m = np.zeros((90, h, w), bool)
    x, y = int(rng.integers(0, w - 16)), int(rng.integers(0, h - 12))
    for t in range(90):
        m[t, y : y + 12, (x + t // 3) % (w - 8) : (x + t // 3) % (w - 8) + 8] = True
        m[t, t % h, :4] = True
    return m


def data_write_sources(directory, count: int = 6, size=(80, 48)) -> list:
    """``count`` small H.264 sources of 45-50 frames (textured, shifting), different lengths."""
    from devil_dataset.core.video_io import write_video

    directory.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    paths = []
    w, h = size
    for i in range(count):
        base = (rng.random((h, w + 60, 3)) * 255).astype(np.uint8)
        n = 45 + i % 6
        frames = np.stack([base[:, (k * i) % 60 : (k * i) % 60 + w] for k in range(n)])
        paths.append(write_video(directory / f"src{i}.mp4", frames, fps=25))
    return paths


def data_build(sources, out):
    """Build with fake scorers and masks (fast); scores are distinct so the ranking is well defined."""
    from devil_dataset.builder.build import build
    from devil_dataset.builder.build_options import BuildHooks, BuildOptions

    options = BuildOptions(size=DATA_SIZE, curate_options={"min_size": (64, 48)}, progress=False)
    hooks = BuildHooks(camera_scorer=lambda f: float(f[:, :, :, 0].mean()) / 255.0,
                       scene_scorer=lambda f: float(np.abs(np.diff(f[:5].astype(int), axis=0)).mean()),
                       mask_loader=data_fake_mask)
    return build(sources, out, options, hooks=hooks)


@pytest.fixture(scope="session")
def data_tiny_dataset(tmp_path_factory):
    """Path of a tiny dataset directory with all 11 configs (2 rows each, 2 shards each)."""
    root = tmp_path_factory.mktemp("data_tiny")
    sources = data_write_sources(root / "src")
    data_build(sources, root / "ds")
    return root / "ds"


@pytest.fixture(scope="session")
def data_hf_cache(tmp_path_factory):
    """A private datasets cache directory (keeps tests away from ~/.cache)."""
    return str(tmp_path_factory.mktemp("data_hf_cache"))
