"""devil_dataset/eval/metrics/registry.py: metric resolution of a run (pixel / network / skipped) and its skipped
lines."""
from __future__ import annotations

import pytest

from devil_dataset.core.errors import UnknownNameError
from devil_dataset.eval.metrics.metric import EvalOptions
from devil_dataset.eval.metrics.registry import DEVIL_METRICS, PIXEL_METRICS, resolve_metrics, skipped_lines


def test_resolve_named_metrics_splits_pixel_from_the_others():
    pixel, others, skipped = resolve_metrics(["ssim", "pcons_psnr_mask", "psnr", "ff_alpha", "psnr"], EvalOptions())
    assert pixel == ["psnr", "ssim", "pcons"]  # PIXEL_METRICS order, result keys mapped to metric names
    assert others == ["ff_alpha"] and skipped == {}
    with pytest.raises(UnknownNameError, match="nope"):
        resolve_metrics(["nope"], EvalOptions())


def test_resolve_default_runs_what_can_run_and_skips_the_rest_with_a_reason():
    pixel, others, skipped = resolve_metrics(None, EvalOptions(device="cpu"))
    assert pixel == list(PIXEL_METRICS)
    assert set(others) | set(skipped) == set(DEVIL_METRICS) - set(PIXEL_METRICS)
    assert not set(others) & set(skipped) and all(isinstance(r, str) and r for r in skipped.values())


def test_skipped_lines_group_metrics_by_reason():
    lines = skipped_lines({"pvcs": "i3d.pt: not cached. Run a.", "vfid": "i3d.pt: not cached. Run b.",
                           "fid": "pt_inception.pth: not cached."})
    assert lines[:2] == ["skipped metrics pvcs, vfid: i3d.pt: not cached",
                         "skipped metric fid: pt_inception.pth: not cached"]
    assert "devil weights --help" in lines[2] and len(lines) == 3
    assert skipped_lines({}) == []


def test_higher_is_better_is_the_registry_direction_of_every_key():
    from devil_dataset.eval.metrics.registry import METRICS, higher_is_better

    for entry in METRICS.values():
        assert [higher_is_better(k) for k in entry.keys] == list(entry.higher_is_better), entry.name
    assert (higher_is_better("psnr"), higher_is_better("lpips"), higher_is_better("warp_error_mask")) == (
        True, False, False)
    with pytest.raises(UnknownNameError, match="unknown result key 'fg_displacement'"):
        higher_is_better("fg_displacement")  # no silent default direction


def test_unknown_metric_suggests_the_closest_names():
    from devil_dataset.eval.metrics.registry import metric_entry

    with pytest.raises(KeyError, match="unknown metric 'warp_eror'; did you mean 'warp_error'"):
        metric_entry("warp_eror")
