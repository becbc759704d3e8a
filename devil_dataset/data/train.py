"""Training dataset: random T-frame windows of the clips, paired with masks rendered on the fly.

Each item is reproducible from ``(seed, epoch, index)`` alone (``numpy.random.default_rng([seed, epoch, index])``),
so the same seed gives the same samples whatever the number of DataLoader workers or their order.

    >>> ds = InpaintingTrainDataset("path/to/dataset", num_frames=10, crop=(256, 256))  # doctest: +SKIP
    >>> loader = torch.utils.data.DataLoader(  # doctest: +SKIP
    ...     ds, batch_size=4, num_workers=2, worker_init_fn=worker_init_fn)
"""
from __future__ import annotations

import multiprocessing
import os
import random
from multiprocessing.context import get_spawning_popen
from typing import TYPE_CHECKING, Callable, Sequence

import numpy as np
from torch.utils.data import Dataset  # noqa: TID253

from ..core.cover_crop import cover_crop_mask
from ..core.dataset_schema import decode_frames
from ..core.errors import DevilError
from ..core.masks import PRESETS, RELEASE_NUM_FRAMES, RELEASE_SIZE, mask_seed, render_mask, render_mask_scaled
from .load import local_dataset_dir, local_shards, resolve_config

if TYPE_CHECKING:
    import pyarrow.parquet as pq

# The release's masks: 1000 masks (seed indices) per preset.
MASK_INDICES = 1000

# How training masks are made (see InpaintingTrainDataset's ``masks`` argument).
MASK_MODES = ("scaled", "release")
MaskRenderer = Callable[[str, int, int], np.ndarray]  # (preset, seed, num_frames) -> bool [T, H, W] at 1920x1080


def _default_renderer(preset: str, seed: int, num_frames: int) -> np.ndarray:
    return render_mask(preset, seed, size=RELEASE_SIZE, num_frames=num_frames)


def worker_init_fn(worker_id: int) -> None:
    """Seed numpy's and Python's global RNGs per worker from torch's per-worker seed (for user augmentations).

    The dataset itself does not need it: its randomness comes from ``(seed, epoch, index)``.
    """

    import torch

    s = torch.initial_seed() % 2**32
    np.random.seed(s)
    random.seed(s)


class InpaintingTrainDataset(Dataset):
    """A torch map-style dataset of ``num_frames``-frame windows with on-the-fly masks.

    Args:
        dataset_dir: a local dataset directory written by ``devil build`` (or ``devil import-release``), or a Hub
            repo id ``ORG/NAME`` (only ``config`` is fetched, see :func:`devil_dataset.data.fetch_slice`).
        config: which config's clips to use (default ``all``); clips are de-duplicated by ``clip_id``.
        num_frames: window length T (<= the shortest clip used; shorter clips are skipped).
        presets: mask presets to draw from (default: all eight).
        mask_indices: range of seed indices to draw from (default 0..999, the release's masks).
        reverse_prob: probability of playing a mask backwards (as the release's reversal flag: the window is the end
            of the 90-frame mask, played backwards).
        crop: random crop (W, H) applied to frames and mask alike; ``None`` keeps the full frame.
        resize: final size (W, H) (bilinear frames, nearest mask); ``None`` keeps the size.
        samples_per_epoch: items per epoch (default: one per clip); item i uses clip i % num_clips.
        seed: base seed; change the epoch with :meth:`set_epoch` for fresh windows.
        masks: ``"scaled"`` (default): each mask drawn directly at the clip's size and crop window
            (:func:`devil_dataset.core.masks.render_mask_scaled`: the release's vertex paths, 9-22x faster, the
            preset statistics within a few per cent); ``"release"``: rendered at 1920x1080 and cover-cropped, the
            pixels of the benchmark's stored masks.
        mask_renderer: ``(preset, seed, num_frames) -> bool [T, 1080, 1920]``, replaces the generator (then
            ``masks`` is not used).
        channels_first: items as ``[T, C, H, W]`` (default, torchvision's layout) or ``[T, H, W, C]``.
        transform: ``dict -> dict`` applied to every item in the worker that makes it (augmentations, dtype
            conversion); it gets the item below and returns what the DataLoader collates.

    Items: ``frames`` uint8 [T, 3, H, W], ``hole`` bool [T, 1, H, W] (True = hole), ``clip_id``, ``start``
    (first frame of the window in the clip), ``preset``, ``mask_index``, ``reversed``.

    :meth:`set_epoch` reaches DataLoader workers, persistent ones included (the epoch is held in shared memory
    created with the dataset), so ``persistent_workers=True`` gives the same items as fresh workers.
    """

    def __init__(  # noqa: PLR0913  (public API: the dataset's keyword options)
        self,
        dataset_dir: str | os.PathLike,
        config: str = "all",
        *,
        num_frames: int = 10,
        presets: Sequence[str] | None = None,
        mask_indices: tuple[int, int] = (0, MASK_INDICES),
        reverse_prob: float = 0.0,
        crop: tuple[int, int] | None = None,
        resize: tuple[int, int] | None = None,
        samples_per_epoch: int | None = None,
        seed: int = 0,
        split: str = "test",
        masks: str = "scaled",
        mask_renderer: MaskRenderer | None = None,
        channels_first: bool = True,
        transform: Callable[[dict], dict] | None = None,
    ) -> None:
        import pyarrow.parquet as pq

        resolve_config(config)
        self.presets = tuple(presets) if presets else tuple(PRESETS)
        unknown = [p for p in self.presets if p not in PRESETS]
        if unknown:
            raise DevilError(f"unknown preset(s) {unknown}; valid: {', '.join(PRESETS)}")
        if num_frames < 1:
            raise DevilError(f"num_frames must be >= 1, got {num_frames}")
        self.num_frames = int(num_frames)
        self.mask_indices = (int(mask_indices[0]), int(mask_indices[1]))
        self.reverse_prob = float(reverse_prob)
        self.crop, self.resize = crop, resize
        self.seed = int(seed)
        # shared with DataLoader workers at their start, so set_epoch reaches persistent workers too
        self._epoch = multiprocessing.get_context().RawValue("q", 0)
        self.channels_first, self.transform = bool(channels_first), transform
        if masks not in MASK_MODES:
            raise DevilError(f"masks must be one of {', '.join(MASK_MODES)}, got {masks!r}")
        self.masks = masks
        self.mask_renderer = mask_renderer
        # Index: (shard path, row group, clip id, frame count, (W, H)) for every distinct clip long enough.
        self.clips: list[tuple[str, int, str, int, tuple[int, int]]] = []
        seen: set[str] = set()
        for shard in local_shards(local_dataset_dir(dataset_dir, config, split), config, split):
            pf = pq.ParquetFile(shard)
            for g in range(pf.num_row_groups):
                meta = pf.read_row_group(g, columns=["clip_id", "num_frames", "width", "height"]).to_pylist()
                for row in meta:
                    if row["clip_id"] in seen or row["num_frames"] < self.num_frames:
                        continue
                    seen.add(row["clip_id"])
                    self.clips.append((str(shard), g, row["clip_id"], row["num_frames"], (row["width"], row["height"])))
        if not self.clips:
            raise DevilError(f"{dataset_dir}: no clip of config {config!r} has >= {num_frames} frames")
        self.samples_per_epoch = int(samples_per_epoch or len(self.clips))
        self._files: dict[str, pq.ParquetFile] = {}

    def __len__(self) -> int:
        return self.samples_per_epoch

    @property
    def epoch(self) -> int:
        """The current epoch (see :meth:`set_epoch`)."""
        return int(self._epoch.value)

    def set_epoch(self, epoch: int) -> None:
        """Select the epoch (windows, masks and crops change with it; same epoch -> same items). Call it before
        iterating the DataLoader of that epoch; workers already running (``persistent_workers``) see it too."""
        self._epoch.value = int(epoch)

    def _read_frames(self, shard: str, group: int, start: int) -> np.ndarray:
        import pyarrow.parquet as pq

        pf = self._files.get(shard)
        if pf is None:  # opened lazily, so each DataLoader worker has its own handle
            pf = self._files[shard] = pq.ParquetFile(shard)
        items = pf.read_row_group(group, columns=["frames"]).column("frames")[0].as_py()
        return decode_frames(items[start : start + self.num_frames])

    def window_mask(self, preset: str, mask_index: int, reverse: bool, size: tuple[int, int],
                    window: tuple[int, int, int, int] | None = None) -> np.ndarray:
        """The item's hole mask, bool [num_frames, H, W]: mask ``mask_index`` of ``preset`` (reversed as the
        release's flag does), cover-cropped to the clip's ``size`` (W, H) and cut to ``window`` (left, top, w, h)."""
        # A reversed mask is the release's 90-frame mask played backwards (the window is its end, reversed).
        total = max(RELEASE_NUM_FRAMES if reverse else self.num_frames, self.num_frames)
        if self.mask_renderer is None and self.masks == "scaled":
            return render_mask_scaled(preset, mask_seed(mask_index), size, frames=range(self.num_frames),
                                      num_frames=total, reverse=reverse, window=window)
        render = self.mask_renderer or _default_renderer
        mask = render(preset, mask_seed(mask_index), total)
        if reverse:
            mask = mask[::-1]
        hole = cover_crop_mask(np.ascontiguousarray(mask[: self.num_frames]), size)
        if window is not None:
            x0, y0, cw, ch = window
            hole = hole[:, y0 : y0 + ch, x0 : x0 + cw]
        return hole

    def __getitem__(self, index: int) -> dict:
        import torch

        if not 0 <= index < len(self):
            raise IndexError(index)
        rng = np.random.default_rng([self.seed, self.epoch, index])
        shard, group, clip_id, length, (w, h) = self.clips[index % len(self.clips)]
        start = int(rng.integers(0, length - self.num_frames + 1))
        preset = self.presets[int(rng.integers(len(self.presets)))]
        mask_index = int(rng.integers(*self.mask_indices))
        reverse = bool(rng.random() < self.reverse_prob)
        frames = self._read_frames(shard, group, start)
        window = None
        if self.crop is not None:
            cw, ch = self.crop
            if cw > w or ch > h:
                raise DevilError(f"crop {cw}x{ch} is larger than the frames ({w}x{h})")
            x0, y0 = int(rng.integers(0, w - cw + 1)), int(rng.integers(0, h - ch + 1))
            frames, window = frames[:, y0 : y0 + ch, x0 : x0 + cw], (x0, y0, cw, ch)
        hole = self.window_mask(preset, mask_index, reverse, (w, h), window)
        f = torch.from_numpy(np.ascontiguousarray(frames)).permute(0, 3, 1, 2).contiguous()
        m = torch.from_numpy(np.ascontiguousarray(hole))[:, None]
        if self.resize is not None:
            rw, rh = self.resize
            f = torch.nn.functional.interpolate(f.float(), size=(rh, rw), mode="bilinear", align_corners=False,
                                                antialias=True)
            f = f.round().clamp(0, 255).to(torch.uint8)
            m = torch.nn.functional.interpolate(m.float(), size=(rh, rw), mode="nearest") > 0.5
        if not self.channels_first:
            f, m = f.permute(0, 2, 3, 1), m.permute(0, 2, 3, 1)
        item = {"frames": f, "hole": m, "clip_id": clip_id, "start": start, "preset": preset,
                "mask_index": mask_index, "reversed": reverse}
        return self.transform(item) if self.transform is not None else item

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_files"] = {}  # file handles are per process

        if get_spawning_popen() is None:  # a plain pickle (not a worker start): keep the epoch's value only
            state["_epoch"] = int(self._epoch.value)
        return state

    def __setstate__(self, state: dict) -> None:
        if isinstance(state.get("_epoch"), int):
            value = state["_epoch"]
            state["_epoch"] = multiprocessing.get_context().RawValue("q", value)
        self.__dict__.update(state)
