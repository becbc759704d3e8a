"""Slice construction (the release's slices): sizes rule, rank tails, unique-source-first, mask lists, pairing."""
from __future__ import annotations

import math

import numpy as np
import pytest

from devil_dataset.builder.assemble import (
    ClipInfo,
    SliceSizes,
    mask_frames_for_clip,
    mask_list,
    materialize_pair,
    plan_slices,
    preset_labels,
    rank_tails,
    slice_sizes,
    video_lists,
)
from devil_dataset.core.masks import mask_seed
from devil_dataset.core.slices import SLICES, mask_presets_for, release_mask_ids


def test_slice_sizes_rule_reduces_to_release():
    assert slice_sizes(1250) == (200, 150)  # the release: 16% tails of 1250 clips, 150 per slice
    assert slice_sizes(938) == (150, 150)
    assert slice_sizes(937) == (150, 150)  # tails grow beyond 16% to keep 150 per slice ...
    assert slice_sizes(450) == (150, 150)
    assert slice_sizes(449) == (149, 149)  # ... down to a third of the clips
    assert slice_sizes(16) == (5, 5) and slice_sizes(6) == (2, 2) and slice_sizes(2) == (1, 1)
    with pytest.raises(ValueError):
        slice_sizes(0)


def test_rank_tails_order_inf_nan_and_disjoint():
    scores = {"a": 0.3, "b": math.inf, "c": 0.1, "d": math.nan, "e": 0.2, "f": 0.1}
    low, high = rank_tails(scores, 2, mode="corrected")
    assert low == ["c", "f"] and high == ["b", "a"]  # ties by clip id; +inf highest; NaN left out
    # release: pandas puts NaN last, so NaN is in the high tail, but the tail's second (descending) sort puts it
    # last again: the lowest-priority high candidate (the release's order inside the high tail)
    low, high = rank_tails(scores, 2)
    assert low == ["c", "f"] and high == ["b", "d"]
    low, high = rank_tails({"a": 1.0, "b": 2.0, "c": 3.0}, 5)
    assert not set(low) & set(high)


def _release_mask_list(subset, count):
    """Direct transcription of the release: shuffle the list itself, then draw flags; folder i = entry i."""
    ids = [f"devil_{p}_{i:05d}" for p, i in release_mask_ids(subset)]
    rs = np.random.RandomState(0)
    rs.shuffle(ids)
    flags = rs.randint(2, size=len(ids), dtype=bool)
    return list(zip(ids[:count], flags[:count].tolist()))


@pytest.mark.parametrize("subset", ["all", "fgd-h", "fgs-l"])
def test_mask_list_matches_release_transcription(subset):
    ours = [(m.mask_id, m.reversed) for m in mask_list(subset, 150)]
    assert ours == _release_mask_list(subset, 150)
    assert all(m.preset in mask_presets_for(subset) for m in mask_list(subset, 150))
    assert sum(r for _, r in ours) not in (0, 150)  # flags really vary
    m = mask_list(subset, 3)[0]
    assert m.seed == mask_seed(m.index)


def _clips(n, sources=None):
    rng = np.random.default_rng(1)
    out = []
    for i in range(n):
        src = sources[i] if sources else f"s{i}"
        out.append(ClipInfo(f"c{i:02d}", src, 45 + i % 40, camera_motion_score=float(rng.random()),
                            bg_scene_motion_score=float(rng.random())))
    return out


def test_video_lists_all_shuffle_and_labels():
    clips = _clips(12)
    sizes = slice_sizes(12)  # tail 4
    videos, labels = video_lists(clips, sizes)
    names = sorted(c.clip_id for c in clips)
    np.random.RandomState(0).shuffle(names)
    assert videos["all"] == names[:4]  # shuffled order kept: the release's folders 00000-00003
    ranked = sorted(clips, key=lambda c: (-c.camera_motion_score, c.clip_id))
    assert videos["cm-h"] == sorted(c.clip_id for c in ranked[:4])
    assert videos["cm-l"] == sorted(c.clip_id for c in ranked[-4:])
    for cid in videos["cm-l"]:
        assert labels[cid]["camera_motion"] == "low"
    assert all(v == sorted(v) for k, v in videos.items() if k != "all")


def test_unique_source_first_when_tails_exceed_the_slice():
    # The release's case (tail > per_slice): the top-scoring clips all come from source A
    clips = [ClipInfo(f"c{i:02d}", "A" if i < 4 else f"s{i}", 45, camera_motion_score=20.0 - i) for i in range(14)]
    videos, _ = video_lists(clips, SliceSizes(tail=6, per_slice=3))
    # candidates in score order: c00..c03 (A), c04, c05 -> round 1 takes c00, c04, c05
    assert videos["cm-h"] == ["c00", "c04", "c05"]


def test_manual_bg_labels_win():
    clips = [ClipInfo(f"c{i}", f"s{i}", 45, bg_scene_motion_score=float(i),
                      bg_scene_motion_manual={0: "high", 5: "low"}.get(i)) for i in range(6)]
    videos, labels = video_lists(clips, slice_sizes(6))
    assert videos["bsm-h"] == ["c0"] and videos["bsm-l"] == ["c5"]
    assert labels["c0"]["bg_scene_motion"] == "high"


def test_plan_slices_pairs_in_release_folder_order_and_subsets():
    clips = _clips(16)
    plan = plan_slices(clips)
    assert set(plan.pairs) == set(SLICES) and plan.sizes == (5, 5)
    for name, pairs in plan.pairs.items():
        spec = SLICES[name]
        assert len(pairs) == 5
        assert [p.clip.clip_id for p in pairs] == plan.videos[spec.videos]
        assert [p.release_index for p in pairs] == list(range(5))
        assert [(p.mask.mask_id, p.mask.reversed) for p in pairs] == _release_mask_list(spec.masks, 5)
        assert all(p.mask.preset in mask_presets_for(spec.masks) for p in pairs)
    assert plan.videos["all"] == [p.clip.clip_id for p in plan.pairs["fg_size_high"]]
    assert plan_slices(clips, seed=1).videos["all"] != plan.videos["all"]


def test_mask_frames_reverse_and_cycle():
    m = np.arange(90)[:, None, None] * np.ones((1, 2, 2), int)
    assert mask_frames_for_clip(m, 45, False)[:, 0, 0].tolist() == list(range(45))
    assert mask_frames_for_clip(m, 45, True)[:, 0, 0].tolist() == [89 - k for k in range(45)]
    assert mask_frames_for_clip(m, 92, False)[88:, 0, 0].tolist() == [88, 89, 88, 87]


def test_materialize_pair_cover_crops_frames():
    clip = ClipInfo("c0", "s", 45)
    pair = plan_slices([clip]).pairs["all"][0]
    frames = np.zeros((45, 60, 100, 3), np.uint8)
    frames[:, :, 45:55] = 255
    mask = np.zeros((90, 48, 64), bool)
    mask[:, 5] = True
    mask[0, 0, 0] = True
    f, h = materialize_pair(pair, lambda c: frames, lambda p, i: mask, size=(64, 48))
    assert f.shape == (45, 48, 64, 3) and h.shape == (45, 48, 64)
    assert f[0, 24, 32].min() > 200  # the centre column stays in the middle after the centre crop
    assert h[0, 0, 0] != pair.mask.reversed  # frame 0 of a reversed mask is the original frame 89
    with pytest.raises(ValueError, match="expected 64x48"):
        materialize_pair(pair, lambda c: frames, lambda p, i: mask[:, :40], size=(64, 48))


def test_preset_labels():
    assert preset_labels("fgs-l_fgm-h_fgd-l") == {"fg_size_label": "low", "fg_motion_label": "high",
                                                  "fg_displacement_label": "low"}
    assert preset_labels("") == {"fg_size_label": "", "fg_motion_label": "", "fg_displacement_label": ""}
