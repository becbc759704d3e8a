"""Engines: where a stage function runs over its records. Each gives the same results, in the same order.

- :func:`devil_dataset.core.engines.local.map_ordered`: in this process (``jobs=1``) or in the command's pool of
  local worker processes (started once, kept for every stage of the command) with bounded in-flight work.
- :func:`devil_dataset.core.engines.ray.map_ordered`: as Ray tasks on a Ray cluster (the ``ray`` extra), with
  declared CPU/GPU resources, bounded in-flight work and Ray's retries of tasks whose worker died.

:func:`get_engine` picks one by name; every parallel map of the package (the build's stages, the evaluation's
parts, the demo's clips, the HTML report's clips) goes through its ``map_ordered``.

    >>> eng = get_engine("local", jobs=1)
    >>> list(eng.map_ordered(abs, [-2, 3, -1])), eng.parallel
    ([2, 3, 1], False)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Iterator, TypeVar

from ..errors import DevilError, unknown_name
from . import ray as ray_engine
from .local import map_ordered, shutdown_pools
from .ray import require_ray

T = TypeVar("T")
R = TypeVar("R")

#: engine names accepted by ``--engine`` and ``engine=``
ENGINES = ("local", "ray")


@dataclass(frozen=True)
class Engine:
    """A named engine with its settings: ``local`` with ``jobs`` processes, or ``ray`` at ``address``.

    ``local`` with ``jobs`` 1 runs records in this process (``Engine()``); with more, in ``jobs`` worker processes
    started by the first parallel call and reused by every later one with the same ``jobs`` until exit (or
    :meth:`close`). For ``ray``, ``jobs`` > 1 caps the tasks in flight at ``2 * jobs``; otherwise the cap is twice
    the cluster's CPUs. ``address`` None joins ``RAY_ADDRESS`` or the already-initialised Ray, else starts a local
    one.
    """

    name: str = "local"
    jobs: int = 1
    address: str | None = None

    def __post_init__(self):
        if self.name not in ENGINES:
            raise unknown_name("engine", self.name, ENGINES)
        if not isinstance(self.jobs, int) or self.jobs < 1:
            raise DevilError(f"engine {self.name}: jobs must be an integer of at least 1, got {self.jobs!r}")

    @property
    def parallel(self) -> bool:
        """Whether records may run outside this process (worth prefetching a stage's work in parallel)."""
        return self.name == "ray" or self.jobs > 1

    def workers(self, *, gpu: bool = False) -> int:
        """How many tasks run at once: ``jobs``; on Ray with ``jobs`` 1, the cluster's GPUs (``gpu`` and the cluster
        has any), else its CPUs (Ray is connected to first).

            >>> get_engine("local", jobs=3).workers(gpu=True)
            3
        """
        if self.name != "ray" or self.jobs > 1:
            return self.jobs

        ray_engine.ensure_initialized(self.address)
        return (gpu and ray_engine.cluster_gpus()) or ray_engine.cluster_cpus()

    def task_gpus(self, *, gpu: bool = False) -> float:
        """The GPUs one task declares (``num_gpus`` of :meth:`map_ordered`): 1 on a Ray cluster with GPUs when
        ``gpu``, else 0 (local workers share this machine's GPUs).

            >>> get_engine("local", jobs=2).task_gpus(gpu=True)
            0
        """
        if self.name != "ray" or not gpu:
            return 0

        ray_engine.ensure_initialized(self.address)
        return 1 if ray_engine.cluster_gpus() else 0

    def close(self) -> None:
        """Stop the local worker processes of this engine's ``jobs`` now instead of at exit (the next parallel call
        starts new ones); nothing for Ray, whose workers belong to the cluster.

            >>> get_engine("local", jobs=2).close()
        """
        if self.name == "local":

            shutdown_pools(self.jobs)

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

            return ray_engine.map_ordered(fn, records, jobs=self.jobs, window=window, on_result=on_result,
                                          address=self.address, num_cpus=num_cpus, num_gpus=num_gpus)

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
        raise unknown_name("engine", engine, ENGINES)
    if address is not None and engine != "ray":
        raise DevilError("--ray-address needs --engine ray")
    if engine == "ray":

        require_ray()
    return Engine(engine, max(1, int(jobs)), address)


__all__ = ["ENGINES", "Engine", "get_engine", "largest_first"]
