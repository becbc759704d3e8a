"""Validation: on the built-in sample's content the diagnosis groups recover the known labels (the scenes' camera
and scene motion, the masks' presets), and a second pass reads every score from the cache."""
from __future__ import annotations

import pytest

from devil_dataset.core.masks import PRESETS, mask_seed, render_mask_scaled
from devil_dataset.diagnosis import AttributeOptions, compute_attributes, directory_pairs, mask_attributes, rank_groups
from devil_dataset.diagnosis.attribute_table import tsv_text
from devil_dataset.diagnosis.attributes import MASK_ATTRIBUTES, VIDEO_ATTRIBUTES

from .conftest import SAMPLE_SIZE, known_labels

# Measured agreement (grouped items whose group is their known label), 2026-11 on the content below:
# - video attributes, 14 sample scenes at 160x96, 16 frames, SIFT: camera_motion 8/8, bg_scene_motion 7/8;
# - foreground attributes, 8 masks per preset (64) at 320x192, 45 frames: fg_size 42/42, fg_displacement 42/42,
#   fg_motion 37/42 (pose motion, 1 - IoU after removing the displacement, also grows as a mask gets smaller).
# (On the demo's built sample, 832x480 and 45 frames, 14 clips and 42 pairs: 8/8, 6/6, 28/28, 27/28, 23/28.)
# Each threshold allows one more miss than measured (fg_motion: two).
MIN_AGREEMENT = {"camera_motion": 7 / 8, "bg_scene_motion": 6 / 8, "fg_size": 41 / 42, "fg_displacement": 41 / 42,
                 "fg_motion": 35 / 42}
MASKS_PER_PRESET = 8
MASK_SIZE = (320, 192)
MASK_FRAMES = 45


@pytest.fixture(scope="module")
def sample_pass(sample_release_dir, tmp_path_factory):
    cache = tmp_path_factory.mktemp("attr-cache")
    options = AttributeOptions(scoring_size=SAMPLE_SIZE, detector="sift")
    first = compute_attributes(directory_pairs(sample_release_dir), options=options, cache_dir=cache, progress=False)
    return first, options, cache


def agreement(table, attribute: str) -> tuple[int, int]:
    """(agreeing, grouped) over the table's rows with a group for ``attribute``."""
    grouped = [r for r in table.rows if r.groups[attribute]]
    return sum(r.groups[attribute] == known_labels(r.clip_id)[attribute] for r in grouped), len(grouped)


@pytest.mark.parametrize("attribute", VIDEO_ATTRIBUTES)
def test_video_groups_recover_the_scenes_motion(sample_pass, attribute):
    (table, _), _, _ = sample_pass
    agree, grouped = agreement(table, attribute)
    assert grouped == 8  # 14 videos: tertiles of 4
    assert agree / grouped >= MIN_AGREEMENT[attribute], [(r.clip_id, r.scores[attribute], r.groups[attribute])
                                                         for r in table.rows]


def test_foreground_groups_recover_the_presets():
    presets = sorted(PRESETS)
    scores = {(p, k): mask_attributes(render_mask_scaled(p, mask_seed(k), MASK_SIZE, num_frames=MASK_FRAMES))
              for p in presets for k in range(MASKS_PER_PRESET)}
    for attribute in MASK_ATTRIBUTES:
        groups, rule = rank_groups({key: s[attribute] for key, s in scores.items()})
        token = {"fg_size": "fgs", "fg_displacement": "fgd", "fg_motion": "fgm"}[attribute]
        agree = sum(level == ("high" if f"{token}-h" in preset else "low") for (preset, _), level in groups.items())
        assert rule.per_group == 21 and len(groups) == 42
        assert agree / len(groups) >= MIN_AGREEMENT[attribute], (attribute, agree)


def test_second_pass_reads_the_cache(sample_pass, sample_release_dir):
    (table, stats), options, cache = sample_pass
    assert sum(stats.computed.values()) == 14 * 5
    again, warm = compute_attributes(directory_pairs(sample_release_dir), options=options, cache_dir=cache,
                                     progress=False)
    assert sum(warm.computed.values()) == 0 and sum(warm.cached.values()) == 14 * 5
    assert tsv_text(again) == tsv_text(table)
