"""core/prefetch.py: items and order kept, bounded read-ahead, errors at their place, clean stop."""
from __future__ import annotations

import threading
import time

import pytest

from devil_dataset.core.prefetch import prefetched


def test_items_and_order_are_those_of_the_iterator():
    assert list(prefetched(iter(range(50)), depth=3)) == list(range(50))
    assert list(prefetched(iter([]), depth=1)) == []
    assert list(prefetched(iter("abc"), depth=0)) == ["a", "b", "c"]


def test_items_are_made_in_a_background_thread_at_most_depth_plus_one_ahead():
    made: list[int] = []
    threads: set[str] = set()

    def source():
        for i in range(10):
            threads.add(threading.current_thread().name)
            made.append(i)
            yield i

    it = prefetched(source(), depth=2, name="reader")
    first = next(it)
    deadline = time.monotonic() + 5
    while len(made) < 4 and time.monotonic() < deadline:  # bounded wait for the producer to fill the queue
        time.sleep(0.01)
    time.sleep(0.2)  # give an unbounded producer the time to run further ahead
    assert first == 0
    assert len(made) == 4  # item 0 consumed, 2 queued, 1 made and waiting for a free slot
    assert threads == {"reader"}
    assert list(it) == list(range(1, 10))


def test_an_error_is_raised_at_its_item_with_the_earlier_items_delivered():
    def source():
        yield 1
        yield 2
        raise OSError("clip003/frame_0002.png: truncated PNG")

    got = []
    with pytest.raises(OSError, match="clip003/frame_0002.png: truncated PNG"):
        for x in prefetched(source(), depth=4):
            got.append(x)
    assert got == [1, 2]


def test_an_early_stop_ends_the_producer():
    made: list[int] = []

    def source():
        for i in range(1000):
            made.append(i)
            yield i

    before = {t.name for t in threading.enumerate()}
    it = prefetched(source(), depth=1, name="stop-me")
    assert next(it) == 0
    it.close()  # as a `break` out of the consumer's loop does
    assert "stop-me" not in {t.name for t in threading.enumerate()} - before
    assert len(made) <= 3
