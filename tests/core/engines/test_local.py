"""The local engine gives the same results, in record order, in-process and in worker processes."""
from __future__ import annotations

import functools
import time

import pytest

from devil_dataset.core.engines.local import default_jobs, map_ordered


def _slow_square(x: int) -> int:
    time.sleep(0.02 * (5 - x % 5))  # later records finish first
    return x * x


def _fail_on(bad: int, x: int) -> int:
    if x == bad:
        raise ValueError(f"record {x} is bad")
    return x


def test_results_in_record_order_with_workers():
    seen = []
    out = list(map_ordered(_slow_square, range(12), jobs=2, window=3, on_result=seen.append))
    assert out == [x * x for x in range(12)] == seen


def test_in_process_equals_workers():
    assert list(map_ordered(_slow_square, range(6), jobs=1)) == list(map_ordered(_slow_square, range(6), jobs=2))


def test_worker_error_is_raised_for_its_record():
    with pytest.raises(ValueError, match="record 3 is bad"):
        list(map_ordered(functools.partial(_fail_on, 3), range(8), jobs=2))


def test_default_jobs_is_capped():
    assert 1 <= default_jobs() <= 2
