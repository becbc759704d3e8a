"""The slice table (the release's slices)."""
import pytest

from devil_dataset.core.masks import PRESETS
from devil_dataset.core.slices import (
    ATTRIBUTES,
    MASK_SUBSETS,
    SLICES,
    VIDEO_SUBSETS,
    mask_presets_for,
    release_mask_ids,
    slice_for,
)


def test_ten_slices_plus_all():
    assert len(SLICES) == 11
    assert list(SLICES)[0] == "all"
    for attribute in ATTRIBUTES:
        assert SLICES[f"{attribute}_low"].level == "low"
        assert SLICES[f"{attribute}_high"].attribute == attribute


@pytest.mark.parametrize("name,videos,masks", [
    ("fg_displacement_high", "all", "fgd-h"), ("fg_motion_low", "all", "fgm-l"), ("fg_size_high", "all", "fgs-h"),
    ("bg_scene_motion_low", "bsm-l", "all"), ("camera_motion_high", "cm-h", "all"),
])
def test_slice_subsets_follow_spec(name, videos, masks):
    s = SLICES[name]
    assert (s.videos, s.masks) == (videos, masks)
    assert s.videos in VIDEO_SUBSETS and s.masks in MASK_SUBSETS


def test_mask_subset_presets_in_release_order():
    assert mask_presets_for("fgd-h") == ("fgs-h_fgm-h_fgd-h", "fgs-h_fgm-l_fgd-h", "fgs-l_fgm-h_fgd-h",
                                         "fgs-l_fgm-l_fgd-h")
    assert mask_presets_for("all") == tuple(sorted(PRESETS))
    for subset in MASK_SUBSETS[1:]:
        presets = mask_presets_for(subset)
        assert len(presets) == 4 and all(subset in p.split("_") for p in presets)


def test_release_mask_list():
    ids = release_mask_ids("fgs-l")
    assert len(ids) == 4000
    assert ids[0] == ("fgs-l_fgm-h_fgd-h", 0) and ids[999] == ("fgs-l_fgm-h_fgd-h", 999)
    assert ids[1000] == ("fgs-l_fgm-h_fgd-l", 0)


def test_unknown_names_list_valid_ones():
    with pytest.raises(ValueError, match="camera_motion_high"):
        slice_for("camera")
    with pytest.raises(ValueError, match="fgd-h"):
        mask_presets_for("fgd")
