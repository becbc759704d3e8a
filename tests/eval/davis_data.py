"""Generated DAVIS-layout data for the ProPainter-protocol tests, and the protocol restated step by step from the
description of their evaluation code (sczhou/ProPainter ``core/dataset.py``, ``core/metrics.py``,
``scripts/evaluate_propainter.py``): the reference the package's fast implementation is checked against.

Restated, not copied: every step is written from the protocol's description (``docs/propainter-protocol.md``) with
the libraries their code calls (OpenCV, Pillow, scikit-image, scipy), in the plainest way.
"""
from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np
from PIL import Image
from threadpoolctl import threadpool_limits

# A small protocol size for fast tests (both sides above SSIM's 65-pixel window); the generated sources are larger
# and of another aspect, so the resize step runs.
TEST_SIZE = (112, 72)
SOURCE_SIZE = (160, 96)


@dataclass(frozen=True)
class DavisData:
    root: Path
    gt_dir: Path
    mask_dir: Path
    pred_dir: Path
    names: tuple[str, ...]


def _scene(rng: np.random.Generator, frames: int, size: tuple[int, int]) -> np.ndarray:
    w, h = size
    canvas = cv2.GaussianBlur(rng.integers(0, 256, (h + 8, w + 3 * frames + 8, 3), dtype=np.uint8), (0, 0), 2)
    return np.stack([canvas[4:4 + h, 4 + 3 * t:4 + 3 * t + w] for t in range(frames)])


def write_davis_layout(root: Path, frames: tuple[int, ...] = (5, 3, 6), *, seed: int = 0, nested: bool = True,
                       source_size: tuple[int, int] = SOURCE_SIZE, pred_size: tuple[int, int] = TEST_SIZE,
                       gt_suffix: str = ".jpg") -> DavisData:
    """Videos ``v0, v1, ...`` with ``frames[i]`` frames: ground truth ``GT/JPEGImages/<v>/%05d.jpg`` (or
    ``GT/<v>/`` when not ``nested``) at ``source_size``, masks ``MASKS/<v>/%05d.png`` (0/255 'L', a drifting ellipse,
    at ``source_size``) and a method's output ``PRED/<v>/%05d.png`` at ``pred_size`` (noise and a shift)."""
    rng = np.random.default_rng(seed)
    gt_dir, mask_dir, pred_dir = root / "GT", root / "MASKS", root / "PRED"
    frame_root = gt_dir / "JPEGImages" if nested else gt_dir
    names = tuple(f"v{i}" for i in range(len(frames)))
    w, h = source_size
    for name, t in zip(names, frames):
        for d in (frame_root / name, mask_dir / name, pred_dir / name):
            d.mkdir(parents=True, exist_ok=True)
        video = _scene(rng, t, source_size)
        pw, ph = pred_size
        pred = np.clip(cv2.resize(np.roll(video, 2, axis=2).reshape(t * h, w, 3), (pw, ph * t))
                       .reshape(t, ph, pw, 3).astype(np.int16) + rng.integers(-20, 21, (t, ph, pw, 3)), 0, 255)
        for i in range(t):
            cv2.imwrite(str(frame_root / name / f"{i:05d}{gt_suffix}"), cv2.cvtColor(video[i], cv2.COLOR_RGB2BGR))
            mask = np.zeros((h, w), np.uint8)
            cv2.ellipse(mask, (w // 3 + 4 * i, h // 2), (w // 6, h // 5), 15 * i, 0, 360, 255, -1)
            Image.fromarray(mask).save(mask_dir / name / f"{i:05d}.png")
            cv2.imwrite(str(pred_dir / name / f"{i:05d}.png"), cv2.cvtColor(pred[i].astype(np.uint8),
                                                                            cv2.COLOR_RGB2BGR))
    return DavisData(root, gt_dir, mask_dir, pred_dir, names)


# ------------------------------------------------------------------------------------- the protocol, restated


def reference_frame(path: Path, size: tuple[int, int]) -> np.ndarray:
    """Decode with OpenCV, BGR -> RGB, resize with INTER_LINEAR (always called, as their dataset does)."""
    img = cv2.imdecode(np.fromfile(str(path), np.uint8), cv2.IMREAD_COLOR)
    img = cv2.cvtColor(img, cv2.COLOR_BGR2RGB)
    return cv2.resize(img, size, interpolation=cv2.INTER_LINEAR)


def reference_mask(path: Path, size: tuple[int, int]) -> np.ndarray:
    """Pillow: resize NEAREST, then grey, then > 0, dilate with a 3x3 cross 4 times: uint8 0/1 [H, W, 1]."""
    m = Image.open(path).resize(size, Image.NEAREST).convert("L")
    m = (np.array(m) > 0).astype(np.uint8)
    m = cv2.dilate(m, cv2.getStructuringElement(cv2.MORPH_CROSS, (3, 3)), iterations=4)
    return m[:, :, None]


def reference_videos(data: DavisData, size: tuple[int, int]):
    """Yield (name, gt frames, composites) per video as their loop forms them (uint8 arithmetic composite)."""
    frame_root = data.gt_dir / "JPEGImages" if (data.gt_dir / "JPEGImages").is_dir() else data.gt_dir
    for name in sorted(os.listdir(data.mask_dir)):
        files = sorted(os.listdir(frame_root / name))
        gts, comps = [], []
        for i, f in enumerate(files):
            gt = reference_frame(frame_root / name / f, size)
            m = reference_mask(data.mask_dir / name / f"{str(i).zfill(5)}.png", size)
            pred_files = sorted(os.listdir(data.pred_dir / name))
            pred = reference_frame(data.pred_dir / name / pred_files[i], size)
            gts.append(gt)
            comps.append(pred * m + gt * (1 - m))
        yield name, gts, comps


def reference_psnr(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a.astype(np.float64), b.astype(np.float64)
    mse = np.mean((a - b) ** 2)
    return float("inf") if mse == 0 else float(20 * np.log10(255.0 / np.sqrt(mse)))


def reference_ssim(a: np.ndarray, b: np.ndarray) -> float:
    from skimage.metrics import structural_similarity

    return float(structural_similarity(a.astype(np.float64), b.astype(np.float64), data_range=255, channel_axis=-1,
                                       win_size=65, gaussian_weights=False, use_sample_covariance=True))


def reference_table(data: DavisData, size: tuple[int, int]) -> dict[str, float]:
    """Their printed PSNR / SSIM: every frame's value in one list, sum / len (frame-weighted)."""
    psnrs, ssims = [], []
    for _, gts, comps in reference_videos(data, size):
        for g, c in zip(gts, comps):
            psnrs.append(reference_psnr(g, c))
            ssims.append(reference_ssim(g, c))
    return {"psnr": sum(psnrs) / len(psnrs), "ssim": sum(ssims) / len(ssims)}


def reference_vfid(data: DavisData, size: tuple[int, int], net, train_mode: bool) -> float:
    """Their VFID: one Mixed_5c vector per whole video (a batch of one, [0, 1] input), real and composite in separate
    passes; np.mean / np.cov; sqrtm of the product; eps retry when not finite; real part."""
    import copy

    import torch
    from scipy import linalg

    model = copy.deepcopy(net)
    model.train(train_mode)
    real, fake = [], []
    with torch.no_grad():
        for _, gts, comps in reference_videos(data, size):
            for frames, out in ((gts, real), (comps, fake)):
                x = torch.from_numpy(np.stack(frames)).permute(0, 3, 1, 2).float() / 255.0  # [T, 3, H, W]
                x = x.unsqueeze(0).transpose(1, 2)  # [1, 3, T, H, W]
                act = model.endpoints(x, ("Mixed_5c",))[0]
                out.append(act.mean(4).mean(3).mean(2).numpy().flatten())
    m1, m2 = np.mean(real, axis=0), np.mean(fake, axis=0)
    s1, s2 = np.cov(real, rowvar=False), np.cov(fake, rowvar=False)
    with threadpool_limits(1), warnings.catch_warnings():  # one BLAS thread: the fastest on the tests' 2 cores
        warnings.simplefilter("ignore", linalg.LinAlgWarning)  # singular with few videos, as with theirs
        covmean = linalg.sqrtm(s1.dot(s2))
        if not np.isfinite(covmean).all():
            offset = np.eye(s1.shape[0]) * 1e-6
            covmean = linalg.sqrtm((s1 + offset).dot(s2 + offset))
    covmean = np.real(covmean)
    diff = m1 - m2
    return float(diff.dot(diff) + np.trace(s1) + np.trace(s2) - 2 * np.trace(covmean))


def write_moving_davis(root: Path, names: tuple[str, ...] = ("bear", "boat", "car", "dog"), frames: int = 12) -> None:
    """A small DAVIS layout for ``devil diagnose``: video ``v`` pans a texture at ``v`` px per frame under a box
    hole growing with ``v`` (``GT/JPEGImages/<name>/%05d.jpg`` and ``MASKS/<name>/%05d.png`` at 96x64), and a
    method's output ``PRED/<name>/%05d.png`` at the protocol's 432x240 (the frames resized)."""
    rng = np.random.default_rng(0)
    texture = (rng.random((64, 140, 3)) * 255).astype(np.uint8)
    for v, name in enumerate(names):
        for d in ("GT/JPEGImages", "MASKS", "PRED"):
            (root / d / name).mkdir(parents=True, exist_ok=True)
        for t in range(frames):
            frame = np.ascontiguousarray(texture[:, t * v: t * v + 96])
            mask = np.zeros((64, 96), np.uint8)
            mask[10:20 + 6 * v, 10 + t * v: 30 + t * v] = 255
            cv2.imwrite(str(root / f"GT/JPEGImages/{name}/{t:05d}.jpg"), frame[..., ::-1])
            cv2.imwrite(str(root / f"MASKS/{name}/{t:05d}.png"), mask)
            cv2.imwrite(str(root / f"PRED/{name}/{t:05d}.png"),
                        cv2.resize(frame[..., ::-1], (432, 240), interpolation=cv2.INTER_LINEAR))
