"""thread_map: results in item order for any thread count; a failing item cancels the items not started."""
from __future__ import annotations

import time

import pytest

from devil_dataset.core.thread_map import thread_map


@pytest.mark.parametrize("threads", [1, 2, 3, 8])
def test_results_come_in_item_order_for_any_thread_count(threads):
    def slow_square(x: int) -> int:
        time.sleep(0.001 * ((7 * x) % 5))  # items finish out of order
        return x * x

    assert thread_map(slow_square, range(23), threads=threads) == [x * x for x in range(23)]
    assert thread_map(slow_square, [], threads=threads) == []


def test_the_first_failing_item_is_raised_once_nothing_of_the_call_runs():
    started, finished = [], []

    def work(x: int) -> int:
        started.append(x)
        if x in (1, 2):
            raise ValueError(f"item {x}")
        time.sleep(0.05)
        finished.append(x)
        return x

    with pytest.raises(ValueError, match="item 1"):
        thread_map(work, range(60), threads=2)
    seen = (len(started), len(finished))
    time.sleep(0.2)
    assert (len(started), len(finished)) == seen  # the items not started were cancelled, none runs on behind
    assert len(started) < 60  # 60 x 50 ms on 2 threads: 1.5 s if nothing were cancelled
