"""Many masks at once (core/mask_batch.py): rendering into a folder, the statistics document, NaN -> None."""
from __future__ import annotations

import math

import numpy as np
import pytest

from devil_dataset.core.errors import DevilError
from devil_dataset.core.mask_batch import mask_stats_document, nan_to_none, render_masks
from devil_dataset.core.mask_stats import mask_stats
from devil_dataset.core.mask_store import read_stored, stored_mask
from devil_dataset.core.masks import mask_seed
from devil_dataset.core.release_format import write_mask_pngs

PRESET = "fgs-l_fgm-l_fgd-h"


def test_render_masks_writes_then_resumes(tmp_path):
    jobs = [(PRESET, 3), (PRESET, 4)]
    kwargs = dict(fmt="release-png", reverse=False, size=(832, 480), num_frames=2, progress=False)
    assert render_masks(tmp_path / "out", jobs, **kwargs) == 2
    hole, meta = read_stored(tmp_path / "out" / f"devil_{PRESET}" / "00004")
    assert np.array_equal(hole, stored_mask(PRESET, 4, num_frames=2)) and meta["index"] == 4
    (tmp_path / "out" / f"devil_{PRESET}" / ".tmp-left-by-a-kill").mkdir()
    assert render_masks(tmp_path / "out", jobs, **kwargs) == 0  # already stored with the same settings
    assert not (tmp_path / "out" / f"devil_{PRESET}" / ".tmp-left-by-a-kill").exists()


def test_render_masks_npz_reversed(tmp_path):
    assert render_masks(tmp_path, [(PRESET, 0)], fmt="npz", reverse=True, size=(96, 64), num_frames=3,
                        progress=False) == 1
    hole, meta = read_stored(tmp_path / f"devil_{PRESET}_00000-reversed.npz")
    assert hole.shape == (3, 64, 96) and meta["reversed"] is True


def test_render_masks_names_a_folder_it_cannot_create(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(DevilError, match="file/sub: cannot create the output folder"):
        render_masks(tmp_path / "file" / "sub", [(PRESET, 0)], fmt="npz", reverse=False, size=(96, 64),
                     num_frames=2, progress=False)


def test_stats_document_of_rendered_and_stored_masks_agree(tmp_path):
    rendered = mask_stats_document([(PRESET, 1), (PRESET, 2)], num_frames=3, progress=False)
    assert [m["index"] for m in rendered["masks"]] == [1, 2]
    assert rendered["masks"][0] == {"preset": PRESET, "index": 1, "seed": mask_seed(1), "reversed": False,
                                    "stats": nan_to_none(mask_stats(stored_mask(PRESET, 1, num_frames=3)).to_dict())}
    assert list(rendered["summary"]) == [PRESET] and rendered["summary"][PRESET]["mean_area"]["n"] == 2
    render_masks(tmp_path, [(PRESET, 1)], fmt="npz", reverse=False, size=(832, 480), num_frames=3, progress=False)
    path = tmp_path / f"devil_{PRESET}_00001.npz"
    stored = mask_stats_document([path], num_frames=99, progress=False)["masks"][0]
    assert stored["path"] == str(path) and stored["stats"] == rendered["masks"][0]["stats"]
    assert (stored["preset"], stored["index"], stored["seed"]) == (PRESET, 1, mask_seed(1))


def test_stats_document_summary_only_unknown_preset_and_no_nan(tmp_path):
    write_mask_pngs(np.zeros((2, 48, 64), bool), tmp_path / "bare")  # no hole: pair statistics are NaN; no mask.json
    doc = mask_stats_document([tmp_path / "bare"], num_frames=2, summary_only=True, progress=False)
    assert set(doc) == {"summary"} and list(doc["summary"]) == ["unknown"]
    assert doc["summary"]["unknown"]["pose_motion"] == {"median": None, "q25": None, "q75": None, "n": 0}


def test_nan_to_none_reaches_nested_values_only_through_dicts_and_lists():
    assert nan_to_none([{"a": math.nan}, [math.nan, 1.0]]) == [{"a": None}, [None, 1.0]]
    assert nan_to_none(math.inf) == math.inf and nan_to_none("nan") == "nan"
    same = (math.nan,)
    assert nan_to_none(same) is same  # tuples are left as they are
