"""Mask statistics and presets as text tables (core/mask_tables.py)."""
from __future__ import annotations

from devil_dataset.core.mask_tables import presets_text, stats_text
from devil_dataset.core.masks import PRESETS


def test_stats_text_lists_masks_then_the_summary():
    doc = {"summary": {"p": {"mean_area": {"median": 0.125, "q25": None, "q75": 0.25, "n": 1}}},
           "masks": [{"path": "m/a.npz", "preset": "p", "index": 7, "seed": None,
                      "stats": {"mean_area": 0.123456, "empty_frames": 0}}]}
    assert stats_text(doc).split("\n") == [
        "masks",
        "mask     index  seed  mean_area  empty_frames",
        "m/a.npz      7     -     0.1235             0",
        "",
        "summary (median and quartiles over the masks of each preset)",
        "preset  statistic  median  q25   q75  n",
        "p       mean_area   0.125    -  0.25  1",
    ]


def test_stats_text_names_a_rendered_mask_by_its_preset():
    doc = {"summary": {}, "masks": [{"preset": "p", "index": 0, "seed": 5, "stats": {"x": 1.0}}]}
    assert stats_text(doc).split("\n")[2].split() == ["p", "0", "5", "1"]


def test_presets_text_has_a_row_per_preset_in_table_order():
    lines = presets_text(PRESETS).splitlines()
    assert len(lines) == 1 + len(PRESETS) and lines[0].split()[0] == "preset"
    assert [line.split()[0] for line in lines[1:]] == list(PRESETS)
    assert all(line == line.rstrip() for line in lines)
