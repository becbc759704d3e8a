"""PROVE's RC-S and RC-T restated the plain way, as xiaomi-research/prove's ``run_prove_metrics.py`` and
``utils/{metrics,predictors,bbox,media_utils}.py`` run them: the reference the package's implementation
(:mod:`devil_dataset.eval.protocols.prove.removal`) is checked and timed against.

Restated, not copied: every step written from the description of their code (``docs/removal.md``), with the
libraries it calls (OpenCV, Pillow, scikit-image, torch, transformers), one image per forward pass, each RC-T pair
recomputing both crops' features, a Python loop over windows and torch float32 ``cdist`` for every MMD.
"""
from __future__ import annotations

import math
from pathlib import Path

import cv2
import numpy as np
import torch
from PIL import Image
from skimage.measure import label, regionprops


def read_video(path: str | Path, limit: int = 81) -> list[np.ndarray]:
    """Up to ``limit`` frames, OpenCV decode, BGR -> RGB."""
    cap = cv2.VideoCapture(str(path))
    out: list[np.ndarray] = []
    while cap.isOpened() and len(out) < limit:
        ok, frame = cap.read()
        if not ok:
            break
        out.append(cv2.cvtColor(frame, cv2.COLOR_BGR2RGB))
    cap.release()
    return out


def square_of(binary: np.ndarray):
    """Bounding square grown by a third (PIL getbbox of the L image, Python round)."""
    box = Image.fromarray(binary).convert("L").getbbox()
    if box is None:
        return None
    left, upper, right, lower = box
    size = max(right - left, lower - upper)
    sx = int(round((left + right) / 2.0 - size / 2))
    sy = int(round((upper + lower) / 2.0 - size / 2))
    img_w, img_h = binary.shape[1], binary.shape[0]
    sub = min(int(round(size * (1 / 3))), sx, sy, img_w - (sx + size), img_h - (sy + size), size // 2)
    sub = max(sub, 0)
    x, y, final = sx - sub, sy - sub, size + 2 * sub
    final = min(final, min(img_w, img_h))
    x, y = max(0, x), max(0, y)
    x, y = min(x, img_w - final), min(y, img_h - final)
    x, y = max(0, x), max(0, y)
    return int(x), int(y), int(x + final), int(y + final)


def transformers_model(folder: str | Path):
    """transformers' own ``Dinov2Model`` of a ``save_pretrained`` folder, as their ``DinoPredictor`` loads it
    (``AutoModel.from_pretrained``, eval mode)."""
    from transformers import AutoModel
    from transformers.utils import logging

    logging.disable_progress_bar()
    return AutoModel.from_pretrained(str(folder), local_files_only=True).eval()


class ReferenceDino:
    """One crop at a time through the model, as their ``DinoPredictor.set_image``."""

    def __init__(self, model, processor, device: str = "cpu") -> None:
        self.model, self.processor, self.device = model, processor, device
        self.forwards = 0

    @torch.no_grad()
    def features(self, image: np.ndarray):
        h, w = image.shape[:2]
        scale = 448 / max(h, w)
        nh, nw = int(h * scale), int(w * scale)
        resized = cv2.resize(image, (nw, nh), interpolation=cv2.INTER_LINEAR)
        ph, pw = (14 - nh % 14) % 14, (14 - nw % 14) % 14
        padded = cv2.copyMakeBorder(resized, 0, ph, 0, pw, cv2.BORDER_CONSTANT, value=(123, 116, 103))
        inputs = self.processor(images=padded, return_tensors="pt", do_resize=False, do_center_crop=False)
        out = self.model(**{k: v.to(self.device) for k, v in inputs.items()}).last_hidden_state
        self.forwards += 1
        hf, wf = (nh + ph) // 14, (nw + pw) // 14
        c = out.shape[-1]
        return out[:, 1:, :].permute(0, 2, 1).reshape(1, c, hf, wf), (nh, nw), (ph, pw)


def pool(mask: np.ndarray, hw, pad, grid) -> torch.Tensor:
    m = cv2.resize(mask.astype(np.float32), (hw[1], hw[0]), interpolation=cv2.INTER_NEAREST)
    m = cv2.copyMakeBorder(m, 0, pad[0], 0, pad[1], cv2.BORDER_CONSTANT, value=0)
    return torch.nn.functional.adaptive_max_pool2d(torch.as_tensor(m)[None, None].float(), output_size=grid)


def mmd(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    x = torch.nn.functional.normalize(x, p=2, dim=1)
    y = torch.nn.functional.normalize(y, p=2, dim=1)
    g = 1.0 / (2.0 * 10 ** 2)
    kxx = torch.exp(-g * torch.cdist(x, x).pow(2)).mean()
    kyy = torch.exp(-g * torch.cdist(y, y).pow(2)).mean()
    kxy = torch.exp(-g * torch.cdist(x, y).pow(2)).mean()
    return (kxx + kyy - 2 * kxy) / 1 * 1000


def windows(feat: torch.Tensor, mask: torch.Tensor):
    _, c, hf, wf = feat.shape
    s = max(hf, wf) / 64.0
    k, st = max(1, int(16 * s)), max(1, int(8 * s))
    fp = torch.nn.functional.unfold(feat, kernel_size=k, stride=st)
    mp = torch.nn.functional.unfold(mask, kernel_size=k, stride=st)
    n = fp.shape[-1]
    return fp.view(1, c, k * k, n).permute(3, 1, 2, 0).squeeze(-1), mp.view(1, 1, k * k, n).permute(3, 1, 2, 0)\
        .squeeze(-1).squeeze(1), n


def rcs_crop(dino: ReferenceDino, crop: np.ndarray, mask_grey: np.ndarray) -> float:
    feat, hw, pad = dino.features(crop)
    c = feat.shape[1]
    small = pool(mask_grey, hw, pad, feat.shape[-2:])
    bg = feat.view(c, -1).permute(1, 0)[small.view(-1) == 0]
    fflat, mflat, n = windows(feat, small)
    scores = []
    for i in range(n):
        m = mflat[i]
        nf, nb = (m > 0).sum(), (m == 0).sum()
        if nf > 5 and nb > 5:
            scores.append(mmd(fflat[i][:, m > 0].T, fflat[i][:, m == 0].T))
        elif nf > 5 and nb == 0 and bg.shape[0] > 0:
            scores.append(mmd(fflat[i][:, m > 0].T, bg))
    if not scores:
        return float("nan")
    raw = max(0.0, float(sum(scores) / len(scores)))
    return math.exp(-raw / max(1e-12, 3))


def rc_s_frame(dino: ReferenceDino, image: np.ndarray, mask: np.ndarray):
    grey = mask if mask.ndim == 2 else (mask[:, :, 0] if mask.shape[2] == 1 else
                                        np.array(Image.fromarray(mask).convert("L")))
    lab = label((grey > 127).astype(np.uint8) * 255, connectivity=1)
    regions = regionprops(lab)
    if not regions:
        return None
    floor = min(200, max(r.area for r in regions))
    boxes = [square_of((lab == r.label).astype(np.uint8) * 255) for r in regions if r.area >= floor]
    boxes = [b for b in boxes if b]
    if not boxes:
        return None
    total = 0.0
    for x1, y1, x2, y2 in boxes:
        crop_grey = np.array(Image.fromarray(mask[y1:y2, x1:x2]).convert("L"))
        total += rcs_crop(dino, image[y1:y2, x1:x2], crop_grey)
    return total / len(boxes)


def rc_t_pair(dino: ReferenceDino, img_t, img_t1, mask_t, mask_t1):
    def binary(m):
        m = m[:, :, 0] if m.ndim == 3 else m
        return (m.astype(np.uint8) > 127).astype(np.uint8) * 255

    bt, bt1 = binary(mask_t), binary(mask_t1)
    box = square_of(cv2.bitwise_or(bt, bt1))
    if box is None:
        return None
    x1, y1, x2, y2 = box
    ft, hw, pad = dino.features(img_t[y1:y2, x1:x2])
    ft1, _, _ = dino.features(img_t1[y1:y2, x1:x2])
    grid = ft.shape[-2:]
    both = ((pool(bt[y1:y2, x1:x2], hw, pad, grid) > 0.5) & (pool(bt1[y1:y2, x1:x2], hw, pad, grid) > 0.5)).float()
    f0, mflat, n = windows(ft, both)
    f1, _, _ = windows(ft1, both)
    scores = []
    for i in range(n):
        idx = mflat[i] > 0.5
        if idx.sum().item() < 5:
            continue
        scores.append(mmd(f0[i][:, idx].T, f1[i][:, idx].T).item())
    return sum(scores) / len(scores) if scores else float("nan")


def video_values(dino: ReferenceDino, result: list[np.ndarray], masks: list[np.ndarray]) -> dict[str, float]:
    """RC-S and RC-T of one video (frame lists already cut to one length and the results resized to the masks)."""
    rcs = [rc_s_frame(dino, f, m) for f, m in zip(result, masks)]
    rct = [rc_t_pair(dino, result[i], result[i + 1], masks[i], masks[i + 1]) for i in range(len(result) - 1)]
    rcs = [float(v) for v in rcs if v is not None and not np.isnan(v)]
    rct = [float(v) for v in rct if v is not None and not np.isnan(v)]
    return {"rc_s": float(np.mean(rcs)) if rcs else float("nan"), "rc_t": float(np.mean(rct)) if rct else float("nan")}


def folder_values(dino: ReferenceDino, inputs: Path, results: Path, masks: Path) -> dict[str, dict[str, float]]:
    """name -> values of the three folders of ``.mp4`` (names matched, at most 81 frames, cut to the shortest,
    results resized to the masks' size with INTER_LINEAR)."""
    out = {}
    names = sorted({p.stem for p in Path(inputs).glob("*.mp4")} & {p.stem for p in Path(results).glob("*.mp4")})
    for name in names:
        gen = read_video(Path(results) / f"{name}.mp4")
        ori = read_video(Path(inputs) / f"{name}.mp4")[:len(gen)]
        msk = read_video(Path(masks) / f"{name}.mp4")[:len(gen)]
        n = min(len(ori), len(gen), len(msk))
        gen, msk = gen[:n], msk[:n]
        h, w = msk[0].shape[:2]
        gen = [cv2.resize(f, (w, h), interpolation=cv2.INTER_LINEAR) for f in gen]
        out[name] = video_values(dino, gen, msk)
    return out
