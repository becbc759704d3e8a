"""`devil inpaint`: baselines and external methods over a slice or release-layout folders; resume; errors exit 2."""
import sys

import numpy as np
import pytest

import devil_dataset.data.load
from devil_dataset.cli import main
from devil_dataset.core.release_format import read_frame_pngs, write_frame_pngs, write_mask_pngs
from devil_dataset.inpaint import get_inpainter


def _rows():
    rng = np.random.default_rng(3)
    rows = []
    for i in range(3):
        hole = np.zeros((3, 24, 36), bool)
        hole[:, 5:15, 8 + 3 * i : 20 + 3 * i] = True
        rows.append({"clip_id": f"v{i}", "frames": rng.integers(0, 256, (3, 24, 36, 3), dtype=np.uint8), "hole": hole})
    return rows


@pytest.fixture
def inpaint_cli_slice(monkeypatch):
    """Stand in for a built dataset (``--dataset org/ds``, a Hub repo id, passes the parser's check):
    devil_dataset.data.iter_slice yields generated rows."""
    rows = _rows()
    seen = {}

    def fake_iter_slice(dataset, config, split="test", *, columns=None):
        seen.update(dataset=dataset, config=config, split=split, columns=columns)
        yield from rows

    monkeypatch.setattr(devil_dataset.data.load, "iter_slice", fake_iter_slice)  # read when the command runs
    return rows, seen


def test_dataset_mode_writes_layout_and_resumes(tmp_path, capsys, inpaint_cli_slice):
    rows, seen = inpaint_cli_slice
    out = tmp_path / "preds"
    args = ["inpaint", "--method", "aligned-copy", "--dataset", "org/ds", "--config", "fg_size_high", "--out", str(out)]
    assert main(args + ["--limit", "2"]) == 0
    assert seen["config"] == "fg_size_high" and seen["split"] == "test"
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == ["v0", "v1"]
    assert "wrote 2 clip(s), skipped 0" in capsys.readouterr().out
    assert main(args) == 0
    assert "wrote 1 clip(s), skipped 2" in capsys.readouterr().out
    pred = read_frame_pngs(out / "v2", "pred")
    assert np.array_equal(pred, get_inpainter("aligned-copy")(rows[2]["frames"], rows[2]["hole"]))
    # the same folder for another slice is refused (clip ids repeat across slices with other masks)
    argv = ["inpaint", "--method", "aligned-copy", "--dataset", "org/ds", "--config", "fg_size_low", "--out", str(out)]
    assert main(argv) == 2
    assert "holds predictions of another run" in capsys.readouterr().err


def test_inputs_mode_with_command_and_divisor(tmp_path, capsys):
    rows = _rows()
    for row in rows[:2]:
        write_frame_pngs(row["frames"], tmp_path / "in" / row["clip_id"], "gt")
        write_mask_pngs(row["hole"], tmp_path / "in" / row["clip_id"])
    script = tmp_path / "copy.py"
    script.write_text(
        "import sys, shutil, pathlib\n"
        "src, dst = map(pathlib.Path, sys.argv[1:3])\n"
        "for p in src.glob('frame_*_gt.png'): shutil.copy(p, dst / p.name.replace('_gt', '_pred'))\n"
    )
    out = tmp_path / "preds"
    code = main(["inpaint", "--method", "copy", "--inputs", str(tmp_path / "in"), "--out", str(out),
                 "--command", f"{sys.executable} {script} {{input_dir}} {{output_dir}}", "--size-divisor", "16"])
    assert code == 0
    pred = read_frame_pngs(out / "v1", "pred")
    blanked = rows[1]["frames"].copy()
    blanked[rows[1]["hole"]] = 0  # the "method" copied its input: hole pixels arrived black
    assert np.array_equal(pred, blanked)


def test_errors_exit_2(tmp_path, capsys, inpaint_cli_slice):
    out = str(tmp_path / "p")
    assert main(["inpaint", "--method", "nope", "--dataset", "org/ds", "--config", "all", "--out", out]) == 2
    err = capsys.readouterr().err
    assert "--method: unknown method 'nope'" in err and "an external method needs --command or --callable" in err
    assert not (tmp_path / "p").exists()  # refused before the folder is made
    assert main(["inpaint", "--method", "telea", "--dataset", "org/ds", "--out", out]) == 2
    assert "--dataset needs --config" in capsys.readouterr().err
    assert main(["inpaint", "--method", "telea", "--out", out]) == 2
    assert main(["inpaint", "--method", "m", "--dataset", "org/ds", "--config", "all", "--out", out,
                 "--command", f"{sys.executable} -c 'import sys; sys.exit(4)' {{output_dir}}"]) == 2
    assert "clip v0: command failed with exit code 4" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["inpaint", "--method", "telea", "--inputs", str(tmp_path / "missing"), "--out", out])
    assert exc.value.code == 2
    with pytest.raises(SystemExit) as exc:
        main(["inpaint", "--method", "m", "--inputs", str(tmp_path), "--out", out, "--command", "a",
              "--callable", "b:c"])
    assert exc.value.code == 2
