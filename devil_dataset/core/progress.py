"""Progress of long work: a tqdm bar in a terminal, plain log lines when stderr is not a terminal.

tqdm hides itself when its output is not a terminal (``disable=None``), so a log file or a CI job would show
nothing for minutes. :func:`progress_bar` keeps the bar in a terminal and otherwise prints one line when the
work starts, one at every tenth of it (at most one a second) and one when it ends::

    inpaint: 0/150 videos
    inpaint: 15/150 videos (10%), 12.3 s
    ...
    inpaint: 150/150 videos done in 118.4 s

    >>> import io
    >>> log = io.StringIO()
    >>> for _ in progress_bar(range(3), desc="score", unit="clip", file=log, min_interval_s=0):
    ...     pass
    >>> print(log.getvalue().splitlines()[0])
    score: 0/3 clips

A long command made of stages records each stage's wall and CPU seconds with :class:`StageTimer`
(:class:`StageTiming`; :func:`timings_text` prints them as a table).
"""
from __future__ import annotations

import os
import resource
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Callable, Iterable, Iterator, Sequence

from tqdm.auto import tqdm

# A log line at every tenth of the work (and the first and last), never more often than once a second.
LOG_STEPS = 10
LOG_MIN_INTERVAL_S = 1.0


def _is_terminal(stream: IO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


class LineProgress:
    """tqdm's ``update``/``close``/iteration interface, writing plain lines (for logs)."""

    def __init__(self, iterable: Iterable | None = None, *, total: int | None = None, desc: str = "",
                 unit: str = "it", file: IO | None = None, min_interval_s: float = LOG_MIN_INTERVAL_S):
        if total is None and iterable is not None and hasattr(iterable, "__len__"):
            total = len(iterable)  # type: ignore[arg-type]
        self.iterable, self.total, self.desc, self.file = iterable, total, desc, file or sys.stderr
        self.unit = unit if unit.endswith("s") or unit == "it" else unit + "s"
        self.min_interval_s = min_interval_s
        self.n, self.start, self.closed = 0, time.perf_counter(), False
        self._last_step, self._last_time = 0, self.start
        self._write(f"{self._count()}")

    def _count(self) -> str:
        return f"{self.n}/{self.total} {self.unit}" if self.total is not None else f"{self.n} {self.unit}"

    def _write(self, text: str) -> None:
        print(f"{self.desc}: {text}" if self.desc else text, file=self.file, flush=True)

    def update(self, n: int = 1) -> None:
        self.n += n
        if not self.total:
            return
        step = min(LOG_STEPS, self.n * LOG_STEPS // self.total)
        now = time.perf_counter()
        if step > self._last_step and self.n < self.total and now - self._last_time >= self.min_interval_s:
            self._last_step, self._last_time = step, now
            self._write(f"{self._count()} ({100 * self.n // self.total}%), {now - self.start:.1f} s")

    def set_postfix_str(self, text: str) -> None:  # tqdm interface; lines carry counts only
        pass

    def close(self) -> None:
        """The last line: ``desc: 150/150 videos done in 118.4 s``."""
        if not self.closed:
            self.closed = True
            self._write(f"{self._count()} done in {time.perf_counter() - self.start:.1f} s")

    def interrupt(self, reason: str = "interrupted") -> None:
        """The last line of work that did not finish (an exception, Ctrl-C): ``desc: 3/150 videos interrupted
        after 2.1 s``; never "done"."""
        if not self.closed:
            self.closed = True
            self._write(f"{self._count()} {reason} after {time.perf_counter() - self.start:.1f} s")

    def __iter__(self) -> Iterator:
        try:
            for item in self.iterable or ():
                yield item
                self.update(1)
        except GeneratorExit:  # the loop over us stopped early (an exception in its body, Ctrl-C)
            if self.total is None or self.n < self.total:
                self.interrupt()
            self.close()
            raise
        except BaseException as exc:
            interrupted = isinstance(exc, KeyboardInterrupt)
            self.interrupt("interrupted" if interrupted else f"failed ({type(exc).__name__})")
            raise
        self.close()

    def __enter__(self) -> "LineProgress":
        return self

    def __exit__(self, exc_type, *exc) -> None:
        if exc_type is None:
            self.close()
        else:
            interrupted = issubclass(exc_type, KeyboardInterrupt)
            self.interrupt("interrupted" if interrupted else f"failed ({exc_type.__name__})")


def progress_bar(iterable: Iterable | None = None, *, total: int | None = None, desc: str = "", unit: str = "it",
                 enabled: bool = True, file: IO | None = None, leave: bool = True,
                 min_interval_s: float = LOG_MIN_INTERVAL_S, **tqdm_kwargs):
    """A tqdm bar when ``file`` (default stderr) is a terminal, :class:`LineProgress` lines otherwise.

    ``enabled=False`` gives a silent tqdm (same interface, no output). A transient inner bar (``leave=False``,
    e.g. frames of one video) shows in a terminal only: in a log, the enclosing bar's lines are enough.
    """

    stream = file or sys.stderr
    terminal = _is_terminal(stream)
    if not enabled or (not terminal and not leave):
        return tqdm(iterable, total=total, desc=desc, unit=unit, disable=True, **tqdm_kwargs)
    if terminal:
        return tqdm(iterable, total=total, desc=desc, unit=unit, file=stream, leave=leave, **tqdm_kwargs)
    return LineProgress(iterable, total=total, desc=desc, unit=unit, file=stream, min_interval_s=min_interval_s)


@dataclass
class StageTiming:
    """Wall and CPU seconds of one stage (CPU: this process and its worker processes, :func:`cpu_seconds`)."""

    stage: str
    wall_s: float
    cpu_s: float
    note: str = ""


def _live_children_cpu_seconds() -> float:
    """CPU seconds of this process's running child processes (e.g. a worker pool kept for the whole command),
    read from ``/proc`` (Linux); 0 where there is no ``/proc``."""
    proc, me, total = Path("/proc"), str(os.getpid()), 0
    if not proc.is_dir():
        return 0.0
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # exited meanwhile
            continue
        fields = stat[stat.rindex(")") + 2:].split()  # after "pid (comm) ": state, ppid, ...
        if fields[1] == me:
            total += int(fields[11]) + int(fields[12])  # utime, stime (clock ticks)
    return total / os.sysconf("SC_CLK_TCK")


def cpu_seconds() -> float:
    """User + system CPU seconds of this process and of its child processes, finished or running.

    >>> cpu_seconds() > 0
    True
    """
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime + _live_children_cpu_seconds()


class StageTimer:
    """Context manager appending a :class:`StageTiming` of its block to ``timings``.

    ``say`` (if given) gets ``[number] name ...`` when the stage starts and, when it ends without an exception,
    ``[number] name done in W s wall, C s CPU (note)``; ``note`` may be set inside the block.

    >>> timings, lines = [], []
    >>> with StageTimer("plan", timings, say=lines.append, number="2/5") as stage:
    ...     stage.note = "reused"
    >>> lines[0], lines[1].startswith("[2/5] plan done in "), lines[1].endswith("(reused)"), timings[0].note
    ('[2/5] plan ...', True, True, 'reused')
    """

    def __init__(self, name: str, timings: list[StageTiming], note: str = "",
                 say: Callable[[str], None] | None = None, number: str = ""):
        self.name, self.timings, self.note, self.say, self.number = name, timings, note, say, number

    def __enter__(self) -> "StageTimer":
        self.wall, self.cpu = time.perf_counter(), cpu_seconds()
        if self.say:
            self.say(f"[{self.number}] {self.name} ...")
        return self

    def __exit__(self, exc_type, *exc) -> None:
        timing = StageTiming(self.name, time.perf_counter() - self.wall, cpu_seconds() - self.cpu, self.note)
        self.timings.append(timing)
        if self.say and exc_type is None:
            note = f" ({self.note})" if self.note else ""
            self.say(f"[{self.number}] {self.name} done in {timing.wall_s:.1f} s wall, {timing.cpu_s:.1f} s CPU{note}")


def timings_text(timings: Sequence[StageTiming]) -> str:
    """The stage timings as an indented plain-text table (one line per stage).

    >>> print(timings_text([StageTiming("build", 1.25, 2.5, "reused")]))
      stage        wall s    CPU s
      build           1.2      2.5  reused
    """
    lines = [f"  {'stage':10s} {'wall s':>8s} {'CPU s':>8s}"]
    for t in timings:
        lines.append(f"  {t.stage:10s} {t.wall_s:8.1f} {t.cpu_s:8.1f}  {t.note}".rstrip())
    return "\n".join(lines)


__all__ = ["LineProgress", "StageTimer", "StageTiming", "cpu_seconds", "progress_bar", "timings_text"]
