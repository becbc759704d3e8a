"""The network metrics depend on their inputs only: not on the batch size, the torch thread count or the
number of engine workers. LPIPS, FID, PVCS and VFID with seeded random weights planted in a private weights cache
(the real loading path), three 11-frame videos at 64x48; the values are compared as written (the provenance
records the batch size, which is the point)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch

from devil_dataset.core.engines import get_engine
from devil_dataset.core.release_format import write_frame_pngs
from devil_dataset.eval.metrics.metric import EvalOptions
from devil_dataset.eval.scoring.evaluate import evaluate_slice
from devil_dataset.eval.scoring.results import dumps

PROBE_DIR = Path(__file__).resolve().parents[2] / "core"
METRICS = ["lpips", "fid", "pvcs", "vfid"]


@pytest.fixture(scope="module")
def network_inputs(tmp_path_factory) -> tuple[list[dict], Path]:
    """(dataset rows, prediction folder) of the determinism probe's three videos."""
    sys.path.insert(0, str(PROBE_DIR))
    try:
        from determinism_probe import network_videos
    finally:
        sys.path.remove(str(PROBE_DIR))
    preds = tmp_path_factory.mktemp("preds") / "method"
    rows = []
    for clip_id, gt, pred, hole in network_videos():
        write_frame_pngs(pred, preds / clip_id, "pred")
        rows.append({"clip_id": clip_id, "frames": gt, "hole": hole, "num_frames": len(gt), "height": gt.shape[1],
                     "width": gt.shape[2]})
    return rows, preds


@pytest.fixture(scope="module")
def random_weights(tmp_path_factory) -> Path:
    sys.path.insert(0, str(PROBE_DIR))
    try:
        from determinism_probe import plant_random_weights
    finally:
        sys.path.remove(str(PROBE_DIR))
    directory = tmp_path_factory.mktemp("weights")
    plant_random_weights(directory)
    return directory


def _scored(network_inputs, batch_size: int, threads: int, jobs: int = 1) -> str:
    rows, preds = network_inputs
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        docs = evaluate_slice("probe", "all", [preds], METRICS, EvalOptions(batch_size=batch_size), progress=False,
                              rows=rows, engine=get_engine("local", jobs=jobs))
    finally:
        torch.set_num_threads(before)
    doc = docs["method"]
    assert all(doc["summary"][k] == doc["summary"][k] for k in ("lpips", "fid", "pvcs", "vfid"))  # not NaN
    return dumps({k: doc[k] for k in ("summary", "videos", "uncertainty", "clipped")})  # the values, as written


@pytest.mark.filterwarnings("ignore:Matrix is singular")  # VFID of three videos: a rank-deficient covariance
def test_network_values_do_not_depend_on_batch_size_threads_or_workers(network_inputs, random_weights, monkeypatch):
    """Batch 8 on two threads in one process, and batch 1 on one thread in two worker processes (parts merged): the
    same values, bit for bit. Before the fixed arithmetic, FID moved in the 7th digit with the batch size, LPIPS with
    the thread count, and the merged statistics with the partition. (Each factor alone is covered by the joint change:
    the Frechet distances cost seconds each, so the test scores twice, not four times.)"""
    monkeypatch.setenv("DEVIL_WEIGHTS_DIR", str(random_weights))
    monkeypatch.setenv("DEVIL_WEIGHTS_ALLOW_UNVERIFIED", "1")
    one_process = json.loads(_scored(network_inputs, batch_size=8, threads=2))
    workers = json.loads(_scored(network_inputs, batch_size=1, threads=1, jobs=2))
    # exact: the residual (the read-ahead thread's products on two OpenBLAS threads, core/blas_threads) is gone
    assert one_process == workers
