"""Engines: where a stage function runs over its records. Each gives the same results, in the same order.

- :func:`devil_dataset.core.engines.local.map_ordered`: in this process (``jobs=1``) or in a pool of local worker
  processes with bounded in-flight work.
- :func:`devil_dataset.core.engines.ray.map_ordered`: as Ray tasks on a Ray cluster (the ``ray`` extra), with
  declared CPU/GPU resources, bounded in-flight work and Ray's retries of tasks whose worker died.

:func:`get_engine` picks one by name; the stages (``build``, ``evaluate_slice``) call its ``map_ordered``.

    >>> eng = get_engine("local", jobs=1)
    >>> list(eng.map_ordered(abs, [-2, 3, -1])), eng.parallel
    ([2, 3, 1], False)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Iterator, TypeVar

from ..errors import DevilError, UnknownNameError

T = TypeVar("T")
R = TypeVar("R")

#: engine names accepted by ``--engine`` and ``engine=``
ENGINES = ("local", "ray")


@dataclass(frozen=True)
class Engine:
    """A named engine with its settings: ``local`` with ``jobs`` processes, or ``ray`` at ``address``.

    For ``ray``, ``jobs`` > 1 caps the tasks in flight at ``2 * jobs``; otherwise the cap is twice the cluster's
    CPUs. ``address`` None joins ``RAY_ADDRESS`` or the already-initialised Ray, else starts a local one.
    """

    name: str = "local"
    jobs: int = 1
    address: str | None = None

    @property
    def parallel(self) -> bool:
        """Whether records may run outside this process (worth prefetching a stage's work in parallel)."""
        return self.name == "ray" or self.jobs > 1

    def map_ordered(self, fn: Callable[[T], R], records: Iterable[T], *, window: int | None = None,
                    on_result: Callable[[R], None] | None = None, num_cpus: float = 1,
                    num_gpus: float = 0, cost: Callable[[T], float] | None = None) -> Iterator[R]:
        """``fn(record)`` for every record, in record order (see the engines' ``map_ordered``).

        ``num_cpus`` / ``num_gpus``: the resources one record's task declares (Ray only).
        ``cost``: an estimate of a record's work; the records then run, and their results come back, largest first
        (longest-processing-time order, ties in record order), so no worker is left alone with a long task at the
        end. The order is a pure function of the records, so the results are the same on every engine.

            >>> list(get_engine("local").map_ordered(abs, [-1, 3, -2], cost=abs))
            [3, 2, 1]
        """
        if cost is not None:
            records = largest_first(records, cost)
        if self.name == "ray":
            from . import ray as ray_engine

            return ray_engine.map_ordered(fn, records, jobs=self.jobs, window=window, on_result=on_result,
                                          address=self.address, num_cpus=num_cpus, num_gpus=num_gpus)
        from .local import map_ordered

        return map_ordered(fn, records, jobs=self.jobs, window=window, on_result=on_result)


def largest_first(records: Iterable[T], cost: Callable[[T], float]) -> list[T]:
    """The records sorted by decreasing ``cost``, ties in their given order (a stable sort).

        >>> largest_first(["a", "ccc", "bb", "dd"], len)
        ['ccc', 'bb', 'dd', 'a']
    """
    items = list(records)
    order = sorted(range(len(items)), key=lambda i: -float(cost(items[i])))
    return [items[i] for i in order]


def get_engine(engine: "str | Engine" = "local", *, jobs: int = 1, address: str | None = None) -> Engine:
    """The :class:`Engine` named ``engine`` (an :class:`Engine` is returned as is).

    ``ray`` checks that Ray is importable and raises :class:`DevilError` naming the extra when it is not.

        >>> get_engine("nope")
        Traceback (most recent call last):
        ...
        devil_dataset.core.errors.UnknownNameError: unknown engine 'nope'; valid: local, ray
    """
    if isinstance(engine, Engine):
        return engine
    if engine not in ENGINES:
        raise UnknownNameError(f"unknown engine {engine!r}; valid: {', '.join(ENGINES)}")
    if address is not None and engine != "ray":
        raise DevilError("--ray-address needs --engine ray")
    if engine == "ray":
        from .ray import require_ray

        require_ray()
    return Engine(engine, max(1, int(jobs)), address)


__all__ = ["ENGINES", "Engine", "get_engine", "largest_first"]
