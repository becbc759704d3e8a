"""Generated PROVE-layout removal sets: three folders of small ``.mp4`` (inputs with an object, a
method's removals, masks) whose cases exercise the protocol's steps, and the tiny random DINOv2 the tests score
them with (nothing downloaded)."""
from __future__ import annotations

import functools
from pathlib import Path

import cv2
import numpy as np

SIZE = (96, 80)  # W, H of the generated videos
FRAMES = 5


def _write(path: Path, frames: list[np.ndarray]) -> None:
    h, w = frames[0].shape[:2]
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), 10, (w, h))
    for f in frames:
        writer.write(cv2.cvtColor(f, cv2.COLOR_RGB2BGR))
    writer.release()


def _scene(rng: np.random.Generator, t: int, w: int, h: int) -> np.ndarray:
    yy, xx = np.mgrid[0:h, 0:w]
    base = np.stack([(xx * 3 + t * 4) % 255, (yy * 2 + 40) % 255, ((xx + yy) * 2) % 255], -1).astype(np.float64)
    return np.clip(base + rng.normal(0, 6, (h, w, 3)), 0, 255).astype(np.uint8)


def _case_masks(case: str, t: int, w: int, h: int) -> np.ndarray:
    m = np.zeros((h, w), np.uint8)
    if case == "moving":
        m[20:50, 10 + 5 * t:40 + 5 * t] = 255
    elif case == "two_parts":
        m[8:30, 8:34] = 255
        m[45:75, 50 + 2 * t:85 + 2 * t] = 255
        m[2:6, 90:93] = 255  # a speck: dropped (< 200 px while others are larger)
    elif case == "small":
        m[30:40, 30 + t:42 + t] = 255  # every component < 200 px: the largest kept
    elif case == "corner":
        m[0:35, 0:30] = 255  # at the frame's corner: the square cannot grow
    return m  # "empty": no object, nothing scored


CASES: tuple[str, ...] = ("moving", "two_parts", "small", "corner", "empty")


def write_prove_layout(root: Path, *, cases: tuple[str, ...] = CASES, seed: int = 0,
                       resized_result: str | None = "small") -> tuple[Path, Path, Path]:
    """``root/inputs``, ``root/results``, ``root/masks`` with one ``<case>.mp4`` each; the ``resized_result`` case's
    result is written at another size (the protocol resizes it to the mask's)."""
    rng = np.random.default_rng(seed)
    dirs = tuple(root / d for d in ("inputs", "results", "masks"))
    for d in dirs:
        d.mkdir(parents=True, exist_ok=True)
    w, h = SIZE
    for case in cases:
        inputs, results, masks = [], [], []
        for t in range(FRAMES):
            scene = _scene(rng, t, w, h)
            m = _case_masks(case, t, w, h)
            with_object = scene.copy()
            with_object[m > 0] = (200, 30, 30)
            removed = scene.copy()
            removed[m > 0] = np.clip(scene[m > 0].astype(int) + rng.integers(-40, 40, (int((m > 0).sum()), 3)),
                                     0, 255).astype(np.uint8)
            inputs.append(with_object)
            results.append(removed if case != resized_result else cv2.resize(removed, (w + 16, h + 8)))
            masks.append(np.repeat(m[:, :, None], 3, 2))
        _write(dirs[0] / f"{case}.mp4", inputs)
        _write(dirs[1] / f"{case}.mp4", results)
        _write(dirs[2] / f"{case}.mp4", masks)
    return dirs


@functools.lru_cache(maxsize=None)
def tiny_dinov2_folder(root: str, hidden_size: int = 32, layers: int = 2) -> Path:
    """A seeded random DINOv2 saved once per session folder (``save_pretrained``)."""
    from devil_dataset.core.networks.dinov2 import save_random_dinov2

    return save_random_dinov2(Path(root) / f"dinov2-{hidden_size}-{layers}", hidden_size=hidden_size,
                              layers=layers, heads=2)


def write_varied_layout(root: Path, videos: int = 9, frames: int = 12, seed: int = 0,
                        methods: tuple[str, ...] = ("copy-fill", "noise-fill")) -> tuple[Path, Path, dict[str, Path]]:
    """``videos`` removals whose attributes vary: the camera pans at ``i`` px per frame (video ``i``), the hole's
    size and speed grow with ``i`` in other orders; two methods: ``copy-fill`` (the hole filled with the frame
    before's background) and ``noise-fill`` (the hole filled with noise). Returns (inputs, masks, method -> results)."""
    rng = np.random.default_rng(seed)
    w, h = SIZE
    dirs = {d: root / d for d in ("inputs", "masks", *methods)}
    for d in dirs.values():
        d.mkdir(parents=True, exist_ok=True)
    big = np.clip(rng.normal(120, 50, (h + 40, w + 12 * frames * 2, 3)), 0, 255).astype(np.uint8)
    big = cv2.GaussianBlur(big, (0, 0), 2)
    for i in range(videos):
        pan, side, speed = i % 5, 10 + 4 * ((i * 2) % videos), (i * 3) % 4
        ins, masks, outs = [], {"m": []}, {m: [] for m in methods}
        for t in range(frames):
            scene = big[20:20 + h, pan * t:pan * t + w].copy()
            m = np.zeros((h, w), np.uint8)
            x0 = 8 + speed * t
            m[20:20 + side, x0:x0 + side] = 255
            obj = scene.copy()
            obj[m > 0] = (220, 40, 40)
            ins.append(obj)
            masks["m"].append(np.repeat(m[:, :, None], 3, 2))
            prev = big[20:20 + h, max(0, pan * (t - 1)):max(0, pan * (t - 1)) + w]
            copy = scene.copy()
            copy[m > 0] = prev[m > 0]
            noise = scene.copy()
            noise[m > 0] = rng.integers(0, 255, (int((m > 0).sum()), 3))
            outs.get("copy-fill", []).append(copy)
            outs.get("noise-fill", []).append(noise)
        name = f"v{i:02d}"
        _write(dirs["inputs"] / f"{name}.mp4", ins)
        _write(dirs["masks"] / f"{name}.mp4", masks["m"])
        for mth in methods:
            _write(dirs[mth] / f"{name}.mp4", outs[mth])
    return dirs["inputs"], dirs["masks"], {m: dirs[m] for m in methods}
