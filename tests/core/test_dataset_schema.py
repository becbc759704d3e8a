"""devil_dataset/core/dataset_schema.py: stored holes decode to canonical bools (True is the byte 1)."""
from __future__ import annotations

import numpy as np

from devil_dataset.core.dataset_schema import decode_hole, encode_hole
from devil_dataset.core.mask_stats import mask_stats


def test_decoded_hole_round_trips_with_canonical_bytes():
    rng = np.random.default_rng(3)
    hole = rng.random((3, 24, 40)) < 0.3
    decoded = decode_hole(encode_hole(hole))
    assert decoded.dtype == bool and np.array_equal(decoded, hole)
    # Pillow's mode-"1" arrays hold 255 for True; anything reading the bytes would see 255x the area
    assert set(np.unique(decoded.view(np.uint8)).tolist()) <= {0, 1}
    assert int(decoded.view(np.uint8).sum()) == int(hole.sum())


def test_mask_statistics_of_a_decoded_hole_equal_those_of_the_original():
    hole = np.zeros((6, 48, 64), bool)
    for t in range(6):
        hole[t, 10:30, 4 + 5 * t: 24 + 5 * t] = True
    a, b = mask_stats(hole), mask_stats(decode_hole(encode_hole(hole)))
    assert a == b
