"""The ProPainter-protocol benchmark scripts run and report equal values."""
from __future__ import annotations

import pytest

from .conftest import load_benchmark


def test_ssim_benchmark_cases_agree_with_scikit_image():
    bench = load_benchmark("propainter_ssim")
    for fraction in bench.CASES.values():
        ref_ms, fast_ms, find_ms, diff = bench.run_case(2, fraction, 1)
        assert diff <= 1e-9 and ref_ms > 0 and fast_ms > 0 and find_ms > 0


def test_davis_sized_frame_counts():
    bench = load_benchmark("propainter_run")
    counts = bench.frame_counts(bench.DAVIS_VIDEOS, bench.DAVIS_FRAMES)
    assert len(counts) == 50 and sum(counts) == 3455 and min(counts) >= 25 and max(counts) <= 104


@pytest.mark.slow
def test_run_benchmark_quick(tmp_path, capsys):
    load_benchmark("propainter_run").main(["--quick", "--workers", "1", "--keep", str(tmp_path)])
    out = capsys.readouterr().out
    assert "| synthetic |" in out and "ms per frame" in out
