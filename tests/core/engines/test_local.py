"""The local engine: the same results, in record order, in-process and in worker processes that are kept for the
whole command (reused across calls, replaced when broken, usable after an early exit or Ctrl-C)."""
from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
import time
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import pytest

from devil_dataset.core.engines import Engine, get_engine
from devil_dataset.core.engines.local import default_jobs, map_ordered, shutdown_pools
from devil_dataset.core.errors import DevilError

#: filled in the test process only: a spawned worker starts without it (a forked one would inherit it)
_PARENT_ONLY: list[int] = []


def _slow_square(x: int) -> int:
    time.sleep(0.02 * (5 - x % 5))  # later records finish first
    return x * x


def _fail_on(bad: int, x: int) -> int:
    if x == bad:
        raise ValueError(f"record {x} is bad")
    return x


def _pid(seconds: float) -> int:
    time.sleep(seconds)
    return os.getpid()


_pending_sigint: list[int] = []  # in a worker: the Ctrl-C held back by _sigint_held


def _sigint_held(hold: bool, seconds: float) -> int:
    """In a worker: hold Ctrl-C back (noted, not handled, as when the scheduler has not run the worker yet) or
    give the engine's handler the one held back now."""
    from devil_dataset.core.engines import local

    if hold:
        signal.signal(signal.SIGINT, lambda signum, frame: _pending_sigint.append(signum))
    else:
        signal.signal(signal.SIGINT, local._on_interrupt)
        while _pending_sigint:
            local._on_interrupt(_pending_sigint.pop(), None)  # handled late, inside this record
    time.sleep(seconds)
    return os.getpid()


def _touch(folder: str, x: int) -> int:
    Path(folder, str(x)).write_text("ran")
    time.sleep(0.3)
    return x


def _exit_on(bad: int, x: int) -> int:
    if x == bad:
        os._exit(1)  # the worker dies as if killed
    time.sleep(0.05)
    return x


def _state(_) -> tuple[int, str | None, str]:
    return len(_PARENT_ONLY), os.environ.get("DEVIL_TEST_ENGINE"), os.getcwd()


def _worker_pids(jobs: int = 2) -> set[int]:
    """The PIDs of the (kept) workers: enough slow records that every worker takes some. On a loaded machine one
    worker can take them all while the other is still being scheduled: asked again with slower records (bounded)."""
    pids: set[int] = set()
    for attempt in range(6):
        pids = set(map_ordered(_pid, [0.1 * 2**attempt] * 4 * jobs, jobs=jobs))
        if len(pids) >= jobs:
            break
    return pids


def _wait_dead(pid: int, timeout: float = 10.0) -> None:
    """Until ``pid`` has exited (a zombie or gone)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            if Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] in ("Z", "X"):
                return
        except FileNotFoundError:
            return
        time.sleep(0.05)
    raise AssertionError(f"process {pid} still alive")


@pytest.fixture(autouse=True)
def fresh_pools():
    """Each test starts and ends without kept workers (they would outlive the test otherwise)."""
    shutdown_pools()
    yield
    shutdown_pools()


def test_results_in_record_order_with_workers():
    seen = []
    out = list(map_ordered(_slow_square, range(12), jobs=2, window=3, on_result=seen.append))
    assert out == [x * x for x in range(12)] == seen


def test_in_process_equals_workers():
    assert list(map_ordered(_slow_square, range(6), jobs=1)) == list(map_ordered(_slow_square, range(6), jobs=2))


def test_window_bounds_records_in_flight():
    consumed, yielded, most_ahead = [0], [0], [0]

    def records():
        for x in range(12):
            consumed[0] += 1
            most_ahead[0] = max(most_ahead[0], consumed[0] - yielded[0])
            yield x

    def seen(_):
        yielded[0] += 1

    assert list(map_ordered(_slow_square, records(), jobs=2, window=3, on_result=seen)) == [x * x for x in range(12)]
    assert most_ahead[0] <= 3


def test_workers_are_kept_across_calls_and_start_fresh():
    _PARENT_ONLY.append(1)
    try:
        first = _worker_pids()
        second = _worker_pids()
        state = set(map_ordered(_state, range(4), jobs=2))
    finally:
        _PARENT_ONLY.clear()
    assert len(first) == 2 and os.getpid() not in first
    assert second <= first  # the same processes served the second call
    assert state == {(0, None, os.getcwd())}  # spawned: nothing of the parent's memory, its working directory


def test_kept_workers_follow_the_environment_and_working_directory(monkeypatch, tmp_path):
    """A change made after the workers started (a new variable, another directory) reaches them, as it would reach
    new workers; the workers are the same."""
    before = _worker_pids()
    monkeypatch.setenv("DEVIL_TEST_ENGINE", "set")
    monkeypatch.chdir(tmp_path)
    assert set(map_ordered(_state, range(4), jobs=2)) == {(0, "set", str(tmp_path))}
    monkeypatch.delenv("DEVIL_TEST_ENGINE")
    assert {s[1] for s in map_ordered(_state, range(4), jobs=2)} == {None}
    assert _worker_pids() <= before


def test_worker_error_is_raised_for_its_record_and_workers_stay():
    before = _worker_pids()
    with pytest.raises(ValueError, match="record 3 is bad"):
        list(map_ordered(functools.partial(_fail_on, 3), range(8), jobs=2))
    assert _worker_pids() <= before


def test_leaving_early_cancels_the_queued_records(tmp_path):
    before = _worker_pids()
    for x in map_ordered(functools.partial(_touch, str(tmp_path)), range(40), jobs=2, window=40):
        assert x == 0
        break
    after = _worker_pids()  # runs once the records already handed to a worker are done
    assert len(list(tmp_path.iterdir())) <= 10  # those running and the few handed to the workers' pipe, not 40
    assert after <= before


def test_ctrl_c_interrupts_running_records_and_workers_stay():
    before = _worker_pids()

    def interrupt(_):
        raise KeyboardInterrupt  # as Ctrl-C in the main process while waiting for results

    with pytest.raises(KeyboardInterrupt):
        list(map_ordered(_pid, [0.5, 60.0, 60.0, 60.0], jobs=2, window=2, on_result=interrupt))
    after = _worker_pids()
    assert len(after) == 2 and after <= before  # both workers free: record 1's minute was interrupted


def test_ctrl_c_handled_late_by_a_worker_does_not_refuse_the_next_calls_records():
    """A worker handles Ctrl-C when the scheduler next runs it; on a loaded machine (CI, 2 cores) that can be after
    the caller's next call submitted its records. Those records run: the interrupt's moment is the caller's, not
    the moment the worker got round to it (which failed the next call with KeyboardInterrupt)."""
    before = _worker_pids()
    try:
        held: set[int] = set()
        for attempt in range(6):  # every worker holds Ctrl-C back (bounded: a loaded machine may favour one)
            held |= set(map_ordered(functools.partial(_sigint_held, True), [0.1 * 2**attempt] * 4, jobs=2))
            if held >= before:
                break
        assert held >= before

        def interrupt(_):
            raise KeyboardInterrupt

        with pytest.raises(KeyboardInterrupt):  # the caller's Ctrl-C: pending in both workers
            list(map_ordered(_pid, [0.0] * 4, jobs=2, window=4, on_result=interrupt))
        # the next call's records let the pending Ctrl-C in while they run: they finish, none is refused
        try:
            pids = list(map_ordered(functools.partial(_sigint_held, False), [0.2] * 6, jobs=2))
        except KeyboardInterrupt as refused:  # failed here, not as an interrupt of the whole test session
            pytest.fail(f"the next call was refused: {refused}")
        assert len(pids) == 6 and set(pids) <= before
    finally:
        shutdown_pools(2)  # a worker that ran none of them still holds Ctrl-C back


# A program whose loop body gets Ctrl-C (not the engine's wait for a result) while both workers are in one long C
# call that sees Ctrl-C only when it returns: the records are abandoned, and the exit must not wait for them.
_ABANDONED = """
import sys, time
sys.path.insert(0, sys.argv[1])
from spin import spin
from devil_dataset.core.engines.local import map_ordered

if __name__ == "__main__":
    try:
        for value in map_ordered(spin, [0, 10 ** 11, 10 ** 11, 10 ** 11], jobs=2, window=2):
            time.sleep(1.0)  # both workers are in their long call by now
            raise KeyboardInterrupt  # Ctrl-C handled in the loop's body
    except KeyboardInterrupt:
        print("interrupted", flush=True)
"""


def test_ctrl_c_in_the_loop_body_does_not_make_the_exit_wait_for_running_records(tmp_path):
    (tmp_path / "spin.py").write_text("def spin(n):\n    return sum(range(n))\n")  # minutes for 10 ** 11
    proc = subprocess.Popen([sys.executable, "-c", _ABANDONED, str(tmp_path)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=60)  # measured: 9 s (the workers get INTERRUPT_GRACE_S, then are killed)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise AssertionError("the program did not exit: its exit waited for the abandoned records") from None
    assert proc.returncode == 0 and out == "interrupted\n", err


def test_killed_worker_is_replaced_by_the_next_call():
    before = _worker_pids()
    victim = min(before)
    os.kill(victim, signal.SIGKILL)
    _wait_dead(victim)
    after = _worker_pids()
    assert len(after) == 2 and not after & before


def test_killed_worker_not_yet_seen_dead_is_retried_on_new_workers(monkeypatch):
    """The race of a worker dying just before a call: the pool still looks usable, the first submit breaks it;
    the call's records run again on new workers instead of failing."""
    from devil_dataset.core.engines import local

    before = _worker_pids()
    monkeypatch.setattr(local, "_usable", lambda pool: True)  # the death is not noticed before the submit
    victim = min(before)
    os.kill(victim, signal.SIGKILL)
    _wait_dead(victim)
    assert list(map_ordered(_slow_square, range(6), jobs=2)) == [x * x for x in range(6)]
    assert not _worker_pids() & before


def test_pool_found_broken_at_the_first_result_runs_every_record_again(monkeypatch):
    """The same race seen one step later: the submits succeed and the first result reports the broken pool. No
    record is lost: each of the call's records runs again on new workers (a record used to be dropped here)."""
    from concurrent.futures import Future

    from devil_dataset.core.engines import local

    class BrokenOnResult:
        def submit(self, *args, **kwargs):
            future: Future = Future()
            future.set_exception(BrokenProcessPool("a worker died"))
            return future

    real = local.worker_pool
    pools = iter([BrokenOnResult()])
    monkeypatch.setattr(local, "worker_pool", lambda jobs: next(pools, None) or real(jobs))
    assert list(map_ordered(_slow_square, range(6), jobs=2)) == [x * x for x in range(6)]


def test_worker_dying_mid_call_raises_and_the_next_call_starts_new_workers():
    before = _worker_pids()
    with pytest.raises(BrokenProcessPool):
        list(map_ordered(functools.partial(_exit_on, 2), range(6), jobs=2))
    assert list(map_ordered(_slow_square, range(6), jobs=2)) == [x * x for x in range(6)]
    assert not _worker_pids() & before


def test_close_stops_the_workers():
    eng = get_engine("local", jobs=2)
    before = set(eng.map_ordered(_pid, [0.2] * 8))
    eng.close()
    for pid in before:
        _wait_dead(pid)
    assert not set(eng.map_ordered(_pid, [0.2] * 8)) & before


def test_cost_runs_largest_first_in_workers():
    eng = get_engine("local", jobs=2)
    assert list(eng.map_ordered(_slow_square, [1, 4, 2, 3], cost=lambda x: x)) == [16, 9, 4, 1]
    assert list(eng.map_ordered(_slow_square, [1, 4, 2, 3], cost=lambda x: x)) == \
        list(Engine().map_ordered(_slow_square, [1, 4, 2, 3], cost=lambda x: x))


def test_engine_settings_are_checked():
    assert Engine() == get_engine("local", jobs=1) and not Engine().parallel
    assert get_engine("local", jobs=2).workers(gpu=True) == 2 and get_engine("local", jobs=2).task_gpus(gpu=True) == 0
    with pytest.raises(DevilError, match="jobs"):
        Engine("local", 0)
    with pytest.raises(DevilError, match="unknown engine"):
        Engine("threads")


def test_default_jobs_is_capped():
    assert 1 <= default_jobs() <= 2


def test_nothing_runs_before_the_first_result_is_asked_for():
    calls: list[int] = []
    results = map_ordered(calls.append, [1, 2])
    assert calls == []
    assert list(results) == [None, None] and calls == [1, 2]


def test_a_pool_broken_again_or_after_a_result_raises(monkeypatch):
    """The call's records run again on new workers once, and only while nothing was yielded yet."""
    from concurrent.futures import Future

    from devil_dataset.core.engines import local

    def future_of(result: object) -> Future:
        future: Future = Future()
        if isinstance(result, BaseException):
            future.set_exception(result)
        else:
            future.set_result(result)
        return future

    class AlwaysBroken:
        def submit(self, fn, context, record_fn, record):
            return future_of(BrokenProcessPool("a worker died"))

    class BrokenAfterOne:
        submitted = 0

        def submit(self, fn, context, record_fn, record):
            self.submitted += 1
            return future_of(record if self.submitted == 1 else BrokenProcessPool("a worker died"))

    pools = [AlwaysBroken(), AlwaysBroken()]
    monkeypatch.setattr(local, "worker_pool", lambda jobs: pools.pop(0))
    with pytest.raises(BrokenProcessPool):
        list(map_ordered(abs, range(3), jobs=2))
    assert pools == []  # tried twice

    pools = [BrokenAfterOne(), AlwaysBroken()]
    seen: list[int] = []
    with pytest.raises(BrokenProcessPool):
        for x in map_ordered(abs, range(4), jobs=2, window=2):
            seen.append(x)
    assert seen == [0] and len(pools) == 1  # no second try once a result was yielded
