"""devil_dataset/eval/scoring/results.py: merging two results documents, the per-video values cache,
the dataset digest."""
from __future__ import annotations

import json
import math

from devil_dataset.eval.scoring.results import ValuesCache, dataset_digest, merge_results


def _doc(metrics, summary, videos, prov_metrics, **prov):
    return {"metrics": metrics, "summary": summary, "videos": videos, "clipped": {},
            "provenance": {"metrics": prov_metrics, "weights": {}, "flow_backend": {}, **prov}}


def test_merge_results_joins_metrics_values_and_provenance():
    pixel = _doc(["psnr", "warp_error"], {"psnr": 30.0, "warp_error_mask": 0.01, "lpips": math.nan},
                 {"a": {"psnr": 30.0}}, {"psnr": {"x": 1}}, flow_backend={"warp_error": "dis"})
    pixel["clipped"] = {"psnr": ["a"]}
    net = _doc(["lpips"], {"psnr": math.nan, "warp_error_mask": math.nan, "lpips": 0.2},
               {"a": {"lpips": 0.2}, "b": {"lpips": 0.3}}, {"lpips": {"y": 2}}, weights={"lpips": "abc"})
    merged = merge_results(pixel, net)
    assert merged["metrics"] == ["psnr", "warp_error", "lpips"]
    assert merged["summary"] == {"psnr": 30.0, "warp_error_mask": 0.01, "lpips": 0.2}  # NaN never overwrites
    assert merged["videos"] == {"a": {"psnr": 30.0, "lpips": 0.2}, "b": {"lpips": 0.3}}
    assert merged["clipped"] == {"psnr": ["a"]}
    assert merged["provenance"]["metrics"] == {"psnr": {"x": 1}, "lpips": {"y": 2}}
    assert merged["provenance"]["weights"] == {"lpips": "abc"}
    assert merged["provenance"]["flow_backend"] == {"warp_error": "dis"}


def test_values_cache_round_trip_and_invalidation(tmp_path):
    cache = ValuesCache(tmp_path / "values", "digest1", ["psnr", "ssim"])
    assert cache.load("telea", "clip", "fp") is None
    cache.save("telea", "clip", "fp", {"psnr": 31.5, "ssim": math.nan})
    path = tmp_path / "values" / "telea" / "clip-fp.json"
    assert json.loads(path.read_text()) == {"dataset": "digest1", "scoring": "", "metrics": ["psnr", "ssim"],
                                            "clip_id": "clip", "hole": "fp", "values": {"psnr": 31.5, "ssim": None}}
    got = cache.load("telea", "clip", "fp")
    assert got["psnr"] == 31.5 and math.isnan(got["ssim"])
    assert ValuesCache(tmp_path / "values", "digest1", ["psnr"]).load("telea", "clip", "fp") is not None  # subset
    assert ValuesCache(tmp_path / "values", "digest1", ["pcons"]).load("telea", "clip", "fp") is None  # missing
    assert ValuesCache(tmp_path / "values", "digest2", ["psnr"]).load("telea", "clip", "fp") is None  # dataset
    assert cache.load("telea", "clip", "other-hole") is None and cache.load("other", "clip", "fp") is None
    assert ValuesCache(tmp_path / "values", "digest1", ["psnr"], "s2").load("telea", "clip", "fp") is None  # scoring
    path.write_text("{not json")
    assert cache.load("telea", "clip", "fp") is None  # a damaged entry is recomputed


def test_dataset_digest_follows_the_manifest(tmp_path):
    (tmp_path / "data" / "fg_size_low").mkdir(parents=True)
    (tmp_path / "data" / "fg_size_low" / "test-00000.parquet").write_bytes(b"x")
    no_manifest = dataset_digest(tmp_path)
    (tmp_path / "manifest.json").write_text('{"files": {}}')
    first = dataset_digest(tmp_path)
    (tmp_path / "manifest.json").write_text('{"files": {"a": 1}}')
    assert len({no_manifest, first, dataset_digest(tmp_path)}) == 3 and len(first) == 16


def test_values_cache_is_keyed_on_how_the_values_were_computed(tmp_path):
    """Values stored under one scoring identity (modes, arithmetic, flow backend) are not reused under another:
    a resumed benchmark with --parity corrected, or after SSIM's arithmetic changed, scores again."""
    from devil_dataset.eval.metrics.metric import EvalOptions
    from devil_dataset.eval.metrics.registry import scoring_identity

    release = scoring_identity(["psnr", "ssim"], EvalOptions())
    corrected = scoring_identity(["psnr", "ssim"], EvalOptions(parity="corrected"))
    assert release != corrected and release == scoring_identity(["ssim", "psnr"], EvalOptions(device="cpu"))
    ValuesCache(tmp_path, "d", ["psnr", "ssim"], release).save("telea", "clip", "fp", {"psnr": 30.0, "ssim": 0.9})
    assert ValuesCache(tmp_path, "d", ["psnr", "ssim"], release).load("telea", "clip", "fp") == {"psnr": 30.0,
                                                                                                 "ssim": 0.9}
    assert ValuesCache(tmp_path, "d", ["psnr", "ssim"], corrected).load("telea", "clip", "fp") is None
    old = json.loads((tmp_path / "telea" / "clip-fp.json").read_text())
    del old["scoring"]  # an entry written before the identity existed
    (tmp_path / "telea" / "clip-fp.json").write_text(json.dumps(old))
    assert ValuesCache(tmp_path, "d", ["psnr", "ssim"], release).load("telea", "clip", "fp") is None
