"""What a process's CPU-dependent libraries are set to, for ``tests/core/test_import_side_effects.py``.

:func:`process_state` reads, sets nothing it does not give back: OpenCV's optimisation flag, this thread's IPP switch
and OpenCV's thread count; torch's intra- and inter-op thread counts and ATen's CPU capability; every BLAS's thread
count (threadpoolctl); the pin variables of ``core/cpu_pins``. :func:`worker_state` is the same, for a record
mapped on the local engine's worker processes (module-level, so the workers can import it).

Run as a script it imports ``devil_dataset`` and every module of it, loads a built dataset with ``datasets``
and iterates the training DataLoader (``sys.argv[1]``: the dataset folder, ``sys.argv[2]``: a datasets cache), then
prints one JSON object: the environment variables that changed, the library state seen while the loader made its
items, and the state at the end. With ``--reference`` it imports the same libraries without ``devil_dataset``.
"""
from __future__ import annotations

import json
import os
import sys


def process_state() -> dict[str, object]:
    """The libraries' settings in this process now (imports cv2, torch and threadpoolctl)."""
    import cv2
    import torch
    from threadpoolctl import threadpool_info

    blas = sorted((info["internal_api"], os.path.basename(info["filepath"]), info["num_threads"])
                  for info in threadpool_info())
    return {"cv2_optimized": cv2.useOptimized(), "cv2_ipp": cv2.ipp.useIPP(), "cv2_threads": cv2.getNumThreads(),
            "torch_threads": torch.get_num_threads(), "torch_interop_threads": torch.get_num_interop_threads(),
            "torch_capability": torch.backends.cpu.get_cpu_capability(), "blas_threads": blas}


def worker_state(name: str) -> dict[str, object]:
    """In an engine worker: the pin variable ``name`` as the worker holds it, and OpenCV's flags there."""
    import cv2

    return {"value": os.environ.get(name), "cv2_optimized": cv2.useOptimized(), "cv2_ipp": cv2.ipp.useIPP()}


def _import_everything() -> int:
    """Import every module of the package (a ``__main__`` excepted); returns how many."""
    import importlib
    import pkgutil

    import devil_dataset

    names = [m.name for m in pkgutil.walk_packages(devil_dataset.__path__, "devil_dataset.")
             if not m.name.endswith("__main__")]
    for name in names:
        importlib.import_module(name)
    return len(names)


def _load_and_iterate(dataset: str, cache: str) -> dict[str, object]:
    """``load_dataset`` of the built folder, then one epoch of the training DataLoader; the state during it."""
    import datasets
    import torch

    from devil_dataset.data.train import InpaintingTrainDataset

    rows = datasets.load_dataset(dataset, "all", split="test", cache_dir=cache)
    assert len(rows) > 0 and rows[0]["clip_id"]
    seen: list[dict[str, object]] = []

    def record(item: dict) -> dict:
        seen.append(process_state())
        return item

    train = InpaintingTrainDataset(dataset, num_frames=4, crop=(32, 24), resize=(16, 12), transform=record)
    items = sum(int(batch["frames"].shape[0]) for batch in torch.utils.data.DataLoader(train, batch_size=2))
    assert items == len(train) and seen
    return seen[0]


if __name__ == "__main__":
    before = dict(os.environ)
    reference = sys.argv[1] == "--reference"
    if reference:
        import cv2  # noqa: F401
        import datasets  # noqa: F401
        import torch  # noqa: F401

        during = None
    else:
        _import_everything()
        during = _load_and_iterate(sys.argv[1], sys.argv[2])
    after = dict(os.environ)
    changed = {k: [before.get(k), after.get(k)] for k in set(before) | set(after) if before.get(k) != after.get(k)}
    print(json.dumps({"environ_changed": changed, "during": during, "after": process_state()}))
