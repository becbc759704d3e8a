"""Read ahead: the next items of an iterator made in a background thread while the caller works on the current one.

Scoring a clip is decode (PNG, video: the decoders release the GIL) followed by compute (numpy, OpenCV, torch: also
mostly outside the GIL); :func:`prefetched` overlaps the two, so the decode of clip k+1 runs while clip k is
scored, on the CPU's second core or while the GPU computes ("decode and prepare on CPU workers while the
GPU computes"). The items and their order are those of the iterator; only when each is made changes.

* **bounded**: at most ``depth`` items wait in the queue (plus the one being made), so memory stays at
  ``depth + 1`` clips however slow the consumer;
* **errors** raised while making an item are raised in the consumer at that item's place, with their traceback;
* **stopping**: when the consumer stops early (``break``, an exception, ``close()``), the producer is told to stop
  and joined after the item it is making (at most :data:`JOIN_SECONDS`; a daemon thread still making one then ends
  after it, its item discarded).

    >>> list(prefetched(iter(range(5)), depth=2))
    [0, 1, 2, 3, 4]
    >>> def bad():
    ...     yield 1
    ...     raise ValueError("clip 2: corrupt")
    >>> out = []
    >>> try:
    ...     for x in prefetched(bad()):
    ...         out.append(x)
    ... except ValueError as exc:
    ...     print(out, exc)
    [1] clip 2: corrupt
"""
from __future__ import annotations

import queue
import threading
from typing import Iterable, Iterator, TypeVar

T = TypeVar("T")

#: Clips read ahead while one is scored: one keeps a core busy decoding while the other computes; more
#: only costs memory (each 90-frame 832x480 clip is 108 MB per array, the release's clips).
PREFETCH_DEPTH = 1
_POLL_SECONDS = 0.1  # how often a blocked producer checks whether the consumer has gone
#: How long a consumer that stops early waits for the producer to finish the item it is making (an interrupted run
#: should not wait for a long clip's flows); a producer still busy then is a daemon thread that stops after it.
JOIN_SECONDS = 5.0


class _Raised:
    """An exception raised by the producer, carried to the consumer."""

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


_DONE = object()


def prefetched(items: Iterable[T], depth: int = PREFETCH_DEPTH, *, name: str = "prefetch") -> Iterator[T]:
    """The items of ``items``, made up to ``depth`` ahead in a daemon thread named ``name`` (``depth`` 0: no thread,
    the items are made on demand as by ``iter(items)``)."""
    if depth <= 0:
        yield from items
        return
    slots: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(value: object) -> bool:
        while not stop.is_set():
            try:
                slots.put(value, timeout=_POLL_SECONDS)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for item in items:
                if not put(item):
                    return
        except BaseException as exc:  # carried to the consumer, raised there
            put(_Raised(exc))
            return
        put(_DONE)

    worker = threading.Thread(target=produce, name=name, daemon=True)
    worker.start()
    try:
        while True:
            value = slots.get()
            if value is _DONE:
                return
            if isinstance(value, _Raised):
                raise value.exc
            yield value
    finally:
        stop.set()
        worker.join(timeout=JOIN_SECONDS)


__all__ = ["PREFETCH_DEPTH", "prefetched"]
