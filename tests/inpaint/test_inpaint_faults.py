"""devil_dataset/inpaint/run.py under faults: a run killed between writing a clip and recording it in
``.devil-inpaint.json`` leaves a manifest that the next run completes (item 12); a method that raises stops
``devil inpaint`` with ``devil: error: clip <id>: ...`` and exit 2, not a traceback (item 7); a changed method's
clips are redone (item 6)."""
from __future__ import annotations

import json
import sys

import numpy as np
import pytest

from devil_dataset.core.release_format import write_frame_pngs, write_mask_pngs
from devil_dataset.inpaint import get_inpainter
from devil_dataset.inpaint.run import MANIFEST_NAME, PredictionFolder, hole_fingerprint, run_inpainter

CLI = "import sys; from devil_dataset.cli import main; sys.exit(main(sys.argv[1:]))"

# A user's method file: copies its input (hole pixels black) and logs each clip it is called for.
USER_METHOD = '''
import os
VERSION = 1

def inpaint(frames, hole):
    with open(os.environ["INPAINT_CALLS"], "a") as log:
        log.write(f"{frames.shape[0]}\\n")
    return frames.copy()

def broken(frames, hole):
    return {}["no such key"]
'''


def _rows(n=4, t=3, h=16, w=20):
    rng = np.random.default_rng(5)
    rows = []
    for i in range(n):
        hole = np.zeros((t, h, w), bool)
        hole[:, 4:9, 3 + i : 9 + i] = True
        rows.append({"clip_id": f"clip{i:02d}", "frames": rng.integers(0, 256, (t, h, w, 3), dtype=np.uint8),
                     "hole": hole})
    return rows


class _Counting:
    def __init__(self):
        self.calls = 0

    def __call__(self, frames, hole):
        self.calls += 1
        return get_inpainter("telea")(frames, hole)


def test_a_clip_written_but_not_recorded_is_recorded_by_the_next_run(tmp_path, monkeypatch):
    """The window a kill -9 can hit: clip02's folder is complete, the manifest is not yet rewritten."""
    rows, out = _rows(), tmp_path / "preds"
    real_record = PredictionFolder.record

    def killed_at_clip02(self, clip_id, fingerprint):
        if clip_id == "clip02":
            raise KeyboardInterrupt  # the process dies here: after the clip folder, before the manifest
        real_record(self, clip_id, fingerprint)

    monkeypatch.setattr(PredictionFolder, "record", killed_at_clip02)
    with pytest.raises(KeyboardInterrupt):
        run_inpainter(get_inpainter("telea"), rows, out, progress=False)
    monkeypatch.setattr(PredictionFolder, "record", real_record)
    assert (out / "clip02").is_dir() and "clip02" not in json.loads((out / MANIFEST_NAME).read_text())["clips"]

    counting = _Counting()
    summary = run_inpainter(counting, rows, out, progress=False)
    assert counting.calls == 1 and summary.written == ["clip03"]  # clip02 was finished: kept, not redone
    clips = json.loads((out / MANIFEST_NAME).read_text())["clips"]
    assert clips == {r["clip_id"]: hole_fingerprint(r["hole"]) for r in rows}

    # a complete folder whose manifest lost an entry: re-running restores it without inpainting anything
    manifest = json.loads((out / MANIFEST_NAME).read_text())
    del manifest["clips"]["clip01"]
    (out / MANIFEST_NAME).write_text(json.dumps(manifest))
    assert run_inpainter(counting, rows, out, progress=False).skipped == [r["clip_id"] for r in rows]
    assert counting.calls == 1 and json.loads((out / MANIFEST_NAME).read_text())["clips"] == clips


@pytest.fixture
def release_inputs(tmp_path):
    """Two clip folders in the release's input layout and the user's method file."""
    for row in _rows(2):
        write_frame_pngs(row["frames"], tmp_path / "inputs" / row["clip_id"], "gt")
        write_mask_pngs(row["hole"], tmp_path / "inputs" / row["clip_id"])
    (tmp_path / "mine.py").write_text(USER_METHOD)
    return tmp_path


def test_a_raising_callable_is_exit_2_naming_the_clip(release_inputs, capsys):
    from devil_dataset.cli import main

    root = release_inputs
    code = main(["inpaint", "--method", "mine", "--inputs", str(root / "inputs"), "--out", str(root / "preds"),
                 "--callable", f"{root / 'mine.py'}:broken"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert "\ndevil: error: clip clip00: the method raised KeyError: 'no such key' (at mine.py:11 in broken)\n" in err
    assert not (root / "preds").exists()  # nothing finished: the folder this run created is removed


def test_devil_inpaint_redoes_the_clips_of_a_changed_method(release_inputs, monkeypatch, capsys):
    from devil_dataset.cli import main

    root = release_inputs
    calls = root / "calls.txt"
    monkeypatch.setenv("INPAINT_CALLS", str(calls))
    argv = ["inpaint", "--method", "mine", "--inputs", str(root / "inputs"), "--out", str(root / "preds"),
            "--callable", f"{root / 'mine.py'}:inpaint"]
    assert main(argv) == 0 and len(calls.read_text().split()) == 2
    assert main(argv) == 0 and len(calls.read_text().split()) == 2  # same code: skipped
    (root / "mine.py").write_text(USER_METHOD.replace("VERSION = 1", "VERSION = 2"))
    sys.modules.pop("mine", None)
    capsys.readouterr()
    assert main(argv) == 0 and len(calls.read_text().split()) == 4
    assert "mine: the method's code changed since 2 clip(s) were made: redone" in capsys.readouterr().err
