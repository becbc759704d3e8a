"""A small example in the release's directory layout, generated here (``devil example``), for trying directory mode.

The release's devkit sample (one video of 21 frames at 432x240, its masks and a method's predictions) is not part
of a pip install; :func:`write_release_example` writes one of the same shape: a rendered landscape scene with a
known camera pan (:mod:`devil_dataset.builder.samples`), the release's mask 0 of a preset cover-cropped to the
frame, and the predictions of the inpainter it is given (``devil example`` passes a baseline).

    >>> import tempfile
    >>> keep = lambda frames, hole: frames  # an "inpainter" that returns the ground truth
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     inputs, outputs = write_release_example(tmp, keep)
    ...     inputs.name, outputs.name, len(list(outputs.glob("frame_*_pred.png")))
    ('sample-inpainting-inputs', 'sample-inpainting-outputs', 21)
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable

import numpy as np

from ..core.atomic import atomic_directory
from ..core.mask_store import stored_mask
from ..core.release_format import write_frame_pngs, write_mask_pngs
from .samples import render_scene, scene

# The release devkit's sample video: 21 frames of 432x240 (its sample-inpainting-inputs folder).
DEVKIT_NUM_FRAMES = 21
DEVKIT_SIZE = (432, 240)
EXAMPLE_SCENE = "pan_static"  # builder/samples.py: a textured landscape under a known camera pan
EXAMPLE_PRESET = "fgs-h_fgm-l_fgd-l"  # a large, slowly moving hole (the release's masks)
INPUTS_DIR, OUTPUTS_DIR = "sample-inpainting-inputs", "sample-inpainting-outputs"


def write_release_example(out_dir: str | Path,
                          inpainter: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> tuple[Path, Path]:
    """Write the example into ``out_dir``: ``INPUTS_DIR`` (``frame_%04d_gt.png`` + ``frame_%04d_mask.png``, mask
    1 = known) and ``OUTPUTS_DIR`` (``frame_%04d_pred.png``, what ``inpainter(frames, hole)`` returns). Returns
    (inputs folder, outputs folder). Each folder appears atomically; an existing one is replaced."""

    out = Path(out_dir)
    frames = render_scene(scene(EXAMPLE_SCENE), size=DEVKIT_SIZE, num_frames=DEVKIT_NUM_FRAMES)
    hole = stored_mask(EXAMPLE_PRESET, 0, size=DEVKIT_SIZE, num_frames=DEVKIT_NUM_FRAMES)
    pred = inpainter(frames, hole)
    with atomic_directory(out / INPUTS_DIR, overwrite=True) as tmp:
        write_frame_pngs(frames, tmp, "gt")
        write_mask_pngs(hole, tmp)
    with atomic_directory(out / OUTPUTS_DIR, overwrite=True) as tmp:
        write_frame_pngs(pred, tmp, "pred")
    return out / INPUTS_DIR, out / OUTPUTS_DIR


__all__ = ["DEVKIT_NUM_FRAMES", "DEVKIT_SIZE", "EXAMPLE_PRESET", "EXAMPLE_SCENE", "INPUTS_DIR", "OUTPUTS_DIR",
           "write_release_example"]
