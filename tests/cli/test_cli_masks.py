"""`devil masks render|stats|presets`: successful runs and every bad input (exit 2, nothing half-written)."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from devil_dataset.cli import main
from devil_dataset.core.mask_store import read_stored, stored_mask

PRESET = "fgs-l_fgm-l_fgd-h"


def _run(args, capsys):
    try:
        code = main(args)
    except SystemExit as exc:  # argparse usage errors
        code = exc.code
    out = capsys.readouterr()
    return code, out.out, out.err


def test_render_release_png_and_resume(tmp_path, capsys):
    code, out, _ = _run(["masks", "render", "--preset", PRESET, "--index", "3", "--count", "2", "--num-frames", "3",
                         "--out", str(tmp_path), "--no-progress"], capsys)
    assert code == 0 and "2 masks written" in out
    folders = sorted(p.name for p in (tmp_path / f"devil_{PRESET}").iterdir())
    assert folders == ["00003", "00004"]
    hole, meta = read_stored(tmp_path / f"devil_{PRESET}" / "00004")
    assert np.array_equal(hole, stored_mask(PRESET, 4, num_frames=3)) and meta["index"] == 4
    code, out, _ = _run(["masks", "render", "--preset", PRESET, "--index", "3", "--count", "2", "--num-frames", "3",
                         "--out", str(tmp_path)], capsys)
    assert code == 0 and "0 masks written, 2 already present" in out


def test_render_npz_reversed_raw(tmp_path, capsys):
    code, _, _ = _run(["masks", "render", "--preset", PRESET, "--index", "0", "--num-frames", "2", "--reverse",
                       "--resolution", "1920x1080", "--format", "npz", "--out", str(tmp_path)], capsys)
    assert code == 0
    hole, meta = read_stored(tmp_path / f"devil_{PRESET}_00000-reversed.npz")
    assert hole.shape == (2, 1080, 1920) and meta["reversed"] is True


def test_stats_json(tmp_path, capsys):
    code, out, _ = _run(["masks", "stats", "--preset", PRESET, "--index", "1", "--count", "2", "--num-frames", "4",
                         "--no-progress", "--json"], capsys)
    assert code == 0
    doc = json.loads(out)
    assert [m["index"] for m in doc["masks"]] == [1, 2]
    assert doc["summary"][PRESET]["mean_area"]["n"] == 2 and 0 < doc["masks"][0]["stats"]["mean_area"] < 0.2
    _run(["masks", "render", "--preset", PRESET, "--index", "1", "--num-frames", "4", "--format", "npz",
          "--out", str(tmp_path)], capsys)
    code, out, _ = _run(["masks", "stats", "--stored", str(tmp_path / f"devil_{PRESET}_00001.npz"), "--json"], capsys)
    assert code == 0
    stored = json.loads(out)["masks"][0]
    assert stored["stats"] == doc["masks"][0]["stats"] and stored["preset"] == PRESET


def test_presets_json(capsys):
    code, out, _ = _run(["masks", "presets", "--json"], capsys)
    assert code == 0 and len(json.loads(out)) == 8


def test_presets_and_stats_print_tables_by_default(capsys):
    code, out, _ = _run(["masks", "presets"], capsys)
    lines = out.splitlines()
    assert code == 0 and len(lines) == 9  # header + the eight presets
    assert lines[0].split()[:3] == ["preset", "vertices", "head_speed"]
    assert lines[1].split() == ["fgs-h_fgm-h_fgd-h", "7-13", "50-70", "0-60", "150-300", "0.8", "1.5", "300", "9-15",
                                "300,", "0.75", "1-3"]
    code, out, _ = _run(["masks", "stats", "--preset", PRESET, "--count", "2", "--num-frames", "4", "--summary-only",
                         "--no-progress"], capsys)
    lines = out.splitlines()
    assert code == 0 and lines[1].split() == ["preset", "statistic", "median", "q25", "q75", "n"]
    area = next(line.split() for line in lines if " mean_area " in line)
    assert area[0] == PRESET and area[-1] == "2" and 0 < float(area[2]) < 0.2
    assert len(lines) == 2 + 6  # title, header, one row per statistic


@pytest.mark.parametrize("args, message", [
    (["--preset", "fgs-x_fgm-l_fgd-l"], "unknown preset 'fgs-x_fgm-l_fgd-l'; did you mean 'fgs-l_fgm-l_fgd-l' or"),
    (["--preset", PRESET, "--resolution", "832by480"], "malformed resolution"),
    (["--preset", PRESET, "--resolution", "0x480"], "malformed resolution"),
    (["--preset", PRESET, "--index", "-1"], "must be >= 0"),
    (["--preset", PRESET, "--count", "-2"], "must be >= 0"),
    (["--preset", PRESET, "--count", "0"], "must be >= 1"),
    (["--preset", PRESET, "--index", "999", "--count", "2"], "masks 0..999"),
    (["--preset", PRESET, "--format", "tiff"], "invalid choice"),
])
def test_render_bad_input(tmp_path, capsys, args, message):
    out_dir = tmp_path / "out"
    code, _, err = _run(["masks", "render", *args, "--num-frames", "1", "--out", str(out_dir)], capsys)
    assert code == 2 and message in err
    assert not out_dir.exists() or not any(out_dir.rglob("*"))


def test_render_out_is_a_file(tmp_path, capsys):
    target = tmp_path / "file.txt"
    target.write_text("keep me")
    code, _, err = _run(["masks", "render", "--preset", PRESET, "--out", str(target)], capsys)
    assert code == 2 and "is not a directory" in err and target.read_text() == "keep me"
    # a file where the preset folder belongs
    (tmp_path / "o").mkdir()
    (tmp_path / "o" / f"devil_{PRESET}").write_text("x")
    code, _, err = _run(["masks", "render", "--preset", PRESET, "--num-frames", "1", "--out", str(tmp_path / "o")],
                        capsys)
    assert code == 2 and "devil: error:" in err


def test_stats_bad_input(tmp_path, capsys):
    assert _run(["masks", "stats", "--preset", "nope"], capsys)[0] == 2
    code, _, err = _run(["masks", "stats"], capsys)
    assert code == 2 and "--preset" in err
    code, _, err = _run(["masks", "stats", "--stored", str(tmp_path / "missing.npz")], capsys)
    assert code == 2 and "no such file" in err


def test_console_entry_point_runs(tmp_path):
    code = "import sys; from devil_dataset.cli import main; sys.exit(main())"
    result = subprocess.run([sys.executable, "-c", code, "masks", "render", "--preset", "nope", "--out", str(tmp_path)],
                            capture_output=True, text=True)
    assert result.returncode == 2 and "unknown preset 'nope'" in result.stderr


@pytest.mark.parametrize("args, message", [
    (["--resolution", "100000x480"], "above the limit of 8192 pixels per side"),
    (["--num-frames", "100000000"], "need 122666.4 GiB of memory, above the limit of 4 GiB"),
    (["--resolution", "8000x8000", "--num-frames", "90"], "above the limit of 4 GiB"),
])
def test_render_absurd_size_or_length_is_refused_before_allocating(tmp_path, capsys, args, message):
    code, _, err = _run(["masks", "render", "--preset", PRESET, *args, "--out", str(tmp_path / "out")], capsys)
    assert code == 2 and message in err and "MemoryError" not in err
    assert not any((tmp_path / "out").rglob("*.png"))


def test_render_cleans_temporaries_left_by_a_kill(tmp_path, capsys):
    stale = tmp_path / "out" / f"devil_{PRESET}" / ".tmp-00000-abc"
    stale.mkdir(parents=True)
    (stale / "frame_0000_mask.png").write_bytes(b"half")
    code, _, _ = _run(["masks", "render", "--preset", PRESET, "--num-frames", "1", "--out", str(tmp_path / "out")],
                      capsys)
    assert code == 0 and not stale.exists()
