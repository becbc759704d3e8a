"""Groups (release rule from 150 items, tertiles below), the attribute table's files, and the comparison's
statistics and confounding flag on hand-made tables."""
from __future__ import annotations

import math

import numpy as np
import pytest

from devil_dataset.core.errors import DevilError
from devil_dataset.diagnosis import AttributeRow, AttributeTable, assign_groups, compare_groups, rank_groups
from devil_dataset.diagnosis.attribute_table import read_attribute_table, write_attribute_table
from devil_dataset.diagnosis.compare import attribute_correlations
from devil_dataset.eval.stats import holm, unpaired_test


def test_release_rule_from_150_items_tertiles_below():
    groups, rule = rank_groups({i: float(i) for i in range(200)})
    assert rule.name == "release" and rule.per_group == 32  # floor(0.16 * 200)
    assert sorted(k for k, g in groups.items() if g == "low") == list(range(32))
    assert sorted(k for k, g in groups.items() if g == "high") == list(range(168, 200))
    groups, rule = rank_groups({i: float(i) for i in range(149)})
    assert rule.name == "tertiles" and rule.per_group == 49
    groups, _ = rank_groups({"a": math.nan, "b": math.inf, "c": 0.0, "d": 0.5})
    assert groups == {"b": "high", "c": "low"}  # NaN in no group, +inf highest


def _table(n: int = 30, seed: int = 0) -> AttributeTable:
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        size = float(rng.random())
        rows.append(AttributeRow(f"clip{i:02d}", f"mask{i:02d}", {
            "camera_motion": float(rng.random()), "bg_scene_motion": float(rng.random()) if i else math.nan,
            "fg_size": size, "fg_displacement": float(rng.random()), "fg_motion": 1 - size + 0.05 * float(rng.random()),
        }))
    return assign_groups(AttributeTable(rows))


def test_table_files_round_trip(tmp_path):
    table = _table()
    write_attribute_table(tmp_path, table)
    for name in ("attributes.tsv", "attributes.json"):
        back = read_attribute_table(tmp_path / name)
        assert [(r.key, r.groups) for r in back.rows] == [(r.key, r.groups) for r in table.rows]
        for a, b in zip(back.rows, table.rows):
            pairs = zip(a.scores.values(), b.scores.values())
            assert all(x == y or (math.isnan(x) and math.isnan(y)) for x, y in pairs)
    (tmp_path / "bad.tsv").write_text("clip_id\tmask_id\tfg_size_group\nc\tm\tmiddle\n")
    with pytest.raises(DevilError, match="bad.tsv: line 2"):
        read_attribute_table(tmp_path / "bad.tsv")


def test_comparison_statistics_and_confounding():
    table = _table()
    # a method that fails on large holes: PSNR = 40 - 20 * size
    values = {r.key: {"psnr": 40.0 - 20.0 * r.scores["fg_size"]} for r in table.rows}
    found = {(f.attribute): f for f in compare_groups(table, {"m": values})}
    size = found["fg_size"]
    low = [values[r.key]["psnr"] for r in table.rows if r.groups["fg_size"] == "low"]
    high = [values[r.key]["psnr"] for r in table.rows if r.groups["fg_size"] == "high"]
    assert size.low["mean"] == pytest.approx(np.mean(low)) and size.high["mean"] == pytest.approx(np.mean(high))
    assert size.p == unpaired_test(high, low) and size.worse == "high" and size.significant
    family = [found[a].p for a in found]
    assert [found[a].p_holm for a in found] == holm(family)
    # fg_motion is built as 1 - fg_size: both findings flag the other attribute
    assert "fg_motion" in size.confounders and "fg_size" in found["fg_motion"].confounders
    assert "fg_displacement" not in size.confounders
    assert attribute_correlations(table)["fg_size"]["fg_motion"] < -0.9


def test_attribute_without_spread_separates_nothing_and_is_not_tested(tmp_path):
    """Four videos whose masks are the same ellipse (fg_size equal to the 4th significant figure):
    fg_size gets no groups, the rule and the headline say it does not separate the set, and nothing is tested."""
    from devil_dataset.diagnosis.report import headline

    sizes = [0.100121, 0.100134, 0.100187, 0.100209]
    rows = [AttributeRow(f"v{i}", f"v{i}", {"camera_motion": 0.1 * i, "bg_scene_motion": 0.5 * i, "fg_size": s,
                                            "fg_displacement": 0.01 * (i + 1), "fg_motion": 0.1 * (i + 1)})
            for i, s in enumerate(sizes)]
    table = assign_groups(AttributeTable(rows))
    assert {r.groups["fg_size"] for r in table.rows} == {""}
    assert table.unseparated == {"fg_size": "the groups differ by 0.09% (median 0.10012 vs 0.10021), below the 5% "
                                            "that separates a set"}
    assert "does not separate this set" in table.rules["fg_size"]
    assert [r.groups["fg_displacement"] for r in table.rows] == ["low", "", "", "high"]  # the others still do
    scores = {"m": {r.key: {"psnr": 30.0 + i} for i, r in enumerate(table.rows)}}
    found = compare_groups(table, scores)
    assert "fg_size" not in {f.attribute for f in found} and "fg_displacement" in {f.attribute for f in found}
    [line] = headline(found, ["m"], table.unseparated)
    assert line.endswith("fg_size does not separate this set (scores too close to form groups; not tested).")
    write_attribute_table(tmp_path, table)
    assert read_attribute_table(tmp_path).unseparated == table.unseparated
