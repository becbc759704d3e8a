"""The HTML report's clip material: ``devil benchmark``'s inpaint+evaluate stage encodes every unit's streams from the
frames in memory, and its report copies them instead of decoding: the same report files as a report that decodes
every frame, nothing decoded when the material is complete, and a stream the material lacks, or a prediction changed
since, decoded as before."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

import numpy as np
import pytest

SLICES = ["fg_size_low", "fg_size_high", "fg_motion_low"]  # the foreground slices share clips and units
METHODS = {"telea": "telea", "aligned-copy": "aligned-copy"}


@pytest.fixture(scope="module")
def material_run(bench_tiny_dataset, tmp_path_factory):
    """A benchmark of two baselines on three slices (one worker process: monkeypatches reach the clip tasks)."""
    from devil_dataset.pipeline.benchmark import benchmark

    out = tmp_path_factory.mktemp("material_run")
    result = benchmark(bench_tiny_dataset, METHODS, out, slices=SLICES, metrics=("psnr",), jobs=1, progress=False,
                       echo=None)
    return result


def _files(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _report(result, dataset: Path, out: Path, material: bool) -> dict[str, str]:
    """The run's HTML report written into ``out`` from its results files, with or without its clip material."""
    from devil_dataset.core.engines import get_engine
    from devil_dataset.eval.metrics.metric import EvalOptions
    from devil_dataset.eval.report.clip_material import ClipMaterial
    from devil_dataset.eval.report.html import ClipEncoding, write_html_report
    from devil_dataset.eval.scoring.results import dataset_digest, read_results
    from devil_dataset.pipeline.benchmark import (
        BENCHMARK_FLOW,
        CACHE_DIR,
        CLIP_MATERIAL_DIR,
        clip_sources,
        make_plan,
    )

    engine = get_engine("local", jobs=1)
    plan = make_plan(dataset, METHODS, result.out_dir, slices=SLICES, metrics=("psnr",), engine=engine, jobs=1,
                     options=EvalOptions(device="cpu", flow=BENCHMARK_FLOW), say=lambda _: None)
    docs = [read_results(p) for p in result.results_files.values()]
    extra = {}
    if material:
        extra = {"material": ClipMaterial(result.out_dir / CACHE_DIR / CLIP_MATERIAL_DIR),
                 "sources": clip_sources(plan, dataset_digest(dataset))}
    encoding = ClipEncoding(docs, out, ["psnr"], engine=engine, **extra)
    write_html_report(docs, out, ["psnr"], encoding=encoding, engine=engine)
    return _files(out)


def test_the_inpaint_stage_makes_every_units_streams(material_run):
    from devil_dataset.pipeline.benchmark import CACHE_DIR, CLIP_MATERIAL_DIR

    units = material_run.units
    streams = sorted((material_run.out_dir / CACHE_DIR / CLIP_MATERIAL_DIR).glob("*.jpg"))
    # per unit: masked input and 2 methods x (output, error); per clip: the ground truth (shared by its units)
    assert units * (1 + 2 * len(METHODS)) < len(streams) <= units * (2 + 2 * len(METHODS))
    assert len(list((material_run.out_dir / CACHE_DIR / CLIP_MATERIAL_DIR).glob("*.mp4"))) == len(streams)
    note = next(t.note for t in material_run.timings if t.stage == "inpaint+evaluate")
    assert "report clips" in note


def test_the_report_from_material_is_the_decoded_report_and_decodes_nothing(material_run, bench_tiny_dataset,
                                                                              tmp_path, monkeypatch):
    from devil_dataset.eval.report import html
    from devil_dataset.eval.scoring.inputs import PredictionStore

    decoded = _report(material_run, bench_tiny_dataset, tmp_path / "decoded", material=False)
    assert any(n.endswith(".mp4") for n in decoded)

    def refuse(*args, **kwargs):
        raise AssertionError("decoded although the clip material holds every stream")

    monkeypatch.setattr(html, "_load_gt", refuse)
    monkeypatch.setattr(PredictionStore, "read", refuse)
    assert _report(material_run, bench_tiny_dataset, tmp_path / "material", material=True) == decoded


def test_missing_or_stale_material_is_decoded_with_the_same_files(material_run, bench_tiny_dataset, tmp_path):
    from devil_dataset.core.release_format import list_frames
    from devil_dataset.pipeline.benchmark import CACHE_DIR, CLIP_MATERIAL_DIR

    folder = material_run.out_dir / CACHE_DIR / CLIP_MATERIAL_DIR
    posters = sorted(folder.glob("*.jpg"))
    for p in posters[::3]:  # a third of the streams gone
        p.unlink()
    decoded = _report(material_run, bench_tiny_dataset, tmp_path / "decoded", material=False)
    assert _report(material_run, bench_tiny_dataset, tmp_path / "partial", material=True) == decoded
    # a prediction changed after its streams were made (the same file names, other pixels): its new frames are shown
    pred_dir = next(p for p in sorted((material_run.out_dir / "predictions" / "telea" / SLICES[0]).iterdir())
                    if p.is_dir())
    first = list_frames(pred_dir, "pred")[0]
    import cv2

    img = cv2.imread(str(first))
    os.unlink(first)  # the file may be a hard link shared with the other slices: replace it, not write through
    cv2.imwrite(str(first), np.ascontiguousarray(255 - img))
    changed = _report(material_run, bench_tiny_dataset, tmp_path / "decoded2", material=False)
    assert changed != decoded
    assert _report(material_run, bench_tiny_dataset, tmp_path / "changed", material=True) == changed
