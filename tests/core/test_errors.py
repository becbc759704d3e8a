"""core/errors.py: unknown names get "did you mean" with the closest valid names, everywhere names are checked."""
from __future__ import annotations

import pytest

from devil_dataset.core.engines import get_engine
from devil_dataset.core.errors import DevilError, UnknownNameError, unknown_name
from devil_dataset.core.masks import get_preset
from devil_dataset.core.slices import slice_for


def test_unknown_name_suggests_close_names_and_lists_all():
    err = unknown_name("metric", "psnrr", ["psnr", "ssim", "lpips"], prefix="--metrics: ")
    assert isinstance(err, UnknownNameError) and isinstance(err, KeyError) and isinstance(err, DevilError)
    assert str(err) == "--metrics: unknown metric 'psnrr'; did you mean 'psnr'? valid: psnr, ssim, lpips"
    assert str(unknown_name("metric", "zzz", ["psnr"])) == "unknown metric 'zzz'; valid: psnr"


@pytest.mark.parametrize("lookup, typo, suggestion", [
    (slice_for, "fg_sze_low", "did you mean 'fg_size_low'"),
    (slice_for, "camera_motion_hgh", "did you mean 'camera_motion_high'"),
    (get_preset, "fgs-h_fgm-l_fgd-x", "did you mean 'fgs-h_fgm-l_fgd-l'"),
    (get_engine, "rey", "did you mean 'ray'"),
])
def test_core_lookups_say_did_you_mean(lookup, typo, suggestion):
    with pytest.raises(UnknownNameError, match=suggestion):
        lookup(typo)
