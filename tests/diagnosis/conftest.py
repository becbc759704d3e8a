"""The built-in sample's content for the diagnosis tests: every rendered sample scene (known camera and scene motion)
with a mask of a DEVIL preset (known foreground labels), small and short so the attribute pass takes seconds."""
from __future__ import annotations

from pathlib import Path

import pytest

from devil_dataset.builder.samples import SAMPLE_SCENES, render_scene
from devil_dataset.core.masks import PRESETS, mask_seed, render_mask_scaled
from devil_dataset.core.release_format import write_frame_pngs, write_mask_pngs

# Small enough for a fast test, large enough for the labellers: at 160x96 and 16 frames the camera-motion score
# samples 10 frames and the scene-motion walk keeps one >= 12-frame segment per static-camera clip.
SAMPLE_SIZE = (160, 96)
SAMPLE_FRAMES = 16


def known_labels(clip_id: str) -> dict[str, str]:
    """The known label of each attribute of a clip folder ``NN-<scene>-<preset>`` (scene spec and preset name)."""
    index, rest = clip_id.split("-", 1)
    scene = SAMPLE_SCENES[int(index)]
    preset = rest[len(scene.name) + 1:]
    tokens = dict(t.split("-") for t in preset.split("_"))
    level = {"l": "low", "h": "high"}
    return {"camera_motion": scene.camera_motion, "bg_scene_motion": scene.scene_motion,
            "fg_size": level[tokens["fgs"]], "fg_displacement": level[tokens["fgd"]],
            "fg_motion": level[tokens["fgm"]]}


@pytest.fixture(scope="session")
def sample_release_dir(tmp_path_factory) -> Path:
    """A release-layout folder: one clip per sample scene, its mask from preset ``i % 8`` (each preset twice at
    most), the folder named ``NN-<scene>-<preset>``."""
    root = tmp_path_factory.mktemp("diagnosis_sample")
    presets = sorted(PRESETS)
    for i, spec in enumerate(SAMPLE_SCENES):
        preset = presets[i % len(presets)]
        folder = root / f"{i:02d}-{spec.name}-{preset}"
        write_frame_pngs(render_scene(spec, size=SAMPLE_SIZE, num_frames=SAMPLE_FRAMES, seed=0), folder)
        write_mask_pngs(render_mask_scaled(preset, mask_seed(i // len(presets)), SAMPLE_SIZE,
                                           num_frames=SAMPLE_FRAMES), folder)
    return root
