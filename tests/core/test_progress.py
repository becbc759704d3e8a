"""devil_dataset/core/progress.py: log lines instead of a bar off a terminal, and stage timings."""
from __future__ import annotations

import io
import time

import pytest

from devil_dataset.core.progress import StageTimer, StageTiming, cpu_seconds, progress_bar, timings_text


def test_progress_bar_writes_lines_off_a_terminal():
    log = io.StringIO()
    for _ in progress_bar(range(20), desc="score", unit="clip", file=log, min_interval_s=0):
        pass
    lines = log.getvalue().splitlines()
    assert lines[0] == "score: 0/20 clips" and lines[-1].startswith("score: 20/20 clips done in ")
    assert len(lines) == 2 + 9  # start, one per tenth (not the last), end


def test_stage_timer_records_wall_and_cpu_and_reports():
    timings: list[StageTiming] = []
    lines: list[str] = []
    with StageTimer("work", timings, say=lines.append, number="1/2") as stage:
        end = time.process_time() + 0.05
        while time.process_time() < end:  # burn CPU
            pass
        stage.note = "busy"
    t = timings[0]
    assert (t.stage, t.note) == ("work", "busy") and t.cpu_s >= 0.04 and t.wall_s >= 0.04
    assert lines[0] == "[1/2] work ..." and lines[1].startswith("[1/2] work done in ") and lines[1].endswith("(busy)")


def test_stage_timer_records_a_failed_stage_without_the_done_line():
    timings, lines = [], []
    with pytest.raises(ValueError):
        with StageTimer("fails", timings, say=lines.append):
            raise ValueError("x")
    assert [t.stage for t in timings] == ["fails"] and lines == ["[] fails ..."]


def test_cpu_seconds_grows_and_timings_text():
    before = cpu_seconds()
    sum(range(200_000))
    assert cpu_seconds() >= before
    text = timings_text([StageTiming("build", 10.04, 20.06), StageTiming("plan", 1.0, 0.5, "39 units")])
    assert text.splitlines() == ["  stage        wall s    CPU s", "  build          10.0     20.1",
                                 "  plan            1.0      0.5  39 units"]


def test_cpu_seconds_counts_a_running_child_process():
    import subprocess
    import sys

    before = cpu_seconds()
    child = subprocess.Popen([sys.executable, "-c", "import time\nend = time.process_time() + 0.5\n"
                              "while time.process_time() < end: pass\ntime.sleep(30)"])
    try:
        deadline = time.time() + 20
        while cpu_seconds() - before < 0.4 and time.time() < deadline:
            time.sleep(0.1)
        assert cpu_seconds() - before >= 0.4  # counted while the child still runs (not reaped)
        assert child.poll() is None
    finally:
        child.kill()
        child.wait()


def test_progress_lines_say_interrupted_not_done():
    """Ctrl-C (or an error) in the loop body or inside the iterable: the last line never says "done"."""
    log = io.StringIO()
    bar = progress_bar(range(5), desc="inpaint", unit="clip", file=log, min_interval_s=0)
    with pytest.raises(KeyboardInterrupt):
        for i in bar:
            if i == 2:
                raise KeyboardInterrupt
    bar.close()  # a later close() (a finally clause) adds no "done" line
    del bar
    last = log.getvalue().splitlines()[-1]
    assert last.startswith("inpaint: 2/5 clips interrupted after ") and "done" not in log.getvalue()

    def ctrl_c_inside():
        yield 1
        raise KeyboardInterrupt

    log = io.StringIO()
    with pytest.raises(KeyboardInterrupt):
        for _ in progress_bar(ctrl_c_inside(), total=3, desc="score", file=log, min_interval_s=0):
            pass
    assert log.getvalue().splitlines()[-1].startswith("score: 1/3 it interrupted after ")

    log = io.StringIO()
    with pytest.raises(RuntimeError):
        with progress_bar(total=4, desc="render", unit="mask", file=log, min_interval_s=0) as bar:
            bar.update(1)
            raise RuntimeError("disk full")
    assert log.getvalue().splitlines()[-1].startswith("render: 1/4 masks failed (RuntimeError) after ")
