"""core/engines/local.py under Ctrl-C: no record queued before the interrupt starts in a worker
afterwards, a worker stuck in a C call is killed after the grace period, and the next call runs as usual."""
from __future__ import annotations

import time
from pathlib import Path

import pytest

from devil_dataset.core.engines.local import INTERRUPT_GRACE_S, map_ordered

# A record that ignores Ctrl-C for minutes: one C call (the signal is seen only when it returns).
C_CALL = 10 ** 11


def _touch_then_wait(folder: str, item: tuple[int, str]) -> int:
    """Touch ``folder/<i>`` (the record started), then wait: ``"sleep"`` 30 s (Ctrl-C interrupts it), ``"c"`` one
    long C call, ``""`` not at all."""
    i, how = item
    Path(folder, str(i)).touch()
    if how == "sleep":
        time.sleep(30)
    elif how == "c":
        sum(range(C_CALL))
    return i


def _started(folder: Path) -> set[int]:
    return {int(p.name) for p in folder.iterdir()}


# A thread of the pool dying on an exception (ProcessPoolExecutor's manager thread failing a future cancelled before
# the pool broke, CPython gh-107219 before 3.12) fails the test instead of being a warning.
@pytest.mark.filterwarnings("error::pytest.PytestUnhandledThreadExceptionWarning")
@pytest.mark.parametrize("how", ["sleep", "c"])
def test_ctrl_c_starts_no_queued_record_and_returns_within_the_grace(tmp_path, how):
    import functools

    def interrupt(result):
        raise KeyboardInterrupt  # Ctrl-C arriving as the first result comes back

    records = [(0, ""), *((i, how) for i in range(1, 8))]  # 0 returns at once; the others wait
    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        list(map_ordered(functools.partial(_touch_then_wait, str(tmp_path)), records, jobs=2, window=8,
                         on_result=interrupt))
    took = time.monotonic() - start
    started = _started(tmp_path)
    time.sleep(2.0)  # a worker freed by the interrupt would take a queued record now
    assert _started(tmp_path) == started and len(started) <= 3  # 0, the one running beside it, at most one more
    assert took < INTERRUPT_GRACE_S + 5
    assert list(map_ordered(abs, [-1, -2, -3], jobs=2)) == [1, 2, 3]  # later calls run (on new workers if killed)
