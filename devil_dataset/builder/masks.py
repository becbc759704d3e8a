"""DEVIL occlusion masks: the physics-extended Chang et al. blob generator (SPEC section 5).

The preset table below is the single source of the eight presets' parameters.

    >>> sorted(PRESETS)[:2]
    ['fgs-h_fgm-h_fgd-h', 'fgs-h_fgm-h_fgd-l']
    >>> mask_seed(1)
    2546248239
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

# SPEC section 5: masks are rendered at 1920x1080 (W, H), 90 frames.
RELEASE_SIZE: tuple[int, int] = (1920, 1080)
RELEASE_NUM_FRAMES = 90
# SPEC section 5: per-mask seeds are the first 1000 draws of RandomState(0).randint(2**32, size=1000).
SEED_TABLE_SIZE = 1000
# SPEC section 5: probability per later frame that a shared (global) acceleration is applied.
GLOBAL_ACCEL_RATIO = 0.01


@dataclass(frozen=True)
class MaskPreset:
    """Parameters of one preset (SPEC section 5 table). Ranges are (low, high)."""

    name: str
    vertices: tuple[int, int]
    head_speed: tuple[float, float]
    head_accel: tuple[float, float]
    brush_width: tuple[int, int]
    point_accel_ratio: float
    max_point_accel: float
    init_border_gap: int
    init_speed: tuple[float, float]
    centroid: tuple[float, float] | None  # (distance, slope) or None
    global_accel: tuple[float, float]

    @property
    def labels(self) -> dict[str, str]:
        """Attribute labels from the name, e.g. ``{'fgs': 'l', 'fgm': 'h', 'fgd': 'h'}``."""
        return dict(part.split("-") for part in self.name.split("_"))


def _presets() -> dict[str, MaskPreset]:
    # SPEC section 5 preset table: one row per (size, pose motion); fgd-l / fgd-h differ in the two FGD columns.
    rows = {
        "fgs-l_fgm-l": dict(vertices=(10, 22), head_speed=(10, 35), head_accel=(0, 50), brush_width=(75, 150),
                            point_accel_ratio=0.05, max_point_accel=0.05, init_border_gap=400,
                            init_speed={"l": (0, 3), "h": (5, 8)}, centroid=(300, 1)),
        "fgs-l_fgm-h": dict(vertices=(10, 22), head_speed=(10, 25), head_accel=(0, 50), brush_width=(50, 125),
                            point_accel_ratio=0.8, max_point_accel=1.0, init_border_gap=400,
                            init_speed={"l": (0, 3), "h": (9, 15)}, centroid=(150, 1)),
        "fgs-h_fgm-l": dict(vertices=(7, 13), head_speed=(50, 80), head_accel=(0, 70), brush_width=(205, 375),
                            point_accel_ratio=0.05, max_point_accel=0.5, init_border_gap=300,
                            init_speed={"l": (0, 3), "h": (5, 8)}, centroid=None),
        "fgs-h_fgm-h": dict(vertices=(7, 13), head_speed=(50, 70), head_accel=(0, 60), brush_width=(150, 300),
                            point_accel_ratio=0.8, max_point_accel=1.5, init_border_gap=300,
                            init_speed={"l": (0, 3), "h": (9, 15)}, centroid=(300, 0.75)),
    }
    global_accel = {"l": (1, 1), "h": (1, 3)}
    out: dict[str, MaskPreset] = {}
    for row, params in rows.items():
        for fgd in ("l", "h"):
            name = f"{row}_fgd-{fgd}"
            p = dict(params)
            p["init_speed"] = params["init_speed"][fgd]
            out[name] = MaskPreset(name=name, global_accel=global_accel[fgd], **p)
    return dict(sorted(out.items()))


PRESETS: dict[str, MaskPreset] = _presets()


@lru_cache(maxsize=1)
def _seed_table() -> np.ndarray:
    return np.random.RandomState(0).randint(2**32, size=SEED_TABLE_SIZE)


def mask_seed(index: int) -> int:
    """The release's seed of the ``index``-th mask of every preset (0 <= index < 1000)."""
    if not 0 <= index < SEED_TABLE_SIZE:
        raise ValueError(f"mask index must be in [0, {SEED_TABLE_SIZE}), got {index}")
    return int(_seed_table()[index])


def get_preset(name: str) -> MaskPreset:
    """Look up a preset by name; the error lists the valid names."""
    try:
        return PRESETS[name]
    except KeyError:
        raise ValueError(f"unknown preset {name!r}; valid presets: {', '.join(PRESETS)}") from None


def render_mask(preset: str, seed: int, *, size: tuple[int, int] = RELEASE_SIZE, num_frames: int = RELEASE_NUM_FRAMES) -> np.ndarray:
    """Render one mask: bool [T, H, W], True = hole. Bit-identical to the release for the same preset and seed."""
    raise NotImplementedError("render_mask is being implemented (issue 2)")
