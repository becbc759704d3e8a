"""Tests of devil_dataset/demo.py and `devil demo`: the whole run on a tiny built dataset, resuming,
refusing another run's predictions, parity of the per-clip scoring with `devil evaluate`, and `devil report
--findings` on the demo's results. The pieces have their own tests: tests/eval/test_inpaint_and_score.py,
test_clip_scoring.py, test_findings.py, test_results.py, test_registry.py; tests/inpaint/test_inpaint_run.py."""
from __future__ import annotations

import json
import math
import os
import re

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

import numpy as np
import pytest

DEMO_SIZE = (80, 64)  # >= 50x50: PCons needs a 50x50 patch


def _demo_fake_mask(preset: str, index: int) -> np.ndarray:
    """A 90-frame mask at DEMO_SIZE: a box moving right, larger for fgs-h presets (so fg_size_high is harder)."""
    w, h = DEMO_SIZE
    side = 28 if "fgs-h" in preset else 10
    rng = np.random.default_rng([index, len(preset), ord(preset[4])])
    x, y = int(rng.integers(0, w - side - 10)), int(rng.integers(0, h - side))
    m = np.zeros((90, h, w), bool)
    for t in range(90):
        x0 = (x + t // 2) % (w - side)
        m[t, y : y + side, x0 : x0 + side] = True
    return m


@pytest.fixture(scope="module")
def demo_tiny_dataset(tmp_path_factory):
    """A dataset built from 6 small textured, panning H.264 sources (2 rows per slice), fake scorers and masks."""
    from devil_dataset.builder.build import build
    from devil_dataset.builder.build_options import BuildHooks, BuildOptions
    from devil_dataset.core.video_io import write_video

    root = tmp_path_factory.mktemp("demo_tiny")
    rng = np.random.default_rng(0)
    sources = []
    w, h = 96, 64
    for i in range(6):
        base = (rng.random((h // 4, (w + 60) // 4, 3)) * 255).astype(np.uint8)
        base = np.kron(base, np.ones((4, 4, 1), np.uint8))  # blocky texture: trackable
        n = 45 + i % 3
        frames = np.stack([base[:, (k * i) // 2 % 60 : (k * i) // 2 % 60 + w] for k in range(n)])
        sources.append(write_video(root / "src" / f"src{i}.mp4", frames, fps=25))
    build(sources, root / "ds", BuildOptions(size=DEMO_SIZE, curate_options={"min_size": DEMO_SIZE}, progress=False),
          hooks=BuildHooks(camera_scorer=lambda f: float(f[:, :, :, 0].mean()) / 255.0,
                           scene_scorer=lambda f: float(np.abs(np.diff(f[:5].astype(int), axis=0)).mean()),
                           mask_loader=_demo_fake_mask))
    return root / "ds"


SLICES_2 = ("fg_size_low", "fg_size_high")


def _finite(table: dict) -> dict:
    """A results table without its NaN (skipped-metric) entries, so that tables compare with ==."""
    return {k: {m: v for m, v in row.items() if not math.isnan(v)} for k, row in table.items()}
METHODS_2 = ("telea", "aligned-copy")


@pytest.fixture(scope="module")
def demo_tiny_run(demo_tiny_dataset, tmp_path_factory):
    """One demo run (2 worker processes) on the tiny dataset: 2 slices x 2 methods, the four pixel metrics."""
    from devil_dataset.demo import run_demo

    out = tmp_path_factory.mktemp("demo_out")
    lines: list[str] = []
    result = run_demo(out, methods=METHODS_2, slices=SLICES_2, dataset=demo_tiny_dataset, jobs=2,
                      progress=False, echo=lines.append)
    return result, lines


def test_demo_writes_predictions_results_report(demo_tiny_run, demo_tiny_dataset):
    from devil_dataset.data import iter_slice
    from devil_dataset.inpaint.run import MANIFEST_NAME, hole_fingerprint

    result, lines = demo_tiny_run
    out = result.out_dir
    assert result.slice_counts == {"fg_size_low": 2, "fg_size_high": 2}
    for s in SLICES_2:
        for row in iter_slice(demo_tiny_dataset, s, columns=["clip_id", "hole"]):
            for m in METHODS_2:
                d = out / "predictions" / m / s / row["clip_id"]
                files = sorted(p.name for p in d.iterdir())
                assert files == [f"frame_{t:04d}_pred.png" for t in range(len(row["hole"]))]
                manifest = json.loads((out / "predictions" / m / s / MANIFEST_NAME).read_text())
                assert manifest["run"]["method"] == m and manifest["run"]["config"] == s
                assert manifest["clips"][row["clip_id"]] == hole_fingerprint(row["hole"])
    for m in METHODS_2:
        for s in SLICES_2:
            doc = json.loads(result.results_files[(m, s)].read_text())
            assert doc["method"] == m and doc["slice"] == s and doc["num_videos"] == 2
            assert set(doc["metrics"]) == {"psnr", "ssim", "pcons", "warp_error"}
            assert all(isinstance(doc["summary"][k], float)
                       for k in ("psnr", "ssim", "pcons_psnr_mask", "warp_error_mask"))
            assert doc["summary"]["lpips"] is None  # weights absent: skipped, key present as null
            assert "lpips" in doc["skipped"]
    table = (out / "table1.md").read_text()
    assert "| fg_size_high | aligned-copy |" in table and "LPIPS" not in table  # empty columns dropped
    assert (out / "table1.tsv").is_file() and (out / "relative_improvement.md").is_file()
    assert "\u2020: not significantly different from the best" in table  # marks + legend
    rows = json.loads((out / "comparisons.json").read_text())
    assert rows and all(r["n"] >= 1 and "p_holm" in r for r in rows)
    doc = json.loads((out / "results" / "telea" / "fg_size_high.json").read_text())
    assert doc["uncertainty"]["psnr"]["n"] == doc["num_videos"] and doc["uncertainty"]["psnr"]["level"] == 0.95
    assert (out / "sensitivity_fg_size.png").read_bytes()[:4] == b"\x89PNG"
    assert (out / "method_performance_psnr.png").is_file() and (out / "slice_difficulty_ssim.png").is_file()
    assert [f.key for f in result.findings] == ["fg_size", "fg_displacement", "camera_motion"]
    assert result.findings[0].held is not None and result.findings[1].held is None  # no fg_displacement slices run
    assert any(line.startswith("skipped metric") and "lpips" in line for line in lines)
    assert any("| slice | method |" in line for line in lines) and any("[NOT CHECKED]" in line for line in lines)
    assert {t.stage for t in result.timings} == {"build", "plan", "inpaint+evaluate", "results", "report"}
    assert json.loads((out / "timings.json").read_text())[0]["stage"] == "build"


def test_demo_results_equal_devil_evaluate(demo_tiny_run, demo_tiny_dataset):
    """The shared-cache pass gives the same per-video and slice values as `devil evaluate` on the predictions."""
    from devil_dataset.eval.metrics.metric import EvalOptions
    from devil_dataset.eval.scoring.evaluate import evaluate_dataset

    result, _ = demo_tiny_run
    for m in METHODS_2:
        for s in SLICES_2:
            ref = evaluate_dataset(str(demo_tiny_dataset), s, result.out_dir / "predictions" / m / s,
                                   ["psnr", "ssim", "pcons", "warp_error"], EvalOptions(flow="dis"), method=m,
                                   progress=False)
            doc = json.loads(result.results_files[(m, s)].read_text())
            for key, value in ref["summary"].items():
                assert doc["summary"][key] == value, (m, s, key)
            assert doc["videos"] == json.loads(json.dumps(ref["videos"])), (m, s)
            assert doc["provenance"]["flow_backend"] == {"warp_error": "dis"}


def test_demo_resume_reuses_predictions_and_scores(demo_tiny_run, demo_tiny_dataset, monkeypatch):
    import devil_dataset.demo as demo
    import devil_dataset.pipeline.clip_task as inpaint_run  # where a clip task calls the inpainter
    import devil_dataset.pipeline.inpaint_and_score as pipeline  # where the clip loop hands out clip tasks

    result, _ = demo_tiny_run
    pred = next((result.out_dir / "predictions" / "telea" / "fg_size_low").glob("*/frame_0000_pred.png"))
    before = pred.stat().st_mtime_ns
    tables = (result.out_dir / "table1.md").read_text()

    def boom(*a, **k):
        raise AssertionError("recomputed on resume")

    monkeypatch.setattr(inpaint_run, "inpaint_clip", boom)
    monkeypatch.setattr(pipeline, "clip_task", boom)
    again = demo.run_demo(result.out_dir, methods=METHODS_2, slices=SLICES_2, dataset=demo_tiny_dataset, jobs=1,
                          progress=False, echo=None)
    assert pred.stat().st_mtime_ns == before
    assert (result.out_dir / "table1.md").read_text() == tables
    assert _finite(again.table) == _finite(result.table)


def test_demo_refuses_another_runs_predictions(demo_tiny_run, demo_tiny_dataset, tmp_path):
    """A prediction folder made for another dataset is refused, as `devil inpaint` refuses it, and kept."""
    import shutil

    from devil_dataset.core.errors import DevilError
    from devil_dataset.demo import run_demo

    result, _ = demo_tiny_run
    other = shutil.copytree(demo_tiny_dataset, tmp_path / "other-dataset", copy_function=os.link)
    manifest = result.out_dir / "predictions" / "telea" / "fg_size_low" / ".devil-inpaint.json"
    before = manifest.read_text()
    with pytest.raises(DevilError, match=r"predictions/telea/fg_size_low: holds predictions of another run"):
        run_demo(result.out_dir, methods=METHODS_2, slices=SLICES_2, dataset=other, jobs=1, progress=False,
                 echo=None)
    assert manifest.read_text() == before and any(manifest.parent.glob("*/frame_0000_pred.png"))


def test_devil_report_findings_equal_the_demos(demo_tiny_run, tmp_path, capsys):
    """`devil report --findings` checks the findings on any results: on the demo's, it writes the demo's files."""
    from devil_dataset.cli import main

    result, _ = demo_tiny_run
    paths = [str(result.results_files[(m, s)]) for s in SLICES_2 for m in METHODS_2]
    assert main(["report", *paths, "--findings", "--out", str(tmp_path), "--no-plots"]) == 0
    for name in ("findings.md", "findings.json"):
        assert (tmp_path / name).read_bytes() == (result.out_dir / name).read_bytes()
    assert (result.out_dir / "findings.md").read_text() in capsys.readouterr().out


def test_demo_redoes_a_missing_prediction(demo_tiny_run, demo_tiny_dataset):
    import shutil

    from devil_dataset.demo import run_demo

    result, _ = demo_tiny_run
    folder = result.out_dir / "predictions" / "aligned-copy" / "fg_size_high"
    clip_dir = next(p for p in folder.iterdir() if p.is_dir())
    shutil.rmtree(clip_dir)
    again = run_demo(result.out_dir, methods=METHODS_2, slices=SLICES_2, dataset=demo_tiny_dataset, jobs=1,
                     progress=False, echo=None)
    assert len(list(clip_dir.glob("frame_*_pred.png"))) > 0
    assert _finite(again.table) == _finite(result.table)


def test_cli_demo_rejects_bad_input(tmp_path, capsys):
    from devil_dataset.cli import main

    assert main(["demo", "--out", str(tmp_path / "o"), "--methods", "nope", "--dataset", str(tmp_path)]) == 2
    assert "unknown method 'nope'" in capsys.readouterr().err
    assert main(["demo", "--out", str(tmp_path / "o"), "--slices", "fg_size_mid", "--dataset", str(tmp_path)]) == 2
    with pytest.raises(SystemExit) as exc:
        main(["demo", "--out", str(tmp_path / "o"), "--jobs", "0"])
    assert exc.value.code == 2


def test_cli_demo_help_has_example(capsys):
    from devil_dataset.cli import main

    with pytest.raises(SystemExit):
        main(["demo", "--help"])
    assert "devil demo --out demo-out" in capsys.readouterr().out


@pytest.mark.slow
def test_devil_demo_full(tmp_path):
    """The README's main job from scratch: `devil demo --out DIR` (builds the sample, 3 methods x 10 slices).
    Slow: about 15 minutes of CPU on 2 cores."""
    from devil_dataset.cli import main
    from devil_dataset.demo import DEMO_SLICES

    assert main(["demo", "--out", str(tmp_path), "--quiet"]) == 0
    for m in ("telea", "aligned-copy", "flow-propagation"):
        for s in DEMO_SLICES:
            assert (tmp_path / "results" / m / f"{s}.json").is_file()
    assert (tmp_path / "table1.md").read_text().count("\n") == 2 + 30 + 2  # + blank line and legend
    assert len(json.loads((tmp_path / "comparisons.json").read_text())) == 10 * 4 * 3  # slices x metrics x pairs
    assert len(json.loads((tmp_path / "findings.json").read_text())) == 3


def test_demo_writes_the_html_report(demo_tiny_run):
    result, lines = demo_tiny_run
    index = result.out_dir / "report-html" / "index.html"
    assert index in result.report_files and f"HTML report: {index}" in lines
    text = index.read_text()
    # 2 slices x 2 clips (worst/best differ per slice) x (gt, masked, 2 x (output, error)) players at most
    vids = re.findall(r'<video src="([^"]+)"', text)
    assert vids and all((index.parent / v).is_file() for v in vids) and len(vids) % 6 == 0


def test_demo_quick_runs_fg_size_with_psnr_ssim(demo_tiny_dataset, tmp_path):
    from devil_dataset.demo import run_demo

    result = run_demo(tmp_path, methods=("telea",), dataset=demo_tiny_dataset, quick=True, jobs=1, progress=False,
                      echo=None)
    assert result.slices == ("fg_size_low", "fg_size_high") and result.metrics == ["psnr", "ssim"]
    doc = json.loads(result.results_files[("telea", "fg_size_high")].read_text())
    assert doc["metrics"] == ["psnr", "ssim"] and doc["skipped"] == {}
    assert result.findings[0].key == "fg_size" and result.findings[0].held is not None


def test_run_demo_passes_ci_and_set_level_ci_to_the_benchmark(tmp_path, monkeypatch):
    import devil_dataset.demo as benchmarking  # the demo calls the benchmark by this name
    from devil_dataset.demo import run_demo

    seen: dict = {}
    monkeypatch.setattr(benchmarking, "benchmark", lambda ds, methods, out, **kw: seen.update(kw) or "result")
    (tmp_path / "ds").mkdir()
    assert run_demo(tmp_path / "out", dataset=tmp_path / "ds", echo=None, ci="se", set_level_ci=True) == "result"
    assert (seen["ci"], seen["set_level_ci"], seen["device"]) == ("se", True, "cpu")
