"""The DEVIL evaluation slices as data (the release's slices), shared by the builder, the loader and the evaluator.

A slice pairs a *video subset* (clips chosen by a content attribute of the video) with a *mask subset*
(occlusion masks chosen by their preset). Example:

    >>> SLICES["camera_motion_high"].videos, SLICES["camera_motion_high"].masks
    ('cm-h', 'all')
    >>> mask_presets_for("fgd-h")[:2]
    ('fgs-h_fgm-h_fgd-h', 'fgs-h_fgm-l_fgd-h')
"""
from __future__ import annotations

from dataclasses import dataclass

from .cover_crop import EVAL_SIZE as EVAL_SIZE  # re-exported: the evaluation size of every slice
from .errors import unknown_name
from .masks import PRESETS

# The release's slices: video subsets, from the camera-motion (cm) and background-scene-motion (bsm) labels.
VIDEO_SUBSETS: tuple[str, ...] = ("all", "cm-l", "cm-h", "bsm-l", "bsm-h")
# The release's slices: mask subsets; each names a setting that appears in the preset name.
MASK_SUBSETS: tuple[str, ...] = ("all", "fgd-l", "fgd-h", "fgm-l", "fgm-h", "fgs-l", "fgs-h")

# The release's slices: 150 videos per slice in the release.
RELEASE_VIDEOS_PER_SLICE = 150
# The release's masks: 1000 masks per preset.
RELEASE_MASKS_PER_PRESET = 1000


@dataclass(frozen=True)
class SliceSpec:
    """One evaluation slice: a name, a video subset and a mask subset.

    ``attribute`` and ``level`` say which content attribute the slice isolates (``None`` for ``all``).
    """

    name: str
    videos: str
    masks: str
    attribute: str | None
    level: str | None
    description: str


def _spec(attribute: str, level: str, videos: str, masks: str, what: str) -> SliceSpec:
    return SliceSpec(f"{attribute}_{level}", videos, masks, attribute, level, f"{level} {what}")


# The release's table of the ten slices, plus `all` (all videos x all masks).
SLICES: dict[str, SliceSpec] = {
    s.name: s
    for s in (
        SliceSpec("all", "all", "all", None, None, "all videos with all mask presets"),
        _spec("fg_displacement", "low", "all", "fgd-l", "foreground (mask) displacement"),
        _spec("fg_displacement", "high", "all", "fgd-h", "foreground (mask) displacement"),
        _spec("fg_motion", "low", "all", "fgm-l", "foreground pose motion (mask shape change)"),
        _spec("fg_motion", "high", "all", "fgm-h", "foreground pose motion (mask shape change)"),
        _spec("fg_size", "low", "all", "fgs-l", "foreground (mask) size"),
        _spec("fg_size", "high", "all", "fgs-h", "foreground (mask) size"),
        _spec("bg_scene_motion", "low", "bsm-l", "all", "background scene motion"),
        _spec("bg_scene_motion", "high", "bsm-h", "all", "background scene motion"),
        _spec("camera_motion", "low", "cm-l", "all", "camera motion"),
        _spec("camera_motion", "high", "cm-h", "all", "camera motion"),
    )
}

# The five content attributes, in the paper's order, each with its low/high slice.
ATTRIBUTES: tuple[str, ...] = ("bg_scene_motion", "camera_motion", "fg_displacement", "fg_motion", "fg_size")


def mask_presets_for(mask_subset: str) -> tuple[str, ...]:
    """Presets of a mask subset, in the release's sorted order of ``devil_<preset>`` names (the release's slices)."""
    if mask_subset not in MASK_SUBSETS:
        raise unknown_name("mask subset", mask_subset, MASK_SUBSETS)
    names = sorted(f"devil_{p}" for p in PRESETS if mask_subset == "all" or mask_subset in p.split("_"))
    return tuple(n[len("devil_") :] for n in names)


def release_mask_ids(mask_subset: str, masks_per_preset: int = RELEASE_MASKS_PER_PRESET) -> list[tuple[str, int]]:
    """The release's mask list for a subset: (preset, index) for every preset in order, indices 0.. in order.

    >>> len(release_mask_ids("fgd-h")), len(release_mask_ids("all"))
    (4000, 8000)
    """
    return [(p, i) for p in mask_presets_for(mask_subset) for i in range(masks_per_preset)]


def slice_for(name: str) -> SliceSpec:
    """Look up a slice by name with a clear error listing the valid names."""
    try:
        return SLICES[name]
    except KeyError:
        raise unknown_name("slice", name, SLICES) from None
