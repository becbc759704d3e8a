"""One pass: several methods over the ground truth at once, and parts scored by an engine's workers, merged."""
from __future__ import annotations

import pytest

from devil_dataset.core.engines import get_engine
from devil_dataset.core.errors import DevilError
from devil_dataset.core.release_format import write_frame_pngs
from devil_dataset.eval.metrics.metric import EvalOptions
from devil_dataset.eval.scoring.evaluate import evaluate_dataset, evaluate_slice
from devil_dataset.eval.scoring.results import dumps

from ..conftest import slice_rows

METRICS = ["psnr", "ssim", "pcons", "warp_error"]


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
                              rows=slice_rows(eval_samples))
    assert list(together) == ["noisy", "negative", "perfect"]
    for name, folder in three_methods.items():
        alone = evaluate_dataset("tiny", "all", folder, METRICS, opts, progress=False, rows=slice_rows(eval_samples))
        assert dumps(together[name]) == dumps(alone)  # as written (NaN: null; 'perfect' has inf values)
    assert together["perfect"]["clipped"]["psnr"] == [s.clip_id for s in eval_samples]
    assert together["negative"]["summary"]["psnr"] < together["noisy"]["summary"]["psnr"]


def test_two_workers_equal_one_process(eval_samples, three_methods):
    """Two parts scored in the local engine's workers, merged: the documents of the in-process pass; a second
    evaluation in the same workers (kept for the command) gives them again."""
    opts = EvalOptions(flow="dis")
    preds = {k: three_methods[k] for k in ("noisy", "perfect")}
    one = evaluate_slice("tiny", "all", preds, METRICS, opts, progress=False, rows=slice_rows(eval_samples))
    two = evaluate_slice("tiny", "all", preds, METRICS, opts, engine=get_engine("local", jobs=2), progress=False,
                         rows=slice_rows(eval_samples))
    again = evaluate_slice("tiny", "all", preds, METRICS, opts, engine=get_engine("local", jobs=2), progress=False,
                           rows=slice_rows(eval_samples))
    written = [{m: dumps(d) for m, d in docs.items()} for docs in (one, two, again)]  # NaN-safe: as written
    assert written[0] == written[1] == written[2]


def test_bad_arguments(eval_samples, three_methods, tmp_path):
    with pytest.raises(DevilError, match="no method"):
        evaluate_slice("tiny", "all", {}, METRICS, rows=slice_rows(eval_samples))


def _slice_rows_with(samples, shift):
    """The samples' rows with the hole moved ``shift`` pixels right: the same clip ids with another slice's masks."""
    import numpy as np

    return [{**r, "hole": np.roll(r["hole"], shift, axis=2)} for r in slice_rows(samples)]


def test_predictions_of_another_slice_are_refused_by_their_manifest(eval_samples, tmp_path):
    """Predictions inpainted for fg_size_high scored as fg_size_low (same clip ids, other masks):
    the folder's .devil-inpaint.json refuses it, naming both slices; the right slice scores."""
    from devil_dataset.inpaint import get_inpainter
    from devil_dataset.inpaint.run import dataset_run_info, run_inpainter

    high, low = slice_rows(eval_samples), _slice_rows_with(eval_samples, 16)
    preds = tmp_path / "telea" / "fg_size_high"
    run_inpainter(get_inpainter("telea"), high, preds, progress=False,
                  run_info=dataset_run_info("telea", "D", "fg_size_high"))
    with pytest.raises(DevilError, match=r"made for slice fg_size_high, not for slice fg_size_low \(the slice being "
                                         r"scored\): its .devil-inpaint.json records other hole masks for 3 of 3"):
        evaluate_dataset("D", "fg_size_low", preds, ["psnr"], progress=False, rows=low)
    doc = evaluate_dataset("D", "fg_size_high", preds, ["psnr"], progress=False, rows=high)
    assert 0 < doc["summary"]["psnr"] < float("inf")


@pytest.mark.parametrize("jobs", [1, 2])
def test_predictions_without_manifest_that_differ_outside_the_hole_warn(eval_samples, tmp_path, capsys, jobs):
    """No manifest: a composited prediction that differs from the GT outside this slice's hole is
    flagged on stderr (and still scored); one made for this slice is not; in one process and with two workers."""
    import numpy as np

    from devil_dataset.core.engines import get_engine

    engine = get_engine("local", jobs=jobs)

    high, low = slice_rows(eval_samples), _slice_rows_with(eval_samples, 16)
    for r in high:
        pred = r["frames"].copy()
        pred[r["hole"]] = 255 - pred[r["hole"]]  # composited: known pixels kept exactly, the hole changed
        write_frame_pngs(pred, tmp_path / "mine" / r["clip_id"], "pred")
    evaluate_dataset("D", "fg_size_high", tmp_path / "mine", ["psnr"], progress=False, rows=high, engine=engine)
    assert "warning" not in capsys.readouterr().err
    doc = evaluate_dataset("D", "fg_size_low", tmp_path / "mine", ["psnr"], progress=False, rows=low, engine=engine)
    err = capsys.readouterr().err
    assert f"devil evaluate: warning: {tmp_path / 'mine'}: the predictions of 3 of 3 clips differ from the ground " \
           "truth outside slice fg_size_low's hole" in err and "were they made for another slice?" in err
    assert np.isfinite(doc["summary"]["psnr"])
