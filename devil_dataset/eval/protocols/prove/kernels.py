"""The window and MMD arithmetic of PROVE's reference-free removal metrics RC-S and RC-T
(``docs/removal.md``), restated from xiaomi-research/prove (``utils/metrics.py``, ``utils/predictors.py``,
``utils/bbox.py``): pure numpy, no network.

Every step is a function a test pins: the mask's grey conversion and threshold, the component filter, the bounding
square grown by 1/3, the crop's resize and padding to the DINOv2 patch grid, the max-pooling of the crop's mask to
that grid, the windows of ``unfold`` and the rule that picks the windows scored, and the RBF-kernel MMD.

    >>> import numpy as np
    >>> m = np.zeros((40, 60), np.uint8); m[10:20, 30:36] = 255
    >>> bounding_square(m)  # a 6x10 box -> a 10x10 square, grown by round(10/3) = 3 on each side
    (25, 7, 41, 23)
    >>> window_geometry(32, 32)  # a 448x448 crop: a 32x32 grid, kernel int(16 * 0.5), stride int(8 * 0.5)
    (8, 4)
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import cv2
import numpy as np
from PIL import Image
from skimage.measure import label

#: Mask threshold: a pixel is in the hole when its grey value is above it (``utils/metrics.py``: ``> 127``).
MASK_THRESHOLD = 127
#: Components smaller than this many pixels are dropped unless all are (then the largest is kept)
#: (``utils/metrics.py`` ``calculate_rc_s_score``: ``min_area = 200``).
MIN_COMPONENT_AREA = 200
#: Growth of the bounding square on each side, as a fraction of its side (``utils/bbox.py``: ``expansion_ratio``).
SQUARE_EXPANSION = 1 / 3
#: Longer side of a crop fed to DINOv2 (``utils/predictors.py`` ``DinoPredictor(target_size=448)``).
DINO_TARGET_SIZE = 448
#: DINOv2's patch size: the crop is padded right/bottom to a multiple of it (``utils/predictors.py``).
PATCH_SIZE = 14
#: The padding colour, RGB (``utils/predictors.py``: ``value=(123, 116, 103)``).
PAD_RGB: tuple[int, int, int] = (123, 116, 103)
#: Window size and stride on a 64-cell grid, scaled by max(grid) / 64 (``utils/metrics.py`` passes ``kernel_size=16,
#: stride=8``; ``utils/predictors.py`` scales them by ``max(H_feat, W_feat) / 64.0`` and truncates with ``int``).
WINDOW_KERNEL, WINDOW_STRIDE, WINDOW_GRID = 16, 8, 64.0
#: RC-S scores a window with more than this many hole cells and more than this many known cells (or no known cell:
#: then against every known cell of the crop) (``utils/predictors.py`` ``get_convolutional_metrics``: ``> 5``).
RCS_MIN_CELLS = 5
#: RC-T scores a window with at least this many cells in both frames' pooled masks (``utils/predictors.py``
#: ``compute_rts_on_patch_mask_only_conv(min_points=5)``: skipped when ``< min_points``).
RCT_MIN_CELLS = 5
#: RC-T's cell test on the pooled 0/255 masks (``utils/predictors.py``: ``> 0.5``).
RCT_CELL_THRESHOLD = 0.5
#: RBF bandwidth and scale of the MMD (``utils/predictors.py`` ``compute_rbf_mmd(sigma_list=[10])``, ``* 1000``).
MMD_SIGMA, MMD_SCALE = 10.0, 1000.0
#: RC-S's frame value is exp(-max(0, mean MMD) / tau) (``utils/metrics.py``: ``tau_mmd=3``).
RCS_TAU = 3.0
#: L2 normalisation's floor of the norm (``torch.nn.functional.normalize``'s default ``eps``).
NORMALIZE_EPS = 1e-12

Box = tuple[int, int, int, int]  # x1, y1, x2, y2 (right / lower exclusive)


def grey_mask(mask: np.ndarray) -> np.ndarray:
    """A mask frame as RC-S reads it: uint8 [H, W]; a colour frame converted with Pillow's ``convert("L")``
    (ITU-R 601 luma in Pillow's fixed point), a one-channel frame taken as it is.

    >>> grey_mask(np.full((1, 2, 3), (255, 0, 0), np.uint8)).tolist()  # pure red -> 76
    [[76, 76]]
    """
    mask = np.asarray(mask)
    if mask.ndim == 3:
        if mask.shape[2] == 1:
            return np.ascontiguousarray(mask[:, :, 0])
        return np.asarray(Image.fromarray(np.ascontiguousarray(mask)).convert("L"))
    return mask


def first_channel_mask(mask: np.ndarray) -> np.ndarray:
    """A mask frame as RC-T reads it: the first channel (R of RGB), no grey conversion (``utils/metrics.py``
    ``_to_u8_gray`` takes ``m[:, :, 0]``). uint8 [H, W].

    >>> first_channel_mask(np.full((1, 1, 3), (200, 0, 0), np.uint8)).tolist()
    [[200]]
    """
    mask = np.asarray(mask)
    return (mask[:, :, 0] if mask.ndim == 3 else mask).astype(np.uint8, copy=False)


def kept_components(binary: np.ndarray) -> list[np.ndarray]:
    """The connected components (4-connectivity) of a bool mask that RC-S scores, in label order (raster order of
    their first pixel): those of at least :data:`MIN_COMPONENT_AREA` pixels, or, when every one is smaller, those of
    the largest area. bool [H, W] each.

    >>> b = np.zeros((30, 30), bool); b[0:15, 0:15] = True; b[20:22, 20:22] = True; b[15, 15] = True
    >>> [int(c.sum()) for c in kept_components(b)]  # the diagonal neighbour is its own component
    [225]
    >>> [int(c.sum()) for c in kept_components(b[18:, 18:])]  # all small: the largest kept
    [4]
    """
    labels = label(binary, connectivity=1)
    n = int(labels.max())
    if n == 0:
        return []
    areas = np.bincount(labels.ravel(), minlength=n + 1)[1:]
    floor = min(MIN_COMPONENT_AREA, int(areas.max()))
    return [labels == i + 1 for i in range(n) if areas[i] >= floor]


def bounding_square(mask: np.ndarray) -> Box | None:
    """The crop of a mask's nonzero pixels (``utils/bbox.py`` ``find_bounding_square_1_3``): the bounding box's
    centred square (side = the longer side, corner ``round`` half to even), grown on each side by
    ``round(side / 3)`` but no more than the room to the nearest frame edge nor ``side // 2``, capped at the frame's
    shorter side and shifted inside the frame. ``None`` for an empty mask.

    >>> m = np.zeros((20, 20), bool); m[0:4, 0:2] = True  # at the corner: no room to grow
    >>> bounding_square(m)
    (0, 0, 4, 4)
    """
    ys, xs = np.nonzero(mask)
    if not len(ys):
        return None
    img_h, img_w = mask.shape[:2]
    left, upper, right, lower = int(xs.min()), int(ys.min()), int(xs.max()) + 1, int(ys.max()) + 1
    size = max(right - left, lower - upper)
    start_x = int(round((left + right) / 2.0 - size / 2))
    start_y = int(round((upper + lower) / 2.0 - size / 2))
    room = (start_x, start_y, img_w - (start_x + size), img_h - (start_y + size))
    grow = max(min(int(round(size * SQUARE_EXPANSION)), *room, size // 2), 0)
    final = min(size + 2 * grow, min(img_w, img_h))
    x = max(0, min(max(0, start_x - grow), img_w - final))
    y = max(0, min(max(0, start_y - grow), img_h - final))
    return int(x), int(y), int(x + final), int(y + final)


@dataclass(frozen=True)
class GridGeometry:
    """How a crop of ``crop_hw`` becomes DINOv2's input: resized to ``resized_hw`` (longer side
    :data:`DINO_TARGET_SIZE`, ``int`` truncation), padded right/bottom by ``pad_hw`` to a multiple of
    :data:`PATCH_SIZE`; ``grid_hw`` is the patch grid."""

    crop_hw: tuple[int, int]
    resized_hw: tuple[int, int]
    pad_hw: tuple[int, int]

    @property
    def grid_hw(self) -> tuple[int, int]:
        return ((self.resized_hw[0] + self.pad_hw[0]) // PATCH_SIZE,
                (self.resized_hw[1] + self.pad_hw[1]) // PATCH_SIZE)


def grid_geometry(crop_h: int, crop_w: int, target: int = DINO_TARGET_SIZE) -> GridGeometry:
    """The resize and padding of a ``crop_h`` x ``crop_w`` crop, computed as ``utils/predictors.py`` does (float
    scale, ``int`` truncation: a side can come out one short of ``target``, and is then padded).

    >>> grid_geometry(100, 100).resized_hw, grid_geometry(100, 100).grid_hw
    ((448, 448), (32, 32))
    >>> g = grid_geometry(100, 50); g.resized_hw, g.pad_hw, g.grid_hw
    ((448, 224), (0, 0), (32, 16))
    """
    scale = target / max(crop_h, crop_w)
    new_h, new_w = int(crop_h * scale), int(crop_w * scale)
    pad_h = (PATCH_SIZE - new_h % PATCH_SIZE) % PATCH_SIZE
    pad_w = (PATCH_SIZE - new_w % PATCH_SIZE) % PATCH_SIZE
    return GridGeometry((crop_h, crop_w), (new_h, new_w), (pad_h, pad_w))


def network_input(crop: np.ndarray, geometry: GridGeometry) -> np.ndarray:
    """A crop (uint8 RGB) as DINOv2 reads it: resized with OpenCV ``INTER_LINEAR``, padded right/bottom with
    :data:`PAD_RGB`. uint8 [H, W, 3], H and W multiples of :data:`PATCH_SIZE`."""
    new_h, new_w = geometry.resized_hw
    resized = cv2.resize(np.ascontiguousarray(crop), (new_w, new_h), interpolation=cv2.INTER_LINEAR)
    return cv2.copyMakeBorder(resized, 0, geometry.pad_hw[0], 0, geometry.pad_hw[1], cv2.BORDER_CONSTANT,
                              value=PAD_RGB)


def pooled_mask(mask_crop: np.ndarray, geometry: GridGeometry) -> np.ndarray:
    """A crop's mask on the patch grid: resized (float32, OpenCV ``NEAREST``) to the crop's resized size, padded
    with 0, then the maximum over each cell (``adaptive_max_pool2d`` to the grid: the padded size is a multiple of the
    grid, so each cell is one ``PATCH_SIZE`` square). float32 [grid_h, grid_w], the mask's own values.

    >>> pooled_mask(np.eye(2, dtype=np.uint8) * 255, grid_geometry(2, 2))[[0, 0, 31], [0, 31, 31]].tolist()
    [255.0, 0.0, 255.0]
    """
    new_h, new_w = geometry.resized_hw
    resized = cv2.resize(mask_crop.astype(np.float32), (new_w, new_h), interpolation=cv2.INTER_NEAREST)
    padded = cv2.copyMakeBorder(resized, 0, geometry.pad_hw[0], 0, geometry.pad_hw[1], cv2.BORDER_CONSTANT, value=0)
    gh, gw = geometry.grid_hw
    return padded.reshape(gh, PATCH_SIZE, gw, PATCH_SIZE).max(axis=(1, 3))


def window_geometry(grid_h: int, grid_w: int) -> tuple[int, int]:
    """``(kernel, stride)`` of the windows on a ``grid_h`` x ``grid_w`` grid: :data:`WINDOW_KERNEL` and
    :data:`WINDOW_STRIDE` scaled by ``max(grid) / 64``, truncated, at least 1.

    >>> window_geometry(16, 8), window_geometry(37, 20)
    ((4, 2), (9, 4))
    """
    scale = max(grid_h, grid_w) / WINDOW_GRID
    return max(1, int(WINDOW_KERNEL * scale)), max(1, int(WINDOW_STRIDE * scale))


def window_cells(grid_h: int, grid_w: int) -> np.ndarray:
    """The cells of each window, in ``torch.nn.functional.unfold``'s order (windows row-major, cells row-major
    inside a window), as flat indices into the grid. int64 [windows, kernel * kernel]; no window when the kernel is
    larger than the grid.

    >>> window_cells(4, 4).tolist()  # kernel 1, stride 1 on a 4x4 grid: every cell its own window
    [[0], [1], [2], [3], [4], [5], [6], [7], [8], [9], [10], [11], [12], [13], [14], [15]]
    """
    k, s = window_geometry(grid_h, grid_w)
    if k > grid_h or k > grid_w:
        return np.zeros((0, k * k), np.int64)
    ys = np.arange(0, grid_h - k + 1, s)
    xs = np.arange(0, grid_w - k + 1, s)
    inner = (np.arange(k)[:, None] * grid_w + np.arange(k)[None, :]).ravel()
    corners = (ys[:, None] * grid_w + xs[None, :]).ravel()
    return corners[:, None] + inner[None, :]


def rcs_window_sets(pooled: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """RC-S's scored windows of one crop: ``(hole, known)`` bool [windows, cells] indicator rows over the grid's
    flat cells. A window with more than :data:`RCS_MIN_CELLS` hole cells (value > 0) and more than
    :data:`RCS_MIN_CELLS` known cells (value 0) compares the two; one with more than :data:`RCS_MIN_CELLS` hole cells
    and no known cell compares them with every known cell of the crop (none when the crop has no known cell); every
    other window is skipped.

    >>> p = np.zeros((16, 16), np.float32); p[:, :8] = 255  # kernel 4, stride 2: 7x7 windows
    >>> hole, known = rcs_window_sets(p)
    >>> len(hole), int(hole[0].sum()), int(known[0].sum()), int(known[3].sum())  # all-hole window 0; mixed 3
    (28, 16, 128, 8)
    """
    flat = pooled.ravel()
    cells = window_cells(*pooled.shape)
    is_hole = flat[cells] > 0
    n_hole = is_hole.sum(1)
    n_known = cells.shape[1] - n_hole
    all_known = flat == 0
    mixed = (n_hole > RCS_MIN_CELLS) & (n_known > RCS_MIN_CELLS)
    inner = (n_hole > RCS_MIN_CELLS) & (n_known == 0) & bool(all_known.any())
    keep = mixed | inner
    hole = np.zeros((int(keep.sum()), flat.size), bool)
    known = np.zeros_like(hole)
    for row, w in enumerate(np.flatnonzero(keep)):
        hole[row, cells[w][is_hole[w]]] = True
        known[row] = all_known if inner[w] else False
        if mixed[w]:
            known[row, cells[w][~is_hole[w]]] = True
    return hole, known


def rct_window_sets(pooled_t: np.ndarray, pooled_t1: np.ndarray) -> np.ndarray:
    """RC-T's scored windows of one pair: bool [windows, cells] rows of the cells in both pooled masks
    (``> 0.5``) of each window holding at least :data:`RCT_MIN_CELLS` of them.

    >>> a = np.zeros((16, 16), np.float32); a[:4, :4] = 255
    >>> rct_window_sets(a, a).sum(1).tolist()  # window (0, 0) holds 16 shared cells, (0, 2) and (2, 0) 8, (2, 2) 4
    [16, 8, 8]
    """
    both = ((pooled_t > RCT_CELL_THRESHOLD) & (pooled_t1 > RCT_CELL_THRESHOLD)).ravel()
    cells = window_cells(*pooled_t.shape)
    inside = both[cells]
    keep = np.flatnonzero(inside.sum(1) >= RCT_MIN_CELLS)
    out = np.zeros((len(keep), both.size), bool)
    for row, w in enumerate(keep):
        out[row, cells[w][inside[w]]] = True
    return out


def normalized(features: np.ndarray) -> np.ndarray:
    """Rows scaled to unit L2 norm in float64 (a norm below :data:`NORMALIZE_EPS` divides by it, as ``torch``'s
    ``normalize``)."""
    f = np.asarray(features, np.float64)
    return f / np.maximum(np.linalg.norm(f, axis=1, keepdims=True), NORMALIZE_EPS)


def rbf_kernel(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """exp(-|a_i - b_j|^2 / (2 sigma^2)) of unit rows (float64 [len(a), len(b)]; squared distance 2 - 2 a.b
    clipped at 0), sigma :data:`MMD_SIGMA`."""
    d2 = np.maximum(2.0 - 2.0 * (a @ b.T), 0.0)
    return np.exp(-d2 / (2.0 * MMD_SIGMA ** 2))


def set_mmd(k_xx: np.ndarray, k_yy: np.ndarray, k_xy: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The biased RBF MMD^2 x :data:`MMD_SCALE` of many pairs of sets at once: row ``i`` of the bool indicators
    ``x`` [n, cells of the first kernel side] and ``y`` [n, cells of the second side] picks the two sets; ``k_xx``,
    ``k_yy``, ``k_xy`` are the kernels between all cells (:func:`rbf_kernel`). float64 [n]: mean K(X, X) + mean
    K(Y, Y) - 2 mean K(X, Y) (``utils/predictors.py`` ``compute_rbf_mmd``).

    >>> f = normalized(np.eye(3)); k = rbf_kernel(f, f)
    >>> round(float(set_mmd(k, k, k, np.array([[1, 0, 0]], bool), np.array([[0, 1, 0]], bool))[0]), 4)
    19.9003
    """
    xf, yf = x.astype(np.float64), y.astype(np.float64)
    nx, ny = xf.sum(1), yf.sum(1)
    sxx = np.einsum("ij,ij->i", xf @ k_xx, xf)
    syy = np.einsum("ij,ij->i", yf @ k_yy, yf)
    sxy = np.einsum("ij,ij->i", xf @ k_xy, yf)
    return (sxx / nx ** 2 + syy / ny ** 2 - 2.0 * sxy / (nx * ny)) * MMD_SCALE


def float32_mmds(x_features: np.ndarray, y_features: np.ndarray, x_sets: np.ndarray, y_sets: np.ndarray
                 ) -> np.ndarray:
    """The MMD of each pair of sets in PROVE's own arithmetic (``utils/predictors.py`` ``compute_rbf_mmd``): torch
    float32, rows L2-normalised, ``cdist(...).pow(2)``, ``exp``, ``mean``, one window at a time, then
    ``(k_xx + k_yy - 2 k_xy) / 1 * 1000`` in float32. float32 [windows]. The float32 rounding of a difference of means
    near 1 moves a small MMD by up to a few 1e-4 of its value: the ``release`` parity keeps it, ``corrected`` uses
    :func:`set_mmd` (float64).

    Rows are normalised once per crop (a row's norm is its own reduction: the same bits as normalising each window's
    rows) and the last step runs on all windows at once in numpy float32 (each operation one IEEE float32 rounding, as
    torch's on one window's 0-d tensors)."""
    import torch

    fx = torch.as_tensor(np.asarray(x_features, np.float32))
    fy = fx if y_features is x_features else torch.as_tensor(np.asarray(y_features, np.float32))  # RC-S: one crop
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # small matrices: one thread is ~15x faster than several (measured on 2 cores)
    try:
        k_xx, k_yy, k_xy = _float32_kernel_means(torch, fx, fy, x_sets, y_sets)
    finally:
        torch.set_num_threads(threads)
    return (k_xx + k_yy - np.float32(2) * k_xy) / np.float32(1) * np.float32(MMD_SCALE)


def _float32_kernel_means(torch: Any, fx: Any, fy: Any, x_sets: np.ndarray, y_sets: np.ndarray
                          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """float32 [windows] each: the means of exp(-gamma cdist^2) over X x X, Y x Y and X x Y of every window."""
    gamma = 1.0 / (2.0 * MMD_SIGMA ** 2)
    normalize = torch.nn.functional.normalize
    nx = normalize(fx, p=2, dim=1)
    ny = nx if fy is fx else normalize(fy, p=2, dim=1)  # RC-S compares a crop with itself: normalised once
    means: list[Any] = []
    k_yy_of: dict[bytes, Any] = {}  # RC-S's inner windows share the crop's known set: its K(Y, Y), computed once
    for xs, ys in zip(x_sets, y_sets):
        x = nx[torch.from_numpy(np.flatnonzero(xs))]
        key = np.packbits(ys).tobytes()
        y = ny[torch.from_numpy(np.flatnonzero(ys))]
        if key not in k_yy_of:
            k_yy_of[key] = torch.exp(-gamma * torch.cdist(y, y).pow(2)).mean()
        means += [torch.exp(-gamma * torch.cdist(x, x).pow(2)).mean(), k_yy_of[key],
                  torch.exp(-gamma * torch.cdist(x, y).pow(2)).mean()]
    table = torch.stack(means).numpy().reshape(-1, 3) if means else np.zeros((0, 3), np.float32)
    return table[:, 0], table[:, 1], table[:, 2]


def float32_mean(values: np.ndarray) -> float:
    """The mean of float32 values as PROVE's RC-S takes it: Python's ``sum`` of 0-d float32 tensors (one float32
    addition after another, from 0), divided by their count in float32.

    >>> float32_mean(np.array([0.1, 0.2, 0.3], np.float32)) == float((np.float32(0.1) + np.float32(0.2)
    ...                                                                  + np.float32(0.3)) / np.float32(3))
    True
    """
    total = np.float32(0)
    for v in np.asarray(values, np.float32):
        total = np.float32(total + v)
    return float(total / np.float32(len(values)))


#: How the MMDs compute: ``float32`` as PROVE's code (parity ``release``), ``float64`` exact (``corrected``).
MMD_ARITHMETICS: tuple[str, ...] = ("float32", "float64")


def rcs_crop_value(features: np.ndarray, pooled: np.ndarray, arithmetic: str = "float64") -> float:
    """RC-S of one crop: exp(-max(0, mean over the scored windows of the hole/known MMD) / :data:`RCS_TAU`), NaN
    when no window is scored. ``features`` float [grid_h * grid_w, C] (row-major cells), ``pooled`` the crop's
    pooled mask (:func:`pooled_mask`), ``arithmetic`` one of :data:`MMD_ARITHMETICS`."""
    hole, known = rcs_window_sets(pooled)
    if not len(hole):
        return float("nan")
    if arithmetic == "float32":
        raw = float32_mean(float32_mmds(features, features, hole, known))  # 0-d float32 tensors summed, as theirs
    else:
        f = normalized(features)
        k = rbf_kernel(f, f)
        raw = float(np.mean(set_mmd(k, k, k, hole, known)))
    return math.exp(-max(0.0, raw) / RCS_TAU)


def rct_pair_value(features_t: np.ndarray, features_t1: np.ndarray, pooled_t: np.ndarray,
                   pooled_t1: np.ndarray, arithmetic: str = "float64") -> float:
    """RC-T of one pair of crops: the mean over the scored windows (:func:`rct_window_sets`) of the MMD between
    frame t's and frame t+1's features of the window's shared cells; NaN when no window is scored."""
    cells = rct_window_sets(pooled_t, pooled_t1)
    if not len(cells):
        return float("nan")
    if arithmetic == "float32":
        scores = [float(v) for v in float32_mmds(features_t, features_t1, cells, cells)]
        return sum(scores) / len(scores)  # Python floats, as theirs (``.item()``)
    a, b = normalized(features_t), normalized(features_t1)
    return float(np.mean(set_mmd(rbf_kernel(a, a), rbf_kernel(b, b), rbf_kernel(a, b), cells, cells)))


__all__ = ["DINO_TARGET_SIZE", "MASK_THRESHOLD", "MIN_COMPONENT_AREA", "MMD_ARITHMETICS", "MMD_SCALE", "MMD_SIGMA",
           "PAD_RGB", "PATCH_SIZE", "RCS_MIN_CELLS", "RCS_TAU", "RCT_MIN_CELLS", "SQUARE_EXPANSION", "Box",
           "GridGeometry", "bounding_square", "first_channel_mask", "float32_mean", "float32_mmds", "grey_mask",
           "grid_geometry",
           "kept_components", "network_input", "normalized", "pooled_mask", "rbf_kernel", "rcs_crop_value",
           "rcs_window_sets", "rct_pair_value", "rct_window_sets", "set_mmd", "window_cells", "window_geometry"]
