"""One pass: several methods over the ground truth at once, and parts scored by an engine's workers, merged."""
from __future__ import annotations

import pytest

from devil_dataset.core.engines import get_engine
from devil_dataset.core.errors import DevilError
from devil_dataset.core.release_format import write_frame_pngs
from devil_dataset.eval.evaluate import evaluate_dataset, evaluate_slice
from devil_dataset.eval.protocol import EvalOptions

METRICS = ["psnr", "ssim", "pcons", "warp_error"]


def _rows(samples):
    return [{"clip_id": s.clip_id, "frames": s.gt, "hole": s.hole, "num_frames": s.num_frames,
             "height": s.gt.shape[1], "width": s.gt.shape[2]} for s in samples]


@pytest.fixture
def three_methods(eval_samples, tmp_path):
    """Three prediction folders: the noisy prediction, its negative, and the ground truth itself (PSNR inf)."""
    dirs = {}
    for name, make in (("noisy", lambda s: s.pred), ("negative", lambda s: 255 - s.pred), ("perfect", lambda s: s.gt)):
        for s in eval_samples:
            write_frame_pngs(make(s), tmp_path / name / s.clip_id, "pred")
        dirs[name] = tmp_path / name
    return dirs


def test_three_methods_in_one_pass_equal_three_separate_runs(eval_samples, three_methods):
    opts = EvalOptions(flow="dis")
    together = evaluate_slice("tiny", "all", list(three_methods.values()), METRICS, opts, progress=False,
                              rows=_rows(eval_samples))
    assert list(together) == ["noisy", "negative", "perfect"]
    for name, folder in three_methods.items():
        alone = evaluate_dataset("tiny", "all", folder, METRICS, opts, progress=False, rows=_rows(eval_samples))
        assert together[name] == alone
    assert together["perfect"]["clipped"]["psnr"] == [s.clip_id for s in eval_samples]
    assert together["negative"]["summary"]["psnr"] < together["noisy"]["summary"]["psnr"]


def test_two_workers_equal_one_process(eval_samples, three_methods):
    """Two parts scored in the local engine's workers, merged: the documents of the in-process pass; a second
    evaluation in the same workers (kept for the command) gives them again."""
    opts = EvalOptions(flow="dis")
    preds = {k: three_methods[k] for k in ("noisy", "perfect")}
    one = evaluate_slice("tiny", "all", preds, METRICS, opts, progress=False, rows=_rows(eval_samples))
    two = evaluate_slice("tiny", "all", preds, METRICS, opts, engine=get_engine("local", jobs=2), progress=False,
                         rows=_rows(eval_samples))
    again = evaluate_slice("tiny", "all", preds, METRICS, opts, engine=get_engine("local", jobs=2), progress=False,
                           rows=_rows(eval_samples))
    assert one == two == again


def test_bad_arguments(eval_samples, three_methods, tmp_path):
    with pytest.raises(DevilError, match="no method"):
        evaluate_slice("tiny", "all", {}, METRICS, rows=_rows(eval_samples))
