"""`devil benchmark`: several methods in one command (a command template and a baseline, or a TOML
methods file), method names checked; and `devil evaluate` naming the methods of `preds/<method>/<slice>/` folders
from their manifests or from NAME=PATH (not the folder names taken for the slice)."""
from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

SLICES = ("fg_size_low", "fg_size_high")

# A method run once per clip: copies the input frames (hole pixels black) to the predictions.
COPY_METHOD = '''
import shutil, sys
from pathlib import Path
src, dst = Path(sys.argv[1]), Path(sys.argv[2])
for f in sorted(src.glob("frame_*_gt.png")):
    shutil.copy(f, dst / f.name.replace("_gt", "_pred"))
'''


@pytest.fixture(scope="module")
def cli_bench(bench_tiny_dataset, tmp_path_factory):
    """`devil benchmark` with a command method and a baseline on two slices (PSNR)."""
    from devil_dataset.cli import main

    root = tmp_path_factory.mktemp("cli_bench")
    (root / "copy.py").write_text(COPY_METHOD)
    out = root / "out"
    code = main(["benchmark", "--dataset", str(bench_tiny_dataset), "--out", str(out), "--method", "copy",
                 "--command", f"{sys.executable} {root / 'copy.py'} {{input_dir}} {{output_dir}}", "--method", "telea",
                 "--slices", *SLICES, "--metrics", "psnr", "--jobs", "1", "--quiet", "--ci", "--set-level-ci"])
    return code, out


def test_benchmark_several_methods_one_command(cli_bench):
    code, out = cli_bench
    assert code == 0
    table = (out / "table1.md").read_text()
    for s in SLICES:
        for m in ("copy", "telea"):
            doc = json.loads((out / "results" / m / f"{s}.json").read_text())
            assert (doc["method"], doc["slice"], doc["num_videos"]) == (m, s, 2)
            assert f"| {s} | {m} |" in table
    copy = json.loads((out / "results" / "copy" / "fg_size_high.json").read_text())["summary"]["psnr"]
    telea = json.loads((out / "results" / "telea" / "fg_size_high.json").read_text())["summary"]["psnr"]
    assert copy < telea  # black holes score below Telea's fill
    run = json.loads((out / "predictions" / "copy" / "fg_size_low" / ".devil-inpaint.json").read_text())["run"]
    assert run["command"].endswith("{input_dir} {output_dir}") and run["method"] == "copy"


def test_benchmark_ci_and_set_level_ci_flags_reach_the_outputs(cli_bench):
    """--ci (interval when given bare) puts each cell's interval into Table 1; --set-level-ci reaches EvalOptions."""
    _, out = cli_bench
    doc = json.loads((out / "results" / "telea" / "fg_size_high.json").read_text())
    lo, hi = doc["uncertainty"]["psnr"]["ci"]
    table = (out / "table1.md").read_text()
    assert f"[{lo:.2f}, {hi:.2f}]" in table and "[lo, hi]: 95% BCa bootstrap interval over videos" in table
    assert doc["provenance"]["options"]["set_level_ci"] is True


def test_evaluate_names_methods_from_manifests_and_name_equals_path(cli_bench, bench_tiny_dataset, tmp_path,
                                                                    capsys):
    from devil_dataset.cli import main

    _, out = cli_bench
    preds = [str(out / "predictions" / m / "fg_size_low") for m in ("copy", "telea")]  # both named fg_size_low
    base = ["evaluate", "--dataset", str(bench_tiny_dataset), "--config", "fg_size_low", "--metrics", "psnr",
            "--no-progress"]
    assert main([*base, "--predictions", *preds, "--out", str(tmp_path / "a")]) == 0
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["copy.json", "telea.json"]
    expected = json.loads((out / "results" / "telea" / "fg_size_low.json").read_text())["summary"]["psnr"]
    assert json.loads((tmp_path / "a" / "telea.json").read_text())["summary"]["psnr"] == pytest.approx(expected)
    assert main([*base, "--predictions", f"x={preds[0]}", f"y={preds[1]}", "--out", str(tmp_path / "b")]) == 0
    assert json.loads((tmp_path / "b" / "y.json").read_text())["method"] == "y"
    assert main([*base, "--predictions", preds[1], "--out", str(tmp_path / "one.json")]) == 0
    assert json.loads((tmp_path / "one.json").read_text())["method"] == "telea"  # not fg_size_low
    assert main([*base, "--predictions", f"named={preds[1]}", "--out", str(tmp_path / "two.json")]) == 0
    assert json.loads((tmp_path / "two.json").read_text())["method"] == "named"
    bare = []  # folders without a manifest: named after the folder; two of the same name must be named
    for m in ("copy", "telea"):
        shutil.copytree(preds[0 if m == "copy" else 1], tmp_path / m / "fg_size_low")
        (tmp_path / m / "fg_size_low" / ".devil-inpaint.json").unlink()
        bare.append(str(tmp_path / m / "fg_size_low"))
    capsys.readouterr()
    assert main([*base, "--predictions", *bare, "--out", str(tmp_path / "c")]) == 2
    assert "are both method 'fg_size_low'; name them: --predictions NAME=PATH" in capsys.readouterr().err


def test_methods_file(bench_tiny_dataset, tmp_path):
    from devil_dataset.cli import main

    (tmp_path / "m.toml").write_text('[methods.spatial]\nbaseline = "telea"\n[methods.navier-stokes]\n')
    out = tmp_path / "out"
    assert main(["benchmark", "--dataset", str(bench_tiny_dataset), "--out", str(out), "--methods-file",
                 str(tmp_path / "m.toml"), "--slices", "fg_size_low", "--metrics", "psnr", "--jobs", "1",
                 "--quiet"]) == 0
    assert sorted(p.name for p in (out / "results").iterdir()) == ["navier-stokes", "spatial"]


@pytest.mark.parametrize("argv, needle", [
    (["--method", "a", "--method", "a"], "--method a: given twice"),
    (["--method", "teleaa"], "unknown baseline 'teleaa'; did you mean 'telea'?"),
    (["--command", "x {output_dir}"], "--command 'x {output_dir}': give --method NAME before it"),
    (["--method", "a", "--command", "x {output_dir}", "--callable", "m:f"], "has both --command and --callable"),
    (["--method", "a/b", "--callable", "m:f"], "method name 'a/b'"),
    (["--method", "a", "--command", "x {input_dir}"], "must contain {output_dir}"),
    ([], "no method: give --method NAME"),
])
def test_bad_methods_exit_2(argv, needle, tmp_path, capsys):
    from devil_dataset.cli import main

    assert main(["benchmark", "--dataset", str(tmp_path), "--out", str(tmp_path / "o"), *argv]) == 2
    assert needle in capsys.readouterr().err


def test_bad_methods_file_exit_2(tmp_path, capsys):
    from devil_dataset.cli import main

    for text, needle in [("[methods.a]\ncomand = 'x'\n", "methods.a: unknown key(s) comand"),
                         ("a = 1\n", "expected only [methods.NAME] tables"),
                         ("[methods.a\n", "not a readable TOML file")]:
        Path(tmp_path / "m.toml").write_text(text)
        assert main(["benchmark", "--dataset", str(tmp_path), "--out", str(tmp_path / "o"), "--methods-file",
                     str(tmp_path / "m.toml")]) == 2
        assert needle in capsys.readouterr().err


def test_baseline_results_merged_not_rerun_and_clipped_cells_marked(cli_bench, bench_tiny_dataset, tmp_path, capsys):
    """--baseline-results DIR joins an earlier run's methods to the report without running them; a method
    whose every video is perfect (the ground truth copied) has infinite PSNR values: its cells carry ∞n in the
    benchmark's stdout table and table1.md/.tsv, and never win; results scored differently are refused."""
    from devil_dataset.cli import main

    _, first = cli_bench
    (tmp_path / "copy.py").write_text(COPY_METHOD)
    out = tmp_path / "out"
    code = main(["benchmark", "--dataset", str(bench_tiny_dataset), "--out", str(out), "--method", "perfect",
                 "--command", f"{sys.executable} {tmp_path / 'copy.py'} {{input_dir}} {{output_dir}}",
                 "--hole-pixels", "gt", "--slices", *SLICES, "--metrics", "psnr", "--jobs", "1", "--quiet",
                 "--baseline-results", str(first)])
    stdout = capsys.readouterr().out
    assert code == 0
    assert sorted(p.name for p in (out / "predictions").iterdir()) == ["perfect"]  # the baselines were not re-run
    table = (out / "table1.md").read_text()
    for s in SLICES:
        for m in ("copy", "telea", "perfect"):
            assert f"| {s} | {m} |" in table
        assert f"| {s} | perfect | inf \u221e2 |" in table  # 2 of 2 videos infinite, marked
        assert f"| {s} | perfect | inf \u221e2 |" in stdout
    assert "**" not in table.split("\n\n")[0]  # a cell resting on clipped videos: no cell of the slice wins
    assert "\u221en: n of the cell's videos had an infinite value" in table
    tsv = (out / "table1.tsv").read_text().splitlines()
    assert tsv[0].split("\t")[-1] == "PSNR \u25b2 clipped videos"
    assert {r.split("\t")[1]: r.split("\t")[-1] for r in tsv[1:4]} == {"copy": "0", "telea": "0", "perfect": "2"}
    per_video = (out / "per_video.tsv").read_text().splitlines()
    assert len(per_video) == 1 + 3 * 2 * 2 and per_video[0] == "slice\tmethod\tclip\tPSNR \u25b2"
    # the same baselines scored under another parity: refused, naming the file and the field
    other = tmp_path / "other" / "results" / "telea"
    other.mkdir(parents=True)
    doc = json.loads((first / "results" / "telea" / "fg_size_low.json").read_text())
    doc["provenance"]["options"]["parity"] = "corrected"
    (other / "fg_size_low.json").write_text(json.dumps(doc))
    assert main(["report", str(first / "results" / "copy" / "fg_size_low.json"), "--baseline-results",
                 str(tmp_path / "other")]) == 2
    err = capsys.readouterr().err
    assert "results scored differently cannot be compared" in err and 'parity: "release" in' in err
    assert str(other / "fg_size_low.json") in err and "--allow-mixed" in err
    assert main(["report", str(first / "results" / "copy" / "fg_size_low.json"), "--baseline-results",
                 str(tmp_path / "other"), "--allow-mixed"]) == 0
    mixed = capsys.readouterr().out
    assert "\u00a7" in mixed and 'parity "' in mixed and "scored differently from the other results" in mixed
