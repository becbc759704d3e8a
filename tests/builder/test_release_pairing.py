"""Slice rows equal the release's folders 00000-00149 (the release's pairing).

``release_folders`` below re-states the release's procedure with pandas, independently of
``devil_dataset.builder.assemble``: the score table lists clips in name order; each ranking is pandas' ascending
``sort_values`` (NaN last); the low tail is its head, the high tail its end sorted again descending (NaN last
again: scored clips first, then NaN); 150 clips
"unique source video first" (rank within source = ``groupby().cumcount()``); the cm/bsm lists are written in name
order, the ``all`` list after ``RandomState(0).shuffle``; every mask list is shuffled by ``RandomState(0)``, which
then draws the reversal flags; folder i holds entry i of each list.
"""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from devil_dataset.builder.assemble import ClipInfo, SliceSizes, plan_slices

try:
    import pandas as pd
except ImportError:  # the pinned table below still runs
    pd = None
needs_pandas = pytest.mark.skipif(pd is None, reason="the release reference is written with pandas")

# The release's slices: the ten slices (+ all) as (video subset, mask subset), written out again on purpose.
RELEASE_SLICES = {
    "all": ("all", "all"),
    "fg_displacement_low": ("all", "fgd-l"), "fg_displacement_high": ("all", "fgd-h"),
    "fg_motion_low": ("all", "fgm-l"), "fg_motion_high": ("all", "fgm-h"),
    "fg_size_low": ("all", "fgs-l"), "fg_size_high": ("all", "fgs-h"),
    "bg_scene_motion_low": ("bsm-l", "all"), "bg_scene_motion_high": ("bsm-h", "all"),
    "camera_motion_low": ("cm-l", "all"), "camera_motion_high": ("cm-h", "all"),
}
# The release's masks: the eight presets.
RELEASE_PRESETS = [f"fgs-{a}_fgm-{b}_fgd-{c}" for a, b, c in itertools.product("lh", repeat=3)]


def release_mask_folders(subset: str, count: int) -> list[tuple[str, int, bool]]:
    names = sorted(f"devil_{p}" for p in RELEASE_PRESETS if subset == "all" or subset in p.split("_"))
    masks = [f"{n}_{i:05d}" for n in names for i in range(1000)]
    rs = np.random.RandomState(0)
    rs.shuffle(masks)
    flags = rs.randint(2, size=len(masks), dtype=bool)
    return [(m[len("devil_"):-6], int(m[-5:]), bool(f)) for m, f in zip(masks[:count], flags[:count])]


def release_folders(table: "pd.DataFrame", per_slice: int = 150, tail: int | None = None, *,
                    as_written: bool = False) -> dict[str, list[tuple]]:
    """{slice: [(clip, preset, index, reversed) for folder 00000, 00001, ...]} by the release's procedure.

    ``as_written``: the release's two sorts exactly as src/main/create_devil_video_lists.py writes them,
    ``df_sorted = df.sort_values(score)`` then ``df_sorted[-N:].sort_values(score, ascending=False)`` (pandas'
    default quicksort, so the order among equal scores is numpy's introsort's: use it on tables without ties).
    Otherwise the same rule with ties made explicit: equal scores by clip name (ascending in the low tail,
    descending in the high one). Either way NaN sorts last in both sorts, so in the high tail the NaN clips come
    after every scored clip, in name order (the release's order inside the high tail).
    """
    table = table.sort_values("clip", kind="stable").reset_index(drop=True)
    k = math.floor(0.16 * len(table)) if tail is None else tail
    videos = {}
    names = table["clip"].tolist()
    np.random.RandomState(0).shuffle(names)
    videos["all"] = names[:per_slice]
    for col, prefix in (("cm", "cm"), ("bsm", "bsm")):
        if as_written:
            ranked = table.sort_values(col)
            low, high = ranked[:k], ranked[-k:].sort_values(col, ascending=False)
        else:
            ranked = table.sort_values(col, kind="stable", na_position="last")
            end = ranked[-k:] if k else ranked[:0]
            low, high = ranked[:k], pd.concat([end[end[col].notna()].iloc[::-1], end[end[col].isna()]])
        for level, cands in (("l", low), ("h", high)):
            cands = cands.assign(round=cands.groupby("source").cumcount())
            chosen = cands.sort_values("round", kind="stable").head(per_slice)
            videos[f"{prefix}-{level}"] = sorted(chosen["clip"].tolist())
    out = {}
    for name, (vsub, msub) in RELEASE_SLICES.items():
        vids = videos[vsub]
        out[name] = [(v, *m) for v, m in zip(vids, release_mask_folders(msub, len(vids)))]
    return out


def synthetic_table(seed: int, clips: int = 1250, sources: int = 240) -> "pd.DataFrame":
    """Continuous scores with +inf ties (failed alignments) and NaN (no low-camera-motion segment)."""
    rng = np.random.default_rng(seed)
    src = np.concatenate([np.arange(sources), rng.integers(0, sources, clips - sources)])
    rng.shuffle(src)
    counter: dict[int, int] = {}
    ids = []
    for s in src:
        counter[s] = counter.get(s, -1) + 1
        ids.append(f"user{s:03d}-vid-{counter[s]:05d}")
    cm = rng.random(clips) ** 2
    cm[rng.choice(clips, 60, replace=False)] = np.inf
    cm[rng.choice(clips, 5, replace=False)] = np.nan
    bsm = rng.gamma(2.0, 3.0, clips)
    bsm[rng.choice(clips, 120, replace=False)] = np.nan
    bsm[rng.choice(clips, 10, replace=False)] = np.inf
    return pd.DataFrame({"clip": ids, "source": [f"user{s:03d}-vid" for s in src], "cm": cm, "bsm": bsm})


def ours(table, **kw) -> dict[str, list[tuple]]:
    """Rows of every slice by ``plan_slices`` from a table (a DataFrame or a list of (clip, source, cm, bsm))."""
    records = table if isinstance(table, list) else list(table[["clip", "source", "cm", "bsm"]].itertuples(index=False))
    clips = [ClipInfo(c, s, 90, camera_motion_score=float(cm), bg_scene_motion_score=float(bsm))
             for c, s, cm, bsm in records]
    plan = plan_slices(clips, **kw)
    for pairs in plan.pairs.values():
        assert [p.release_index for p in pairs] == list(range(len(pairs)))
    return {name: [(p.clip.clip_id, p.mask.preset, p.mask.index, p.mask.reversed) for p in pairs]
            for name, pairs in plan.pairs.items()}


@needs_pandas
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_slice_equals_release_folders_00000_to_00149(seed):
    table = synthetic_table(seed)
    assert np.isinf(table["cm"]).sum() >= 55 and table["bsm"].isna().sum() >= 100
    expected = release_folders(table)
    got = ours(table.sample(frac=1.0, random_state=seed))  # input order must not matter
    assert set(got) == set(expected)
    for name in expected:
        assert len(got[name]) == 150
        assert got[name] == expected[name], name
    # NaN clips reach the high bsm tail (k = 200 of 1,250 clips holds all ~120), but as its last candidates: they
    # are chosen only as the first clip of a source not yet taken (68-72 chosen; 104-108 when they came first)
    nan_clips = set(table.loc[table["bsm"].isna(), "clip"])
    assert 50 < len({row[0] for row in got["bg_scene_motion_high"]} & nan_clips) < 100


def nan_scenario_table(seed: int) -> "pd.DataFrame":
    """A full-size scenario: 1,250 clips over 240 sources, continuous scores (no ties), 40 NaN background-scene-motion
    scores and 10 NaN camera-motion scores."""
    table = synthetic_table(seed)
    rng = np.random.default_rng(100 + seed)
    cm, bsm = rng.random(len(table)), rng.gamma(2.0, 3.0, len(table))
    cm[rng.choice(len(table), 10, replace=False)] = np.nan
    bsm[rng.choice(len(table), 40, replace=False)] = np.nan
    return table.assign(cm=cm, bsm=bsm)


@needs_pandas
@pytest.mark.parametrize("seed", [0, 1])
def test_nan_scenario_matches_the_release_code_as_written_row_for_row(seed):
    table = nan_scenario_table(seed)
    expected = release_folders(table, as_written=True)
    got = ours(table)
    for name in expected:
        assert got[name] == expected[name], name
    # the bsm high tail (200 clips) holds the 40 NaN clips as its last candidates: the 160 scored ones fill it first
    nan_clips = set(table.loc[table["bsm"].isna(), "clip"])
    chosen = {row[0] for row in got["bg_scene_motion_high"]}
    assert len(chosen & nan_clips) < 40
    # NaN first (the rule before this fix) would pick other clips: the scenario tells the two rules apart
    first = table.assign(bsm=table["bsm"].fillna(np.inf))
    assert {row[0] for row in ours(first)["bg_scene_motion_high"]} != chosen


@needs_pandas
def test_corrected_rank_mode_differs_only_where_nan_matters():
    table = synthetic_table(0)
    release, corrected = ours(table), ours(table, rank_mode="corrected")
    nan_clips = set(table.loc[table["bsm"].isna(), "clip"])
    assert not {row[0] for row in corrected["bg_scene_motion_high"]} & nan_clips
    assert corrected["all"] == release["all"] and corrected["fg_size_low"] == release["fg_size_low"]


# Pinned: computed once by ``release_folders(<pinned_records() as a DataFrame>, per_slice=4, tail=6)`` (the release's
# rules on a fixed 25-clip table; a tail of 6 > 4 videos per slice, so the order inside the high tail decides which
# clips are chosen: the bsm high tail holds 2 scored clips and 4 NaN ones, the cm one 3 +inf, 2 scored, 1 NaN).
# Guards pairing parity in a bare checkout, independent of pandas.
PINNED_FOLDERS = {
    'all': [
        ['u1-v-00001', 'fgs-h_fgm-l_fgd-l', 69, False], ['u0-v-00002', 'fgs-h_fgm-h_fgd-l', 675, True],
        ['u5-v-00000', 'fgs-l_fgm-l_fgd-h', 385, True], ['u4-v-00000', 'fgs-h_fgm-h_fgd-h', 543, False],
    ],
    'fg_displacement_low': [
        ['u1-v-00001', 'fgs-l_fgm-h_fgd-l', 230, True], ['u0-v-00002', 'fgs-h_fgm-h_fgd-l', 668, True],
        ['u5-v-00000', 'fgs-l_fgm-l_fgd-l', 616, False], ['u4-v-00000', 'fgs-l_fgm-h_fgd-l', 363, True],
    ],
    'fg_displacement_high': [
        ['u1-v-00001', 'fgs-l_fgm-h_fgd-h', 230, True], ['u0-v-00002', 'fgs-h_fgm-h_fgd-h', 668, True],
        ['u5-v-00000', 'fgs-l_fgm-l_fgd-h', 616, False], ['u4-v-00000', 'fgs-l_fgm-h_fgd-h', 363, True],
    ],
    'fg_motion_low': [
        ['u1-v-00001', 'fgs-l_fgm-l_fgd-h', 230, True], ['u0-v-00002', 'fgs-h_fgm-l_fgd-h', 668, True],
        ['u5-v-00000', 'fgs-l_fgm-l_fgd-l', 616, False], ['u4-v-00000', 'fgs-l_fgm-l_fgd-h', 363, True],
    ],
    'fg_motion_high': [
        ['u1-v-00001', 'fgs-l_fgm-h_fgd-h', 230, True], ['u0-v-00002', 'fgs-h_fgm-h_fgd-h', 668, True],
        ['u5-v-00000', 'fgs-l_fgm-h_fgd-l', 616, False], ['u4-v-00000', 'fgs-l_fgm-h_fgd-h', 363, True],
    ],
    'fg_size_low': [
        ['u1-v-00001', 'fgs-l_fgm-l_fgd-h', 230, True], ['u0-v-00002', 'fgs-l_fgm-h_fgd-h', 668, True],
        ['u5-v-00000', 'fgs-l_fgm-l_fgd-l', 616, False], ['u4-v-00000', 'fgs-l_fgm-l_fgd-h', 363, True],
    ],
    'fg_size_high': [
        ['u1-v-00001', 'fgs-h_fgm-l_fgd-h', 230, True], ['u0-v-00002', 'fgs-h_fgm-h_fgd-h', 668, True],
        ['u5-v-00000', 'fgs-h_fgm-l_fgd-l', 616, False], ['u4-v-00000', 'fgs-h_fgm-l_fgd-h', 363, True],
    ],
    'bg_scene_motion_low': [
        ['u0-v-00003', 'fgs-h_fgm-l_fgd-l', 69, False], ['u1-v-00001', 'fgs-h_fgm-h_fgd-l', 675, True],
        ['u2-v-00000', 'fgs-l_fgm-l_fgd-h', 385, True], ['u5-v-00001', 'fgs-h_fgm-h_fgd-h', 543, False],
    ],
    'bg_scene_motion_high': [
        ['u0-v-00001', 'fgs-h_fgm-l_fgd-l', 69, False], ['u1-v-00000', 'fgs-h_fgm-h_fgd-l', 675, True],
        ['u3-v-00001', 'fgs-l_fgm-l_fgd-h', 385, True], ['u5-v-00000', 'fgs-h_fgm-h_fgd-h', 543, False],
    ],
    'camera_motion_low': [
        ['u2-v-00000', 'fgs-h_fgm-l_fgd-l', 69, False], ['u4-v-00002', 'fgs-h_fgm-h_fgd-l', 675, True],
        ['u5-v-00000', 'fgs-l_fgm-l_fgd-h', 385, True], ['u6-v-00001', 'fgs-h_fgm-h_fgd-h', 543, False],
    ],
    'camera_motion_high': [
        ['u0-v-00002', 'fgs-h_fgm-l_fgd-l', 69, False], ['u1-v-00000', 'fgs-h_fgm-h_fgd-l', 675, True],
        ['u3-v-00002', 'fgs-l_fgm-l_fgd-h', 385, True], ['u4-v-00000', 'fgs-h_fgm-h_fgd-h', 543, False],
    ],
}


def pinned_records() -> list[tuple[str, str, float, float]]:
    inf, nan = math.inf, math.nan
    cm = [0.31, inf, 0.02, 0.5, inf, 0.02, 0.77, nan, 0.11, 0.9, 0.45, 0.02, 0.6,
          0.08, inf, 0.33, 0.2, 0.95, 0.01, 0.4, 0.7, 0.15, 0.85, 0.05, 0.66]
    bsm = [3.2, nan, 0.4, 7.7, 1.1, nan, 2.2, 9.0, 0.4, 5.5, nan, 6.1, 0.9,
           4.4, 8.8, 0.4, 2.9, 3.3, 1.7, 6.6, nan, 0.2, 7.1, 5.0, 2.5]
    sources = [f"u{i % 7}-v" for i in range(25)]
    ids = [f"u{i % 7}-v-{i // 7:05d}" for i in range(25)]
    return list(zip(ids, sources, cm, bsm))


def test_pinned_pairing_table():
    got = ours(pinned_records(), sizes=SliceSizes(tail=6, per_slice=4))
    assert got == {k: [tuple(r) for r in v] for k, v in PINNED_FOLDERS.items()}
    # the high tails' NaN clips are their last candidates: u0-v-00001 (NaN cm) is not chosen for camera_motion_high,
    # and bg_scene_motion_high takes the top scored clip (u0-v-00001, 9.0) before the NaN ones
    assert "u0-v-00001" not in {r[0] for r in got["camera_motion_high"]}
    assert "u0-v-00001" in {r[0] for r in got["bg_scene_motion_high"]}


@needs_pandas
def test_pinned_table_is_the_release_reference():
    table = pd.DataFrame(pinned_records(), columns=["clip", "source", "cm", "bsm"])
    assert release_folders(table, per_slice=4, tail=6) == ours(pinned_records(), sizes=SliceSizes(tail=6, per_slice=4))
