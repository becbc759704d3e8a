"""The local engine: map a stage function over records in this process or in ``jobs`` worker processes.

Results come back in the order of the records whatever order the workers finish in, so a stage gives the same
output with any number of workers. At most ``window`` records are in flight (default ``2 * jobs``), so memory
does not grow with the number of records. ``fn`` and the records must be picklable when ``jobs > 1``
(module-level functions, :func:`functools.partial` of them).

The worker processes are kept for the whole command: the first call with ``jobs`` workers starts them, every later
call with the same ``jobs`` reuses them (their imports, OpenCV/torch start-up and caches), and they stop at
interpreter exit or at :func:`shutdown_pools`; records still running at exit, left by a loop its caller quit, are
interrupted, not waited for (:func:`_stop_abandoned_records`). A task carries the caller's working directory,
import path and environment, and the worker adopts them before the record runs, as a worker started then would see
them.

Workers start with :data:`START_METHOD` ``spawn``: a fresh interpreter, once per worker and command, instead of a
fork of a parent that may already hold torch's OpenMP threads or a CUDA context (the evaluation builds its networks
before it scores parts in parallel; a forked child cannot use CUDA again and may hang in OpenMP). A script that
calls a stage with ``jobs > 1`` therefore needs the usual ``if __name__ == "__main__":`` guard.

The workers compute the package's published numbers, so each is pinned for its whole life as the ``devil`` command
is (:func:`devil_dataset.core.cpu_pins.pin_process`): it starts with the pins of
:func:`~devil_dataset.core.cpu_pins.pinned_environment` in its environment (its torch and scipy read them when they
load; the calling process's own environment is given back as soon as the worker has started), keeps them when it
adopts a caller's environment, and pins OpenCV before its first record.

    >>> list(map_ordered(abs, [-2, 3, -1]))
    [2, 3, 1]
"""
from __future__ import annotations

import atexit
import contextlib
import itertools
import math
import multiprocessing
import multiprocessing.context
import os
import signal
import sys
import threading
import time
import weakref
from collections import deque
from concurrent.futures import Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Callable, Generic, Iterable, Iterator, TypeVar

from ..cpu_pins import AVX2_PINS, pin_process, pinned_environment
from ..freed_memory import reuse_freed_memory

T = TypeVar("T")
R = TypeVar("R")

#: how worker processes start: a fresh interpreter (no OpenMP thread pool or CUDA context inherited from the parent)
START_METHOD = "spawn"

_pools: dict[int, ProcessPoolExecutor] = {}  # jobs -> the pool of this command
_pools_lock = threading.Lock()
_clocks: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # pool -> its shared clock (see _caller_clock)
_pools_pid = os.getpid()  # the process whose children the pools' workers are (a forked child starts its own)
_busy = False  # in a worker: a record is being computed (Ctrl-C interrupts it; an idle worker ignores Ctrl-C)
_context: tuple | None = None  # in a worker: the caller's context it adopted last (see _caller_context)
_worker_pins: dict[str, str] = {}  # in a worker: the pin variables it started with (its libraries read them then)
# Ctrl-C starts no new record: a task carries the time it was submitted (time.monotonic(), one clock for every
# process of the machine), and a worker that got Ctrl-C (from the terminal, or from the caller when its call is
# interrupted) starts no record submitted before that moment; records of later calls run as usual.
_interrupted_at = -math.inf  # in a worker: the moment of the last Ctrl-C it handled
_current_submitted = -math.inf  # in a worker: when the record it computes was submitted
# When the caller interrupts its call it writes the moment into the pool's shared clock (count, moment) before it
# sends Ctrl-C: a worker handles a signal only when the scheduler next runs it, which on a loaded machine can be
# after the caller has submitted the records of its next call; the moment it reads is the caller's, so those
# records still start (the worker's own clock at handling time refused them: a KeyboardInterrupt in the next call).
_caller_clock = None  # in a worker: the pool's shared clock (a RawArray of 2 doubles)
_caller_interrupts_seen = 0.0  # in a worker: how many of the caller's interrupts it has handled
# The message of the KeyboardInterrupt a worker raises for a record it does not start after Ctrl-C.
NOT_STARTED = "not started: the call was interrupted (Ctrl-C)"
# Seconds the workers get after Ctrl-C to stop the records they compute (an external command's process group gets
# KILL_GRACE_S = 2 s of them, devil_dataset/inpaint/external.py) before they are killed: a record stuck in one long
# C call (it sees Ctrl-C only when the call returns) cannot hold the command's exit (54 s before).
INTERRUPT_GRACE_S = 5.0


def default_jobs(cap: int = 2) -> int:
    """Worker processes to use by default: the CPU count, at most ``cap`` (the demo's machine has 2 cores)."""
    return max(1, min(cap, os.cpu_count() or 1))


def _caller_context() -> tuple:
    """What a worker started now would take from this process: working directory, import path and environment.

    Each task carries it and a kept worker adopts it before the record runs, so a change made between two calls
    (``os.chdir``, a new ``DEVIL_WEIGHTS_DIR``) reaches the workers as it would reach new ones.
    """
    return os.getcwd(), tuple(sys.path), tuple(sorted(os.environ.items()))


def _adopt(context: tuple) -> None:
    global _context
    if context == _context:
        return
    cwd, path, environ = context
    if os.getcwd() != cwd:
        os.chdir(cwd)
    sys.path[:] = path
    wanted = {**dict(environ), **_worker_pins}  # the pins its libraries started with stay what the worker shows
    if os.environ != wanted:
        os.environ.clear()
        os.environ.update(wanted)
    _context = context


def _on_interrupt(signum, frame):
    """A worker's Ctrl-C: no record submitted before its moment starts here; the record being computed stops if it
    was submitted before it.

    The moment is the caller's when the caller sent it (read from the shared clock), else (the terminal's Ctrl-C)
    the moment this worker handles it.
    """
    global _interrupted_at, _caller_interrupts_seen
    moment = time.monotonic()
    if _caller_clock is not None and _caller_clock[0] > _caller_interrupts_seen:
        _caller_interrupts_seen = _caller_clock[0]
        moment = _caller_clock[1]
    _interrupted_at = max(_interrupted_at, moment)
    if _busy and _current_submitted <= _interrupted_at:
        raise KeyboardInterrupt


def _start_worker(caller_clock=None) -> None:
    """Worker initialiser: the process pinned (:func:`~devil_dataset.core.cpu_pins.pin_process`, its environment
    pins already there from its start); Ctrl-C interrupts the record being computed (its clean-up runs, e.g. an
    external inpainter's process group is killed) but not an idle worker, so the pool survives an interrupted
    command; the records queued before the Ctrl-C are not started. ``caller_clock``: the pool's shared clock."""
    global _caller_clock, _caller_interrupts_seen
    pin_process()
    reuse_freed_memory()  # a process of the command's: as the command's own (core/freed_memory)
    _worker_pins.update({name: os.environ[name] for name in AVX2_PINS if name in os.environ})
    _caller_clock = caller_clock
    # a worker started after an interrupt (a replacement) owes nothing to the interrupts before it
    _caller_interrupts_seen = caller_clock[0] if caller_clock is not None else 0.0
    signal.signal(signal.SIGINT, _on_interrupt)


# Starting a worker sets the pins in this process's environment for the moment of the start (a spawned interpreter
# inherits the environment of the process when it starts), then gives the caller's values back.
_spawn_lock = threading.Lock()


@contextlib.contextmanager
def _pinned_for_spawn() -> Iterator[None]:
    with _spawn_lock:
        added = pinned_environment(os.environ)
        os.environ.update(added)
        try:
            yield
        finally:
            for name in added:
                os.environ.pop(name, None)


class _PinnedSpawnProcess(multiprocessing.context.SpawnProcess):
    """A spawned worker process that starts with the environment pins (see :func:`_pinned_for_spawn`)."""

    @staticmethod
    def _Popen(process_obj):  # noqa: N802 - multiprocessing's name
        with _pinned_for_spawn():
            return multiprocessing.context.SpawnProcess._Popen(process_obj)


class _PinnedSpawnContext(multiprocessing.context.SpawnContext):
    """The ``spawn`` start method with :class:`_PinnedSpawnProcess` workers."""

    Process = _PinnedSpawnProcess


def _call(task: tuple[float, tuple], fn: Callable[[T], R], record: T) -> R:
    """A record's task in a worker: ``task`` is (when it was submitted, the caller's context); the context adopted,
    then ``fn(record)`` (interruptible by Ctrl-C).

    A record submitted before this worker last got Ctrl-C is not started: KeyboardInterrupt (:data:`NOT_STARTED`)
    comes back instead of its result.
    """
    global _busy, _current_submitted
    submitted, context = task
    if submitted <= _interrupted_at:
        raise KeyboardInterrupt(NOT_STARTED)
    _adopt(context)
    _current_submitted = submitted
    _busy = True
    try:
        return fn(record)
    finally:
        _busy = False


def _usable(pool: ProcessPoolExecutor) -> bool:
    """False once a worker died or the pool was shut down (CPython's executor state; ``_processes``: pid -> process)."""
    if getattr(pool, "_broken", False) or getattr(pool, "_shutdown_thread", False):
        return False
    return all(p.is_alive() for p in list((getattr(pool, "_processes", None) or {}).values()))


def worker_pool(jobs: int) -> ProcessPoolExecutor:
    """The pool of ``jobs`` worker processes of this command: made on first use, then reused.

    A pool whose worker died (killed, out of memory) is replaced.
    """
    global _pools_pid
    with _pools_lock:
        if _pools_pid != os.getpid():  # a fork of the process that started them: not our workers
            _pools.clear()
            _pools_pid = os.getpid()
        pool = _pools.get(jobs)
        if pool is not None and not _usable(pool):
            pool.shutdown(wait=False)
            pool = None
        if pool is None:
            clock = _PinnedSpawnContext().RawArray("d", [0.0, -math.inf])  # see _caller_clock
            pool = ProcessPoolExecutor(max_workers=jobs, mp_context=_PinnedSpawnContext(),
                                       initializer=_start_worker, initargs=(clock,))
            _clocks[pool] = clock
            _pools[jobs] = pool
        return pool


def shutdown_pools(jobs: int | None = None) -> None:
    """Stop the worker processes (of ``jobs`` workers, or all): queued records are cancelled, running ones finish.

    The next parallel call starts new workers. Runs at interpreter exit.
    """
    with _pools_lock:
        if _pools_pid != os.getpid():  # inherited by a fork: the parent stops them
            _pools.clear()
            return
        chosen = [j for j in _pools if jobs is None or j == jobs]
        pools = [_pools.pop(j) for j in chosen]
    for pool in pools:
        pool.shutdown(wait=True, cancel_futures=True)


atexit.register(shutdown_pools)


def _stop_abandoned_records() -> None:
    """At interpreter exit, before the pools' threads are joined: a record still running belongs to a loop its
    caller left (Ctrl-C or an exception in the loop's body, where :func:`_map_in_workers` does not see it; a
    ``break``), and nobody will read its result. The pool's workers get Ctrl-C, as an interrupted call's do, and are
    killed if a record still computes after :data:`INTERRUPT_GRACE_S`: the exit no longer waits for them (a record in
    one long C call held it for as long as the call ran)."""
    with _pools_lock:
        if _pools_pid != os.getpid():
            return
        kept = list(_pools.items())
    for jobs, pool in kept:
        items = list((getattr(pool, "_pending_work_items", None) or {}).values())  # CPython's executor: id -> item
        running = [item.future for item in items if item.future.running()]
        if running:
            _stop_records(pool, running, jobs)


# concurrent.futures joins its executors' threads at exit through threading's exit hooks, which run before atexit's
# (last registered first): an executor with a record running waits for it there, so the records are stopped first.
threading._register_atexit(_stop_abandoned_records)  # type: ignore[attr-defined]  # concurrent.futures uses it too


def _interrupt_workers(pool: ProcessPoolExecutor) -> None:
    """Send Ctrl-C to the pool's workers: the records they compute stop, idle workers ignore it; none starts a
    record submitted before now, whenever it handles the signal (the moment goes through the pool's shared clock)."""
    clock = _clocks.get(pool)
    if clock is not None:
        clock[1] = time.monotonic()  # the moment first, then the count the workers look at
        clock[0] += 1
    for pid in list((getattr(pool, "_processes", None) or {}).keys()):
        try:
            os.kill(pid, signal.SIGINT)
        except OSError:  # already gone
            pass


class _InFlight(Generic[R]):
    """The records submitted to a pool and their futures, oldest first (at most ``window`` of them at a time)."""

    def __init__(self, on_result: Callable[[R], None] | None) -> None:
        self.futures: deque[Future] = deque()
        self.records: deque = deque()  # the records in flight, in order
        self.on_result = on_result

    def __len__(self) -> int:
        return len(self.futures)

    def submit(self, pool: ProcessPoolExecutor, context: tuple, fn: Callable[[T], R], record: T) -> None:
        """List ``record`` (first, so a pool that refuses it still has it listed), then queue it on ``pool`` with
        the time it was submitted (see :func:`_call`)."""
        self.records.append(record)
        self.futures.append(pool.submit(_call, (time.monotonic(), context), fn, record))

    def pop(self) -> R:
        """The oldest record's result (waited for), handed to ``on_result``; a broken pool raises here and the
        record stays listed, to be submitted again."""
        result = self.futures[0].result()
        self.futures.popleft()
        self.records.popleft()
        if self.on_result is not None:
            self.on_result(result)
        return result

    def cancel(self) -> None:
        """Cancel the futures not started yet (running ones finish)."""
        for future in self.futures:
            future.cancel()

    def forget(self) -> None:
        """Drop the futures without cancelling them: a pool that was killed fails them itself (cancelling them first
        races its manager thread, which then dies on a cancelled future before cleaning up: CPython gh-107219, fixed
        in 3.12)."""
        self.futures.clear()

    def take_back(self) -> list:
        """Cancel every future and return the records in flight, in order, to be submitted to new workers."""
        self.cancel()
        self.futures.clear()
        records = list(self.records)
        self.records.clear()
        return records


def _map_here(fn: Callable[[T], R], records: Iterable[T], on_result: Callable[[R], None] | None) -> Iterator[R]:
    """``fn(record)`` for every record, in this process."""
    for record in records:
        result = fn(record)
        if on_result is not None:
            on_result(result)
        yield result


def _submit_and_collect(pool: ProcessPoolExecutor, context: tuple, fn: Callable[[T], R], records: Iterable[T],
                        flight: _InFlight[R], window: int) -> Iterator[R]:
    """Submit the records to ``pool`` with at most ``window`` in flight; yield their results in record order."""
    for record in records:
        flight.submit(pool, context, fn, record)
        while len(flight) >= window:
            yield flight.pop()
    while len(flight):
        yield flight.pop()


def _stop_records(pool: ProcessPoolExecutor, futures: list[Future], jobs: int) -> bool:
    """Ctrl-C to the pool's workers (:func:`_interrupt_workers`), then wait up to :data:`INTERRUPT_GRACE_S` for the
    records of ``futures`` to stop (the queued ones come back :data:`NOT_STARTED`), and kill the pool's workers if
    some still compute (the next parallel call starts new ones). True when they were killed."""
    _interrupt_workers(pool)  # also tells idle workers to start none of the records queued so far
    _, running = wait(futures, timeout=INTERRUPT_GRACE_S)
    if not running:
        return False
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        process.kill()
    _forget_pool(jobs, pool)
    pool.shutdown(wait=False, cancel_futures=True)
    return True


def _forget_pool(jobs: int, pool: ProcessPoolExecutor) -> None:
    """Drop a broken ``pool`` from the kept pools (unless another already replaced it): the next call starts new
    workers."""
    with _pools_lock:
        if _pools.get(jobs) is pool:
            del _pools[jobs]


def _map_in_workers(fn: Callable[[T], R], records: Iterable[T], jobs: int, window: int,
                    on_result: Callable[[R], None] | None) -> Iterator[R]:
    """``fn(record)`` for every record, in record order, computed in this command's ``jobs`` workers.

    A kept pool found dead before the call's first result is replaced and the call's records run again on new
    workers, once; Ctrl-C interrupts the records the workers compute, and the workers start none of the call's
    records still queued.
    """
    records = iter(records)
    context = _caller_context()
    flight: _InFlight[R] = _InFlight(on_result)
    resubmit: list = []  # the records of a call that found its kept pool dead (submitted again to new workers)
    for attempt in (1, 2):
        pool = worker_pool(jobs)
        yielded = False
        try:
            for value in _submit_and_collect(pool, context, fn, itertools.chain(resubmit, records), flight, window):
                yielded = True
                yield value
            return
        except BrokenProcessPool:
            _forget_pool(jobs, pool)
            # A kept worker that died while idle (killed, out of memory) breaks the pool before this call's first
            # result: run the call's records again on new workers, once. A worker dying on a record raises.
            if attempt == 2 or yielded:
                raise
            resubmit = flight.take_back()
        except KeyboardInterrupt:
            if _stop_records(pool, list(flight.futures), jobs):
                flight.forget()  # the killed pool fails them; only a surviving pool's futures are cancelled below
            raise
        finally:
            flight.cancel()


def map_ordered(fn: Callable[[T], R], records: Iterable[T], *, jobs: int = 1, window: int | None = None,
                on_result: Callable[[R], None] | None = None) -> Iterator[R]:
    """Yield ``fn(record)`` for every record, in record order; ``jobs > 1`` runs them in this command's workers.

    ``on_result`` is called with each result as it is yielded (e.g. to move a progress bar). An exception in a
    worker is raised here, for the record that raised it. Leaving the loop early (or an exception) cancels the
    records still queued; Ctrl-C also interrupts the running ones. The workers stay for the next call; a worker that
    died raises :class:`~concurrent.futures.process.BrokenProcessPool` here and the next call starts new workers.
    """
    jobs = max(1, int(jobs))
    if jobs == 1:
        yield from _map_here(fn, records, on_result)
        return
    yield from _map_in_workers(fn, records, jobs, max(jobs, int(window or 2 * jobs)), on_result)


__all__ = ["START_METHOD", "default_jobs", "map_ordered", "shutdown_pools", "worker_pool"]
