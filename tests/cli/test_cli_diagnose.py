"""`devil diagnose` on the tiny built dataset with two methods' predictions, and on a DAVIS-layout folder:
attributes.tsv as specified, the report, the cache on a second run, the same bytes twice."""
from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from devil_dataset.cli import main
from devil_dataset.core.release_format import write_frame_pngs
from devil_dataset.data import iter_slice
from devil_dataset.diagnosis.attributes import ATTRIBUTES
from devil_dataset.diagnosis.pairs import dataset_configs, dataset_pairs

from ..eval.davis_data import write_moving_davis

COLUMNS = ["clip_id", "mask_id"] + [c for a in ATTRIBUTES for c in (f"{a}_score", f"{a}_group")]


def _write_predictions(dataset: Path, root: Path) -> dict[str, Path]:
    """Two methods for every config: hole painted grey, and hole pixels with their low bits flipped."""
    methods = {"grey": root / "grey", "flip": root / "flip"}
    for config in dataset_configs(dataset):
        for row in iter_slice(dataset, config, columns=["clip_id", "frames", "hole"]):
            frames, hole = row["frames"], row["hole"].view(np.uint8) != 0
            grey, flip = frames.copy(), frames.copy()
            grey[hole] = 128
            flip[hole] ^= 12
            write_frame_pngs(grey, methods["grey"] / config / row["clip_id"], kind="pred")
            write_frame_pngs(flip, methods["flip"] / config / row["clip_id"], kind="pred")
    return methods


@pytest.fixture(scope="module")
def diagnosed(bench_tiny_dataset, tmp_path_factory):
    root = tmp_path_factory.mktemp("diagnose")
    methods = _write_predictions(bench_tiny_dataset, root / "preds")
    args = ["diagnose", "--dataset", str(bench_tiny_dataset), "--scoring-size", "64x48", "--cache",
            str(root / "cache"), "--quiet", "--predictions", *[f"{m}={p}" for m, p in methods.items()]]
    assert main([*args, "--out", str(root / "one")]) == 0
    return root, args


def test_attributes_tsv_as_specified(diagnosed, bench_tiny_dataset):
    root, _ = diagnosed
    with open(root / "one" / "attributes.tsv", newline="") as fh:
        rows = list(csv.reader(fh, delimiter="\t"))
    assert rows[0] == COLUMNS
    pairs = dataset_pairs(bench_tiny_dataset)
    assert [(r[0], r[1]) for r in rows[1:]] == [(p.clip_id, p.mask_id) for p in pairs]
    for r in rows[1:]:
        rec = dict(zip(COLUMNS, r))
        for a in ATTRIBUTES:
            assert rec[f"{a}_group"] in ("", "low", "high")
            assert rec[f"{a}_score"] == "" or float(rec[f"{a}_score"]) >= 0
        assert 0 < float(rec["fg_size_score"]) < 1
    recs = [dict(zip(COLUMNS, r)) for r in rows[1:]]
    assert {float(r["fg_motion_score"]) for r in recs} == {0.0}  # the fake masks keep their shape
    for a in ATTRIBUTES:  # tertiles of a small set: as many low as high (videos for a video attribute)
        units = {(r["clip_id"], r["mask_id"] if a.startswith("fg_") else ""): r[f"{a}_group"] for r in recs}
        groups = list(units.values())
        if a == "fg_motion":  # all scores equal, so the attribute separates nothing
            assert set(groups) == {""}, a
        else:
            assert groups.count("low") == groups.count("high") > 0, a


def test_report_compares_both_methods(diagnosed):
    root, _ = diagnosed
    out = root / "one"
    text = (out / "diagnosis.md").read_text()
    assert "## Headline" in text and "- grey:" in text and "- flip:" in text
    with open(out / "diagnosis.tsv", newline="") as fh:
        found = list(csv.DictReader(fh, delimiter="\t"))
    assert {(f["method"], f["metric"]) for f in found} == {(m, k) for m in ("grey", "flip") for k in ("psnr", "ssim")}
    for f in found:  # one video per group of a video attribute here: no test (empty p)
        assert (f["p"] == f["p_holm"] == "") if f["attribute"] in ("camera_motion", "bg_scene_motion") else \
            (0 < float(f["p"]) <= float(f["p_holm"]) <= 1)
        assert float(f["low_mean"]) > 0 and float(f["high_mean"]) > 0
    # the grey fill is worse than a 12-level flip everywhere: PSNR per group says so
    psnr = {(f["method"], f["attribute"]): float(f["low_mean"]) for f in found if f["metric"] == "psnr"}
    assert all(psnr[("grey", a)] < psnr[("flip", a)] for a in ATTRIBUTES if ("grey", a) in psnr)
    for name in ("index.html", "groups_table1.tsv", "attribute_correlation.tsv", "plots/attribute_distributions.png"):
        assert (out / name).is_file(), name


def test_second_run_from_cache_same_bytes(diagnosed, capsys):
    root, args = diagnosed
    capsys.readouterr()
    assert main([*args, "--out", str(root / "two")]) == 0
    assert "computed 0," in capsys.readouterr().out
    for name in ("attributes.tsv", "attributes.json", "diagnosis.md", "diagnosis.tsv"):
        assert (root / "one" / name).read_bytes() == (root / "two" / name).read_bytes(), name


def test_davis_layout(tmp_path, capsys):
    write_moving_davis(tmp_path)
    code = main(["diagnose", "--gt-dir", str(tmp_path / "GT"), "--mask-dir", str(tmp_path / "MASKS"), "--out",
                 str(tmp_path / "out"), "--scoring-size", "96x64", "--cache", "none", "--quiet",
                 "--predictions", f"mine={tmp_path / 'PRED'}"])
    assert code == 0, capsys.readouterr().err
    with open(tmp_path / "out" / "attributes.tsv", newline="") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    assert [(r["clip_id"], r["mask_id"]) for r in rows] == [(n, n) for n in ["bear", "boat", "car", "dog"]]
    sizes = [float(r["fg_size_score"]) for r in rows]
    assert sizes == sorted(sizes) and rows[0]["fg_size_group"] == "low" and rows[-1]["fg_size_group"] == "high"
    assert "- mine:" in (tmp_path / "out" / "diagnosis.md").read_text()


def test_user_errors_exit_2(tmp_path, capsys):
    assert main(["diagnose", "--out", str(tmp_path / "o")]) == 2
    assert "nothing to diagnose" in capsys.readouterr().err


def test_out_under_a_file_is_refused_before_any_work(tmp_path, capsys, monkeypatch):
    """`--out a-file/sub` exits 2 naming the file, before the attribute pass runs."""
    import importlib

    module = importlib.import_module("devil_dataset.diagnosis.procedure")
    monkeypatch.setattr(module, "compute_attributes", lambda *a, **k: pytest.fail("ran the pass"))
    (tmp_path / "a-file").write_text("x")
    (tmp_path / "gt").mkdir()
    with pytest.raises(SystemExit) as exc:
        main(["diagnose", "--gt-dir", str(tmp_path / "gt"), "--out", str(tmp_path / "a-file" / "sub")])
    assert exc.value.code == 2
    assert f"{tmp_path / 'a-file'} is a file, not a folder" in capsys.readouterr().err
