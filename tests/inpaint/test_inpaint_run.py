"""run_inpainter: the release's prediction layout, atomic per clip, resume, limit, validation; the prediction
folder and its manifest (PredictionFolder), writing and hard-linking a clip's predictions."""
import numpy as np
import pytest

from devil_dataset.core.errors import DevilError
from devil_dataset.core.release_format import read_frame_pngs, write_frame_pngs, write_mask_pngs
from devil_dataset.inpaint import get_inpainter
from devil_dataset.inpaint.run import (
    MANIFEST_NAME,
    PredictionFolder,
    clip_complete,
    dataset_run_info,
    hole_fingerprint,
    iter_release_inputs,
    link_prediction,
    run_inpainter,
    write_prediction,
)


def _rows(n=3, t=4, h=24, w=32):
    rng = np.random.default_rng(2)
    rows = []
    for i in range(n):
        hole = np.zeros((t, h, w), bool)
        hole[:, 6:14, 4 + 2 * i : 14 + 2 * i] = True
        frames = rng.integers(0, 256, (t, h, w, 3), dtype=np.uint8)
        rows.append({"clip_id": f"clip{i:02d}", "frames": frames, "hole": hole})
    return rows


class _Counting:
    def __init__(self):
        self.calls = []

    def __call__(self, frames, hole):
        self.calls.append(frames.shape)
        return get_inpainter("telea")(frames, hole)


def test_layout_and_contents(tmp_path):
    rows = _rows()
    summary = run_inpainter(get_inpainter("telea"), rows, tmp_path, progress=False)
    assert summary.written == ["clip00", "clip01", "clip02"] and summary.skipped == []
    assert sorted(p.name for p in tmp_path.iterdir()) == [MANIFEST_NAME, "clip00", "clip01", "clip02"]
    assert sorted(p.name for p in (tmp_path / "clip01").iterdir()) == [f"frame_{i:04d}_pred.png" for i in range(4)]
    expected = get_inpainter("telea")(rows[1]["frames"], rows[1]["hole"])
    assert np.array_equal(read_frame_pngs(tmp_path / "clip01", "pred"), expected)


def test_resume_skips_complete_and_redoes_incomplete(tmp_path):
    rows = _rows()
    run_inpainter(get_inpainter("telea"), rows[:2], tmp_path, progress=False)
    (tmp_path / "clip01" / "frame_0003_pred.png").unlink()  # an incomplete clip (e.g. edited by hand)
    (tmp_path / ".tmp-clip02.abc").mkdir()  # leftover of an interrupted atomic write
    counting = _Counting()
    summary = run_inpainter(counting, rows, tmp_path, progress=False)
    assert summary.skipped == ["clip00"] and summary.written == ["clip01", "clip02"]
    assert len(counting.calls) == 2
    assert clip_complete(tmp_path / "clip01", 4) and not (tmp_path / ".tmp-clip02.abc").exists()
    again = _Counting()
    assert run_inpainter(again, rows, tmp_path, progress=False).skipped == ["clip00", "clip01", "clip02"]
    assert again.calls == []


def test_manifest_guards_against_mixing_runs_and_masks(tmp_path):
    rows = _rows(2)
    info = {"method": "telea", "config": "fg_size_high"}
    run_inpainter(get_inpainter("telea"), rows, tmp_path, progress=False, run_info=info)
    with pytest.raises(DevilError, match="holds predictions of another run"):
        run_inpainter(get_inpainter("telea"), rows, tmp_path, progress=False, run_info=dict(info, config="fg_size_low"))
    # the same clip id with another mask (as in another slice) is redone, not skipped
    changed = [dict(rows[0]), rows[1]]
    changed[0]["hole"] = np.roll(rows[0]["hole"], 3, axis=2)
    summary = run_inpainter(get_inpainter("telea"), changed, tmp_path, progress=False, run_info=info)
    assert summary.written == ["clip00"] and summary.skipped == ["clip01"]
    expected = get_inpainter("telea")(changed[0]["frames"], changed[0]["hole"])
    assert np.array_equal(read_frame_pngs(tmp_path / "clip00", "pred"), expected)
    assert hole_fingerprint(changed[0]["hole"]) != hole_fingerprint(rows[0]["hole"])
    (tmp_path / MANIFEST_NAME).write_text("{broken")
    with pytest.raises(DevilError, match="unreadable"):
        run_inpainter(get_inpainter("telea"), rows, tmp_path, progress=False, run_info=info)


def test_limit_takes_first_rows(tmp_path):
    summary = run_inpainter(get_inpainter("telea"), iter(_rows()), tmp_path, limit=2, progress=False)
    assert summary.written == ["clip00", "clip01"] and not (tmp_path / "clip02").exists()


def test_failure_leaves_no_partial_clip(tmp_path):
    rows = _rows()

    def bad(frames, hole):
        if frames is rows[1]["frames"]:
            raise DevilError("model exploded")
        return frames

    with pytest.raises(DevilError, match="^clip clip01: model exploded$"):
        run_inpainter(bad, rows, tmp_path, progress=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == [MANIFEST_NAME, "clip00"]


@pytest.mark.parametrize(
    "result, message",
    [
        (lambda f, h: f[:, :-1],
         r"clip clip00: the inpainter returned shape \(4, 23, 32, 3\), expected \(4, 24, 32, 3\)"),
        (lambda f, h: f.astype(np.float32) / 255, "clip clip00: the inpainter returned float32 frames, expected uint8"),
    ],
)
def test_bad_predictions_are_rejected(tmp_path, result, message):
    with pytest.raises(DevilError, match=message):
        run_inpainter(result, _rows(1), tmp_path, progress=False)
    assert not (tmp_path / "clip00").exists()


@pytest.mark.parametrize("clip_id", ["../evil", "a/b", ".hidden", ""])
def test_unsafe_clip_ids_are_rejected(tmp_path, clip_id):
    row = dict(_rows(1)[0], clip_id=clip_id)
    with pytest.raises(DevilError, match="not usable as a folder name"):
        run_inpainter(get_inpainter("telea"), [row], tmp_path, progress=False)


def test_iter_release_inputs_single_folder_and_folder_of_clips(tmp_path):
    rows = _rows(2)
    for row in rows:
        write_frame_pngs(row["frames"], tmp_path / "set" / row["clip_id"], "gt")
        write_mask_pngs(row["hole"], tmp_path / "set" / row["clip_id"])
    got = list(iter_release_inputs(tmp_path / "set"))
    assert [r["clip_id"] for r in got] == ["clip00", "clip01"]
    assert np.array_equal(got[1]["frames"], rows[1]["frames"]) and np.array_equal(got[1]["hole"], rows[1]["hole"])
    single = list(iter_release_inputs(tmp_path / "set" / "clip01"))
    assert [r["clip_id"] for r in single] == ["clip01"]
    with pytest.raises(DevilError, match="no frame_%04d_gt.png"):
        list(iter_release_inputs(tmp_path))


def test_prediction_folder_records_resumes_and_refuses_another_run(tmp_path):
    import json

    rows = _rows(2)
    info = dataset_run_info("telea", "dataset", "fg_size_high")
    folder = PredictionFolder(tmp_path / "p", info)
    (folder.path / ".tmp-clip00.x").mkdir()
    fp = hole_fingerprint(rows[0]["hole"])
    assert not folder.holds("clip00", fp, 4)
    pred = get_inpainter("telea")(rows[0]["frames"], rows[0]["hole"])
    write_prediction(folder.path / "clip00", pred)
    assert not folder.holds("clip00", fp, 4)  # written but not recorded
    folder.record("clip00", fp)
    assert folder.holds("clip00", fp, 4) and not folder.holds("clip00", "other-hole", 4)
    assert not folder.holds("clip00", fp, 5)
    manifest = json.loads((folder.path / MANIFEST_NAME).read_text())
    assert manifest == {"format": "devil-inpaint-manifest", "run": info, "clips": {"clip00": fp}}
    again = PredictionFolder(tmp_path / "p", dict(info))  # the same run resumes
    assert again.clips == {"clip00": fp} and not list(folder.path.glob(".tmp-*"))
    # run_inpainter with the same run sees the clip as done
    summary = run_inpainter(get_inpainter("telea"), rows, folder.path, progress=False, run_info=info)
    assert summary.skipped == ["clip00"] and summary.written == ["clip01"]
    with pytest.raises(DevilError, match=r"holds predictions of another run .*fg_size_high.*delete .*devil-inpaint"):
        PredictionFolder(folder.path, dataset_run_info("telea", "dataset", "fg_size_low"))
    assert folder.holds("clip00", fp, 4)  # nothing deleted
    (folder.path / MANIFEST_NAME).write_text("{broken")
    with pytest.raises(DevilError, match="unreadable"):
        PredictionFolder(folder.path, info)


def test_link_prediction_shares_the_files(tmp_path):
    rows = _rows(1)
    pred = get_inpainter("telea")(rows[0]["frames"], rows[0]["hole"])
    write_prediction(tmp_path / "a" / "clip00", pred)
    link_prediction(tmp_path / "a" / "clip00", tmp_path / "b" / "clip00")
    for f in (tmp_path / "a" / "clip00").iterdir():
        assert (tmp_path / "b" / "clip00" / f.name).stat().st_ino == f.stat().st_ino  # hard links, not copies
    assert np.array_equal(read_frame_pngs(tmp_path / "b" / "clip00", "pred"), pred)


def test_a_failed_run_leaves_no_empty_prediction_folder(tmp_path):
    def no_rows():
        raise DevilError("unknown config 'fg_sze_low'")
        yield  # a generator, like iter_slice

    with pytest.raises(DevilError, match="fg_sze_low"):
        run_inpainter(get_inpainter("telea"), no_rows(), tmp_path / "preds" / "telea", progress=False)
    assert not (tmp_path / "preds").exists()  # both folders were made by this run and are removed again

    def fails_on_second(frames, hole):
        if fails_on_second.calls:
            raise DevilError("model crashed")
        fails_on_second.calls += 1
        return frames
    fails_on_second.calls = 0
    with pytest.raises(DevilError, match="model crashed"):
        run_inpainter(fails_on_second, _rows(), tmp_path / "kept", progress=False)
    assert sorted(p.name for p in (tmp_path / "kept").iterdir()) == [".devil-inpaint.json", "clip00"]  # work kept


def test_a_method_reading_the_masks_inverted_gets_a_warning(tmp_path, capsys):
    """A prediction that changed known pixels gets the package's inverted-mask warning, saying the method wrote
    outside the hole; a baseline (known pixels kept) does not."""
    import numpy as np

    from devil_dataset.inpaint import get_inpainter
    from devil_dataset.inpaint.run import run_inpainter

    rng = np.random.default_rng(0)
    frames = rng.integers(0, 256, (2, 32, 32, 3), dtype=np.uint8)
    hole = np.zeros((2, 32, 32), bool)
    hole[:, 8:16, 8:16] = True
    rows = [{"clip_id": "a", "frames": frames, "hole": hole}]
    telea = get_inpainter("telea")
    summary = run_inpainter(telea, rows, tmp_path / "ok", progress=False)
    assert summary.outside_hole == {} and "warning" not in capsys.readouterr().err

    def inverted(f, h):
        return telea(f, ~h)  # a user script that read white = hole from release PNGs (white = known)

    summary = run_inpainter(inverted, rows, tmp_path / "bad", progress=False)
    assert summary.outside_hole["a"] > 0.5 and summary.written == ["a"]
    err = capsys.readouterr().err
    assert "devil inpaint: warning: were the masks read inverted? your method wrote outside the hole: 1 of 1 " \
           "video (a: the output differs from the ground truth on " in err
