"""``benchmarks/prove_floor.py``: the crops its floor process passes are every crop the package plans, and the floor
process computes DINOv2's features."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from devil_dataset.eval.protocols.prove.layout import list_prove_videos, read_prove_video
from devil_dataset.eval.protocols.prove.removal import planned_crops

from .conftest import load_benchmark


@pytest.fixture(scope="module")
def small_set(tmp_path_factory):
    floor = load_benchmark("prove_floor")
    root = tmp_path_factory.mktemp("floor")
    return floor, floor.prove_peers.write_set(root / "set", 2, 4, (160, 96))


def test_network_inputs_are_every_crop_the_package_plans(small_set):
    floor, dirs = small_set
    crops = floor.network_inputs(dirs)
    planned = sum(planned_crops(read_prove_video(v).masks) for v in list_prove_videos(*dirs).videos)
    assert planned > 2  # a moving mask: RC-S's squares and each pair's union square differ
    assert crops.shape == (planned, 448, 448, 3) and crops.dtype == np.uint8
    assert len({c.tobytes() for c in crops}) == planned  # each distinct crop once


def test_floor_process_computes_dinov2_features(small_set, tmp_path):
    pytest.importorskip("transformers")
    from devil_dataset.core.networks.dinov2 import save_random_dinov2

    floor, dirs = small_set
    model = save_random_dinov2(tmp_path / "tiny", hidden_size=16, layers=1, heads=2)
    crops = floor.network_inputs(dirs)[:3]
    np.save(tmp_path / "inputs.npy", crops)
    done = subprocess.run([sys.executable, "-c", floor.FLOOR_DRIVER, str(floor.ROOT), str(model),
                           str(tmp_path / "inputs.npy"), str(tmp_path / "out.npy"), "2"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    features = np.load(tmp_path / "out.npy")
    reference = floor.package_features(model, crops)
    assert features.shape == reference.shape == (3, 32 * 32, 16)
    assert np.abs(features - reference).max() <= 1e-4 * np.abs(reference).max()
