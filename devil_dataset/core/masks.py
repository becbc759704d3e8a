"""DEVIL occlusion masks: the physics-extended Chang et al. blob generator (the release's masks).

The preset table below is the single source of the eight presets' parameters. :func:`render_mask` reproduces the
release's generator bit for bit: the same legacy ``numpy.random.RandomState`` draws in the same order, the same
float arithmetic (NumPy scalar ufuncs, as the release used them) and the same Pillow rasterisation (``ImageDraw``
on a mode '1' image with unrounded float coordinates).

    >>> sorted(PRESETS)[:2]
    ['fgs-h_fgm-h_fgd-h', 'fgs-h_fgm-h_fgd-l']
    >>> mask_seed(1)
    2546248239
    >>> hole = render_mask("fgs-h_fgm-l_fgd-l", mask_seed(1), num_frames=2)
    >>> hole.shape, hole.dtype
    ((2, 1080, 1920), dtype('bool'))
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Iterator, Literal, overload

import numpy as np
from PIL import Image, ImageDraw

from .cover_crop import cover_crop_geometry
from .errors import unknown_name

# The release's masks: masks are rendered at 1920x1080 (W, H), 90 frames.
RELEASE_SIZE: tuple[int, int] = (1920, 1080)
RELEASE_NUM_FRAMES = 90
# The release's masks: per-mask seeds are the first 1000 draws of RandomState(0).randint(2**32, size=1000).
SEED_TABLE_SIZE = 1000
# The release's masks: probability per later frame that a shared (global) acceleration is applied.
GLOBAL_ACCEL_RATIO = 0.01
# The release's mask generator (head walk, step 4): the head acceleration angle is uniform(0, 3.0), relative to the
# heading.
HEAD_ACCEL_MAX_ANGLE = 3.0


@dataclass(frozen=True)
class MaskPreset:
    """Parameters of one preset (the release's preset table). Ranges are (low, high); all lengths in pixels.

    ``init_border_gap`` is the same on both axes: the head walk stays inside
    ``[gap, W - gap] x [gap, H - gap]`` (400 px on a 1920x1080 canvas gives x in [400, 1520], y in [400, 680];
    see :func:`border_gaps` for canvases too small for the gap).
    Later frames reflect inside the whole canvas ``[0, W] x [0, H]``.
    """

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
    # The release's preset table: one row per (size, pose motion); fgd-l / fgd-h differ in the two FGD columns.
    rows: dict[str, dict[str, Any]] = {
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
        raise unknown_name("preset", name, PRESETS) from None


# --- physics (the release's masks). Every float operation below mirrors the release's expression and operand types,
# --- because bit parity of the rendered masks depends on the exact float values of the vertices.

def _physics(cos, sin, sqrt, atan2, mean):
    """The later-frame physics, written once, over one numeric backend: ``(add_polar, move)``.

    Two backends are built below from this one body: the release's NumPy scalar ufuncs on arrays (:func:`_move`,
    what :func:`render_mask` runs) and :mod:`math` on Python lists (:func:`_move_float`, the fast path of
    :func:`render_mask_scaled`; the same IEEE operations without NumPy's per-scalar overhead, so equal vertices
    wherever the C library's sin/cos/atan2 equal NumPy's, as a test checks). ``**2`` is the C library's ``pow`` on
    both backends (NumPy's float64 scalars and Python floats both call it), as the release wrote it. The backend's
    functions are bound as closure variables, so neither path pays for the sharing.
    """
    two_pi = 2 * math.pi  # == 2 * np.pi (a Python float either way)

    def add_polar(mag1, angle1, mag2, angle2):
        """Add two polar vectors in Cartesian space; the result angle is normalised to [0, 2*pi)."""
        x = mag1 * cos(angle1) + mag2 * cos(angle2)
        y = mag1 * sin(angle1) + mag2 * sin(angle2)
        return sqrt(x**2 + y**2), (atan2(y, x) + two_pi) % two_pi

    def move(p: MaskPreset, rng, xs, ys, vel, width: int, height: int) -> None:
        """One later frame (the release's masks): move, reflect, random accelerations, centroid pull. Updates in
        place."""
        for i in range(len(xs)):
            speed, angle = vel[i]
            xs[i], flip_x = _reflect(xs[i] + int(speed * cos(angle)), 0, width)
            ys[i], flip_y = _reflect(ys[i] + int(speed * sin(angle)), 0, height)
            if flip_x:
                angle = math.pi - angle
            if flip_y:
                angle = -angle
            if rng.uniform() < p.point_accel_ratio:
                accel_mag = rng.uniform(0, p.max_point_accel)
                accel_angle = rng.uniform(-math.pi, math.pi)
                speed, angle = add_polar(speed, angle, accel_mag, accel_angle)
            vel[i] = (speed, angle)
        if rng.uniform() < GLOBAL_ACCEL_RATIO:
            accel_mag = rng.uniform(*p.global_accel)
            accel_angle = rng.uniform(-math.pi, math.pi)
            for i in range(len(vel)):
                vel[i] = add_polar(vel[i][0], vel[i][1], accel_mag, accel_angle)
        if p.centroid is not None:
            distance, slope = p.centroid
            # The centroid is the NumPy mean of the moved positions (the release recomputes the same value per
            # vertex).
            cx, cy = mean(xs), mean(ys)
            for i in range(len(vel)):
                dx = xs[i] - cx
                dy = ys[i] - cy
                dist = sqrt(dx**2 + dy**2)
                toward = -(math.pi - atan2(dy, dx))
                # A zero pull still goes through the polar -> Cartesian -> polar round trip (it renormalises the
                # angle).
                vel[i] = add_polar(vel[i][0], vel[i][1], max(0, slope * (dist - distance)), toward)

    return add_polar, move


# The release's arithmetic: NumPy float64 scalars from arrays (xs, ys: float64 [N]; vel: float64 [N, 2]) and
# ``RandomState.uniform``.
_add_polar, _move = _physics(np.cos, np.sin, np.sqrt, np.arctan2, np.mean)
# The same arithmetic on Python floats (xs, ys: lists; vel: list of (speed, angle)) and a :class:`_UniformStream`;
# the centroid keeps NumPy's summation order.
_add_polar_float, _move_float = _physics(math.cos, math.sin, math.sqrt, math.atan2, lambda v: float(np.mean(v)))


def _reflect(value, lower, upper):
    """Mirror ``value`` back into ``[lower, upper]`` (repeatedly); also return whether the velocity flips."""
    flip = False
    while value < lower or value > upper:
        flip = not flip
        value = lower + (lower - value) if value < lower else upper - (value - upper)
    return value, flip


def _initial_stroke(p: MaskPreset, rng: np.random.RandomState, width: int, height: int):
    """Head walk (the release's mask generator, steps 2-5): vertex arrays xs, ys and per-vertex velocities [(speed,
    angle)]."""
    gap_x, gap_y = border_gaps(p, (width, height))
    x = np.clip(rng.randint(width), gap_x, width - gap_x)  # integers; float from the first step on
    y = np.clip(rng.randint(height), gap_y, height - gap_y)
    xs, ys = [x], [y]
    num_vertices = rng.randint(p.vertices[0], p.vertices[1] + 1)  # == random_integers(lo, hi)
    speed = rng.uniform(*p.head_speed)
    angle = rng.uniform(0, 2 * np.pi)
    for _ in range(num_vertices - 1):
        accel_mag = rng.uniform(*p.head_accel)
        accel_angle = rng.uniform(0, HEAD_ACCEL_MAX_ANGLE)
        speed, angle = _add_polar(speed, angle, accel_mag, accel_angle + angle)
        speed = np.clip(speed, *p.head_speed)  # clipped before the position update
        x, flip_x = _reflect(x + speed * np.cos(angle), gap_x, width - gap_x)
        y, flip_y = _reflect(y + speed * np.sin(angle), gap_y, height - gap_y)
        # Both axes move with the pre-bounce heading; the heading is mirrored afterwards (x first, then y).
        if flip_x:
            angle = np.pi - angle
        if flip_y:
            angle = -angle
        xs.append(x)
        ys.append(y)
    # Step 5: one (speed, angle) velocity shared by every vertex; angle in [-pi, pi), not normalised.
    velocity = (rng.uniform(*p.init_speed), rng.uniform(-np.pi, np.pi))
    velocities = np.array([velocity] * num_vertices, dtype=np.float64)
    return np.array(xs, dtype=np.float64), np.array(ys, dtype=np.float64), velocities


class _UniformStream:
    """``rng.uniform(low, high)`` served from chunks of ``rng.random_sample(n)``: the same doubles in the same order
    (the legacy RandomState spends one double per uniform and computes ``low + (high - low) * u``), ~8x cheaper."""

    def __init__(self, rng: np.random.RandomState, chunk: int = 256) -> None:
        self.rng, self.chunk, self.i = rng, chunk, 0
        self.buf: list[float] = []

    def uniform(self, low: float = 0.0, high: float = 1.0) -> float:
        if self.i == len(self.buf):
            self.buf, self.i = self.rng.random_sample(self.chunk).tolist(), 0
        u = self.buf[self.i]
        self.i += 1
        return low + (high - low) * u


def _draw(xs: np.ndarray, ys: np.ndarray, brush_width: int, size: tuple[int, int],
          canvas: Image.Image | None = None) -> Image.Image:
    """Rasterise one frame like the release: mode '1', 1 = known; lines then vertex discs drawn with 0.

    With ``canvas`` the frame is drawn into that image after clearing it (no new 2 MB allocation per frame).
    """
    if canvas is None:
        image = Image.new("1", size, 1)
    else:
        image = canvas
        image.paste(1, (0, 0, *size))
    draw = ImageDraw.Draw(image)
    radius = brush_width // 2 - 1
    xs_l, ys_l = xs.tolist(), ys.tolist()  # Python floats: the same values Pillow receives from float64 scalars
    for i in range(1, len(xs_l)):
        draw.line((xs_l[i - 1], ys_l[i - 1], xs_l[i], ys_l[i]), fill=0, width=brush_width)
    for x, y in zip(xs_l, ys_l):
        draw.ellipse((x - radius, y - radius, x + radius, y + radius), fill=0)
    return image


def border_gaps(preset: str | MaskPreset, size: tuple[int, int]) -> tuple[int, int]:
    """The initial border gap (x, y) used on a canvas (W, H): the preset's gap on both axes, limited to
    ``(dim - 1) // 2`` on an axis too small for it.

    The limit only applies where the release's own generator cannot run (a canvas of at most twice the gap leaves
    an empty initial box and its reflection loop never ends); wherever the release can render, the gaps are the
    release's, so the output is the release's.

        >>> border_gaps("fgs-l_fgm-l_fgd-l", (1920, 1080)), border_gaps("fgs-l_fgm-l_fgd-l", (832, 480))
        ((400, 400), (400, 239))
    """
    p = preset if isinstance(preset, MaskPreset) else get_preset(preset)
    width, height = (int(v) for v in size)
    if width < 1 or height < 1:
        raise ValueError(f"canvas size must be positive, got {width}x{height}")
    gap = p.init_border_gap
    return min(gap, (width - 1) // 2), min(gap, (height - 1) // 2)


@overload
def _vertex_states(preset: str, seed: int, size: tuple[int, int], num_frames: int, *,
                   python_floats: Literal[False] = False) -> Iterator[tuple[int, np.ndarray, np.ndarray]]: ...


@overload
def _vertex_states(preset: str, seed: int, size: tuple[int, int], num_frames: int, *,
                   python_floats: Literal[True]) -> Iterator[tuple[int, list[float], list[float]]]: ...


def _vertex_states(preset: str, seed: int, size: tuple[int, int], num_frames: int, *, python_floats: bool = False
                   ) -> Iterator[tuple[int, np.ndarray | list, np.ndarray | list]]:
    """The generator's state per frame: ``(brush_width, xs, ys)``, updated in place between frames; arrays as the
    release computes them, or (``python_floats``) lists moved by :func:`_move_float`."""
    p = get_preset(preset)
    border_gaps(p, size)  # validates the size
    width, height = int(size[0]), int(size[1])
    if num_frames < 1:
        raise ValueError(f"num_frames must be >= 1, got {num_frames}")
    if not 0 <= int(seed) < 2**32:
        raise ValueError(f"seed must be in [0, 2**32), got {seed}")
    rng: np.random.RandomState | _UniformStream  # a _UniformStream for the later frames with python_floats
    rng = np.random.RandomState(int(seed))
    brush_width = rng.randint(p.brush_width[0], p.brush_width[1] + 1)  # == random_integers(lo, hi)
    xs, ys, vel = _initial_stroke(p, rng, width, height)
    move = _move
    if python_floats:
        xs, ys, vel, move = xs.tolist(), ys.tolist(), [tuple(v) for v in vel.tolist()], _move_float
        rng = _UniformStream(rng)  # nothing but uniform draws from here on
    yield brush_width, xs, ys  # frame 0 is drawn before any motion
    for _ in range(num_frames - 1):
        move(p, rng, xs, ys, vel, width, height)
        yield brush_width, xs, ys


def _frames(preset: str, seed: int, size: tuple[int, int], num_frames: int, reuse: bool) -> Iterator[Image.Image]:
    width, height = int(size[0]), int(size[1])
    canvas = Image.new("1", (width, height), 1) if reuse else None
    for brush_width, xs, ys in _vertex_states(preset, seed, size, num_frames):
        yield _draw(xs, ys, brush_width, (width, height), canvas)


def _shared_view(image: Image.Image) -> np.ndarray | None:
    """A read-only NumPy view of a mode 'L' image's pixels that follows later drawing (Pillow's Arrow export shares
    the image's memory: no copy per frame), or ``None`` where Pillow or pyarrow cannot export it."""
    try:
        import pyarrow as pa

        array = pa.array(image)
        view = np.frombuffer(array.buffers()[1], np.uint8)
    except Exception:  # noqa: BLE001 - older Pillow without Arrow export: the caller copies each frame instead
        return None
    return view if view.size == image.size[0] * image.size[1] else None


def render_mask_scaled(preset: str, seed: int, size: tuple[int, int], *, frames: range | None = None,
                       num_frames: int = RELEASE_NUM_FRAMES, reverse: bool = False,
                       window: tuple[int, int, int, int] | None = None) -> np.ndarray:
    """A release mask drawn directly at a smaller size: bool [T, H, W], True = hole (fast, not bit-identical).

    The generator runs on the release's 1920x1080 canvas (the same vertex paths as :func:`render_mask`); each frame's
    polygon is then drawn already cover-cropped to ``size`` (W, H): coordinates, brush width and vertex discs scaled
    by the cover scale (:func:`devil_dataset.core.cover_crop.cover_crop_geometry`). This skips the 1080p raster and the
    crop, so it is several times faster than ``cover_crop_mask(render_mask(...), size)``, whose masks it follows
    within a few per cent in area, displacement and pose motion (``tests/core/test_masks.py`` checks 10 %); the
    edge pixels differ. Meant for training loaders; the benchmark's masks use :func:`render_mask`.

    ``num_frames`` is the mask's length (the release's video length); ``frames`` the frame indices to draw (default:
    all), counted after ``reverse`` (played backwards, as the release's reversal flag). Only the generator steps up
    to the last frame needed run. ``window=(left, top, w, h)`` draws only that crop of the ``size`` canvas.

        >>> m = render_mask_scaled("fgs-l_fgm-h_fgd-h", mask_seed(0), (832, 480), frames=range(3))
        >>> m.shape, bool(m.any())
        ((3, 480, 832), True)
    """
    frames = range(num_frames) if frames is None else frames
    if len(frames) and (min(frames) < 0 or max(frames) >= num_frames):
        raise ValueError(f"frames {frames} outside the mask's {num_frames} frames")
    left, top, out_w, out_h = (0, 0, int(size[0]), int(size[1])) if window is None else window
    (rw, rh), (crop_left, crop_top) = cover_crop_geometry(RELEASE_SIZE, (int(size[0]), int(size[1])))
    sx, sy = rw / RELEASE_SIZE[0], rh / RELEASE_SIZE[1]
    # A source pixel centre (i + 0.5) lands at i' + 0.5 in the resized image (Pillow's NEAREST picks the same pixels).
    ox, oy = 0.5 * sx - 0.5 - crop_left - left, 0.5 * sy - 0.5 - crop_top - top
    scale = min(sx, sy)
    wanted = {(num_frames - 1 - k if reverse else k): j for j, k in enumerate(frames)}
    last = max(wanted) if wanted else -1
    out = np.empty((len(frames), out_h, out_w), bool)
    if last < 0:
        return out
    canvas = Image.new("L", (out_w, out_h), 0)  # 0 = known, 1 = hole: the pixel values are the mask's bools
    view = _shared_view(canvas)
    draw = ImageDraw.Draw(canvas)
    states = _vertex_states(preset, seed, RELEASE_SIZE, last + 1, python_floats=True)
    for t, (brush_width, xs, ys) in enumerate(states):
        if t not in wanted:
            continue
        width = max(1, int(round(brush_width * scale)))
        canvas.paste(0, (0, 0, out_w, out_h))
        points = [(x * sx + ox, y * sy + oy) for x, y in zip(xs, ys)]
        radius = (brush_width // 2 - 1) * scale
        draw.line(points, fill=1, width=width)  # one call: each segment a wide line, as the release's per-pair calls
        for x, y in points:
            draw.ellipse((x - radius, y - radius, x + radius, y + radius), fill=1)
        out[wanted[t]] = (view if view is not None else np.asarray(canvas)).reshape(out_h, out_w).view(bool)
    return out


def iter_mask_images(preset: str, seed: int, *, size: tuple[int, int] = RELEASE_SIZE,
                     num_frames: int = RELEASE_NUM_FRAMES, reuse: bool = False) -> Iterator[Image.Image]:
    """Yield the release's mode '1' frames (1 = known) one at a time; see :func:`render_mask`.

    ``reuse=True`` draws every frame into the same image (faster; use each frame before asking for the next).

        >>> next(iter_mask_images("fgs-l_fgm-l_fgd-l", 0)).size
        (1920, 1080)
    """
    return _frames(preset, seed, size, num_frames, reuse)


def _packed_hole(image: Image.Image) -> np.ndarray:
    """Mode '1' image (1 = known) -> ``np.packbits(hole, axis=-1)`` rows [H, ceil(W/8)].

    Pillow exposes a mode '1' image to NumPy as one byte per pixel (0 or 255); packing those bytes (nonzero -> 1)
    and inverting is ~10x faster than Pillow's own bit packer (``tobytes("raw", "1")``).
    """
    width = image.size[0]
    known = np.asarray(image)
    hole = np.invert(np.packbits(known.view(np.uint8) if known.dtype == bool else known != 0, axis=-1))
    if width % 8:  # packbits pads with zero bits: clear the inverted padding bits
        hole[:, -1] &= np.uint8((0xFF << (8 - width % 8)) & 0xFF)
    return hole


def render_mask_packed(preset: str, seed: int, *, size: tuple[int, int] = RELEASE_SIZE,
                       num_frames: int = RELEASE_NUM_FRAMES) -> np.ndarray:
    """:func:`render_mask` as ``np.packbits(hole, axis=-1)``, uint8 [T, H, ceil(W/8)] (8x less memory).

        >>> render_mask_packed("fgs-l_fgm-l_fgd-l", 0, num_frames=1).shape
        (1, 1080, 240)
    """
    frames = iter_mask_images(preset, seed, size=size, num_frames=num_frames, reuse=True)
    return np.stack([_packed_hole(im) for im in frames])


def render_mask(preset: str, seed: int, *, size: tuple[int, int] = RELEASE_SIZE,
                num_frames: int = RELEASE_NUM_FRAMES) -> np.ndarray:
    """Render one mask: bool [T, H, W], True = hole. Bit-identical to the release for the same preset and seed.

    ``size`` (W, H) is the generator's canvas exactly as the release's ``imageWidth, imageHeight``: it bounds the
    start-position draws, the initial border-gap box and the reflection box; brush widths, speeds and gaps stay in
    absolute pixels. So another size gives what the release would render at that size, not a rescaled 1080p mask
    (on a canvas of at most twice the border gap, where the release cannot run, the gap is limited: see
    :func:`border_gaps`). For the benchmark's masks at 832x480 (or another resolution) render at 1920x1080 and
    cover-crop (:func:`devil_dataset.core.mask_store.stored_mask`). ``num_frames`` is the release's video
    length: frames are generated sequentially, so the first k frames do not depend on ``num_frames``.

        >>> m = render_mask("fgs-l_fgm-h_fgd-h", mask_seed(0), num_frames=3)
        >>> m.shape, bool(m.any())
        ((3, 1080, 1920), True)
    """
    packed = render_mask_packed(preset, seed, size=size, num_frames=num_frames)
    return np.unpackbits(packed, axis=-1, count=int(size[0])).view(bool)
