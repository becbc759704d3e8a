"""``benchmarks/prove_speed.py``: the package and the restatement of PROVE's code side by side."""
from __future__ import annotations

import pytest

from .conftest import load_benchmark


@pytest.mark.slow
def test_quick_run_reports_equal_values(capsys):
    pytest.importorskip("transformers")
    assert load_benchmark("prove_speed").main(["--quick", "--frames", "3"]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("| tiny |"))
    assert float(row.split("|")[-2]) < 1e-4  # max relative difference
