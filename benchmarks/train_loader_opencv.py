"""The training loader with the user's OpenCV left optimised, against OpenCV pinned as importing the package once did.

Importing ``devil_dataset`` used to switch OpenCV's SIMD dispatch and IPP off for the whole process
(``cv2.setUseOptimized(False)``), so a training script's own OpenCV augmentations ran on OpenCV's baseline code. Now
nothing changes at import (``docs/reliability.md``, "Which calls pin what"). This script times one epoch of the
training DataLoader (:class:`devil_dataset.data.train.InpaintingTrainDataset`, in this process) whose items go through
a typical OpenCV augmentation (per frame: rotation and zoom, Gaussian blur, brightness and contrast, resize), in
the two states, alternating, on a small synthetic dataset built by the package:

- ``optimised``: OpenCV as the user's process has it (what importing the package leaves now);
- ``pinned``: OpenCV as the package's import left it before (``core.cv_determinism.pin_opencv``).

Prints the median wall and CPU seconds per epoch of each and the ratios pinned / optimised, then the CPU-time
ratio of each OpenCV call of the augmentation alone, and writes them with the CPU to
``benchmarks/results/train_loader_opencv.json``.

    python benchmarks/train_loader_opencv.py            # 6 clips of 45 frames at 640x360, 5 rounds
    python benchmarks/train_loader_opencv.py --quick    # 2 clips, 2 rounds
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from results_log import cpu_name  # benchmarks/: the CPU as lscpu names it

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

import cv2  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

from devil_dataset.builder.build import build  # noqa: E402
from devil_dataset.builder.build_options import BuildHooks, BuildOptions  # noqa: E402
from devil_dataset.core.cv_determinism import pin_opencv  # noqa: E402
from devil_dataset.core.video_io import write_video  # noqa: E402
from devil_dataset.data.train import InpaintingTrainDataset  # noqa: E402

RESULTS = Path(__file__).with_name("results") / "train_loader_opencv.json"
SIZE = (640, 360)  # the clips' size (W, H)
CROP = (432, 240)  # the training crop (W, H), ProPainter's training size
OUT_SIZE = (384, 216)  # the augmentation's resize




def make_dataset(root: Path, clips: int, frames: int) -> Path:
    """A built dataset of ``clips`` smooth textured clips panning at ``SIZE`` (fake scorers and masks: fast)."""
    rng = np.random.default_rng(0)
    w, h = SIZE
    sources = []
    for i in range(clips):
        small = rng.integers(0, 256, (h // 8, (w + 2 * frames) // 8 + 1, 3), dtype=np.uint8)
        base = cv2.resize(small, (small.shape[1] * 8, small.shape[0] * 8), interpolation=cv2.INTER_CUBIC)
        video = np.stack([base[:h, 2 * k : 2 * k + w] for k in range(frames)])
        sources.append(write_video(root / f"src{i}.mp4", video, fps=25))

    def mask(preset: str, index: int) -> np.ndarray:
        m = np.zeros((90, h, w), bool)
        for t in range(90):
            m[t, 100:260, 100 + 2 * t + index % 50 : 300 + 2 * t + index % 50] = True
        return m

    options = BuildOptions(size=SIZE, curate_options={"min_size": SIZE}, progress=False)
    hooks = BuildHooks(camera_scorer=lambda f: float(f[..., 0].mean()) / 255.0,
                       scene_scorer=lambda f: float(f[..., 1].mean()) / 255.0, mask_loader=mask)
    build(sources, root / "ds", options, hooks=hooks)
    return root / "ds"


def augment(item: dict) -> dict:
    """A user's OpenCV augmentation, the same for every frame of an item (seeded by the item): a small rotation and
    zoom, a Gaussian blur, a brightness and contrast change, a resize; the hole follows the geometry."""
    rng = np.random.default_rng([item["mask_index"], item["start"]])
    h, w = item["frames"].shape[-2:]
    turn = cv2.getRotationMatrix2D((w / 2, h / 2), float(rng.uniform(-10, 10)), float(rng.uniform(1.0, 1.2)))
    alpha, beta = float(rng.uniform(0.8, 1.2)), float(rng.uniform(-20, 20))
    frames, holes = [], []
    for frame, hole in zip(item["frames"].permute(0, 2, 3, 1).numpy(), item["hole"][:, 0].numpy()):
        turned = cv2.warpAffine(frame, turn, (w, h), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT)
        shaded = cv2.convertScaleAbs(cv2.GaussianBlur(turned, (5, 5), 1.0), alpha=alpha, beta=beta)
        frames.append(cv2.resize(shaded, OUT_SIZE, interpolation=cv2.INTER_AREA))
        moved = cv2.warpAffine(hole.astype(np.uint8), turn, (w, h), flags=cv2.INTER_NEAREST)
        holes.append(cv2.resize(moved, OUT_SIZE, interpolation=cv2.INTER_NEAREST) > 0)
    return {**item, "frames": torch.from_numpy(np.stack(frames)).permute(0, 3, 1, 2),
            "hole": torch.from_numpy(np.stack(holes)[:, None])}


def epoch_seconds(dataset: InpaintingTrainDataset) -> tuple[float, float]:
    """Wall and CPU seconds (every thread of this process) of one epoch of the DataLoader (batch 2, in this
    process)."""
    start, cpu = time.perf_counter(), time.process_time()
    for batch in torch.utils.data.DataLoader(dataset, batch_size=2):
        assert batch["frames"].shape[-2:] == (OUT_SIZE[1], OUT_SIZE[0])
    return time.perf_counter() - start, time.process_time() - cpu


def per_call_ratios(user: tuple[bool, bool], repeats: int = 200) -> dict[str, float]:
    """CPU seconds pinned / optimised of each OpenCV call of :func:`augment` on one 432x240 frame (best of 2)."""
    frame = np.random.default_rng(1).integers(0, 256, (CROP[1], CROP[0], 3), dtype=np.uint8)
    turn = cv2.getRotationMatrix2D((CROP[0] / 2, CROP[1] / 2), 5.0, 1.1)
    calls = {"GaussianBlur 5x5": lambda: cv2.GaussianBlur(frame, (5, 5), 1.0),
             "warpAffine INTER_LINEAR": lambda: cv2.warpAffine(frame, turn, CROP, flags=cv2.INTER_LINEAR,
                                                               borderMode=cv2.BORDER_REFLECT),
             "convertScaleAbs": lambda: cv2.convertScaleAbs(frame, alpha=1.1, beta=-5),
             "resize INTER_AREA": lambda: cv2.resize(frame, OUT_SIZE, interpolation=cv2.INTER_AREA)}
    ratios = {}
    for name, call in calls.items():
        best: dict[str, float] = {}
        for state in ("optimised", "pinned") * 2:
            set_opencv(state, user)
            start = time.process_time()
            for _ in range(repeats):
                call()
            best[state] = min(best.get(state, float("inf")), time.process_time() - start)
        ratios[name] = best["pinned"] / best["optimised"]
    set_opencv("optimised", user)
    return ratios


def set_opencv(state: str, user: tuple[bool, bool]) -> None:
    """``pinned``: as the package's import once left OpenCV; ``optimised``: the user's own settings back."""
    if state == "pinned":
        pin_opencv()
    else:
        cv2.setUseOptimized(user[0])
        cv2.ipp.setUseIPP(user[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="2 clips, 2 rounds")
    parser.add_argument("--rounds", type=int, default=None, help="epochs per state (alternating)")
    args = parser.parse_args()
    clips, rounds = (2, 2) if args.quick else (6, 5)
    rounds = args.rounds or rounds
    user = (cv2.useOptimized(), cv2.ipp.useIPP())
    with tempfile.TemporaryDirectory() as tmp:
        dataset = InpaintingTrainDataset(make_dataset(Path(tmp), clips, 45), num_frames=10, crop=CROP,
                                         samples_per_epoch=4 * clips, transform=augment)
        epoch_seconds(dataset)  # warm-up: file handles, first allocations
        times: dict[str, list[tuple[float, float]]] = {"optimised": [], "pinned": []}
        for _ in range(rounds):
            for state in times:
                set_opencv(state, user)
                times[state].append(epoch_seconds(dataset))
        set_opencv("optimised", user)
    wall = {state: statistics.median(t[0] for t in values) for state, values in times.items()}
    cpu = {state: statistics.median(t[1] for t in values) for state, values in times.items()}
    ratio = {"wall": wall["pinned"] / wall["optimised"], "cpu": cpu["pinned"] / cpu["optimised"]}
    calls = per_call_ratios(user)
    result = {"cpu": cpu_name(), "cores": os.cpu_count(), "opencv": cv2.__version__, "user_optimised": user[0],
              "clips": clips, "items_per_epoch": 4 * clips, "frames_per_item": 10, "crop": CROP, "resize": OUT_SIZE,
              "rounds": rounds, "wall_and_cpu_seconds_per_epoch": times, "median_wall_s": wall, "median_cpu_s": cpu,
              "ratio_pinned_over_optimised": ratio, "per_call_cpu_ratio_pinned_over_optimised": calls}
    print(f"CPU: {result['cpu']} ({os.cpu_count()} cores), OpenCV {cv2.__version__}, {4 * clips} items of 10 "
          "frames per epoch")
    for state in times:
        print(f"  {state:9s}: {wall[state]:.3f} s wall, {cpu[state]:.3f} s CPU per epoch (medians of {rounds})")
    print(f"  ratio pinned / optimised: {ratio['wall']:.2f}x wall, {ratio['cpu']:.2f}x CPU")
    print("  per call, CPU seconds pinned / optimised: " + ", ".join(f"{k} {v:.2f}x" for k, v in calls.items()))
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
