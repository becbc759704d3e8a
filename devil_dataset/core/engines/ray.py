"""The Ray engine: map a stage function over records as Ray tasks on a Ray cluster (the ``ray`` extra).

Same contract as :func:`devil_dataset.core.engines.local.map_ordered`: results come back in record order, at most
``window`` tasks are in flight (backpressure: memory does not grow with the number of records), an exception
raised by ``fn`` is raised here for its record. Each task declares its resources (``num_cpus``, ``num_gpus``), so
Ray packs them onto the cluster's nodes; a task whose worker process dies (killed, out of memory, node lost) is
run again by Ray up to :data:`MAX_RETRIES` times, so stage functions must be idempotent (the build's are: they
write their outputs atomically and skip what is already written). ``fn`` and the records are shipped with
cloudpickle; output paths must be on a filesystem every node sees.

Ray is imported only when a function here runs, so this module imports without it.

    >>> list(map_ordered(abs, [-2, 3, -1], address="local"))  # doctest: +SKIP
    [2, 3, 1]
"""
from __future__ import annotations

import logging
from collections import deque
from typing import Callable, Iterable, Iterator, TypeVar

from ..errors import DevilError

T = TypeVar("T")
R = TypeVar("R")

#: retries of a task whose worker process died (Ray's ``max_retries``; application exceptions are not retried)
MAX_RETRIES = 3
#: the message of a missing Ray, naming the extra that installs it
INSTALL_HINT = 'the Ray engine needs Ray: pip install "devil-dataset[ray]"'

_remote_call = None


def require_ray():
    """Import and return the ``ray`` module, or raise :class:`DevilError` naming the extra.

        >>> require_ray().__name__  # doctest: +SKIP
        'ray'
    """
    try:
        import ray
    except ImportError as exc:
        raise DevilError(INSTALL_HINT) from exc
    return ray


def ensure_initialized(address: str | None = None):
    """Connect this process to Ray once: ``address`` (``host:port``, ``auto`` or ``local``), else ``RAY_ADDRESS``
    or a new local cluster. An already-initialised Ray is reused as is. Returns the ``ray`` module."""
    ray = require_ray()
    if not ray.is_initialized():
        try:
            ray.init(address=address, include_dashboard=False, logging_level=logging.WARNING,
                     configure_logging=True, log_to_driver=True)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise DevilError(f"cannot connect to the Ray cluster at {address or 'RAY_ADDRESS/local'}: {exc}") from exc
    return ray


def cluster_cpus() -> int:
    """CPUs of the connected cluster (at least 1)."""
    ray = require_ray()
    return max(1, int(ray.cluster_resources().get("CPU", 1)))


def cluster_gpus() -> int:
    """GPUs of the connected cluster (0 when none)."""
    ray = require_ray()
    return int(ray.cluster_resources().get("GPU", 0))


def _call(fn, record):
    return fn(record)


def map_ordered(fn: Callable[[T], R], records: Iterable[T], *, jobs: int = 1, window: int | None = None,
                on_result: Callable[[R], None] | None = None, address: str | None = None, num_cpus: float = 1,
                num_gpus: float = 0, max_retries: int = MAX_RETRIES) -> Iterator[R]:
    """Yield ``fn(record)`` for every record, in record order, each computed by a Ray task.

    ``window`` caps the tasks in flight (default ``2 * jobs`` when ``jobs > 1``, else twice the cluster's CPUs);
    ``on_result`` is called with each result as it is yielded. Leaving the loop early cancels what is in flight.
    """
    global _remote_call
    ray = ensure_initialized(address)
    if _remote_call is None:
        _remote_call = ray.remote(_call)
    task = _remote_call.options(num_cpus=num_cpus, num_gpus=num_gpus, max_retries=max_retries,
                                retry_exceptions=False)
    if window is None:
        window = 2 * (jobs if jobs > 1 else cluster_cpus())
    window = max(1, int(window))
    fn_ref = ray.put(fn)  # shipped once, not once per record
    pending: deque = deque()

    def pop():
        result = ray.get(pending.popleft())
        if on_result is not None:
            on_result(result)
        return result

    try:
        for record in records:
            pending.append(task.remote(fn_ref, record))
            while len(pending) >= window:
                yield pop()
        while pending:
            yield pop()
    finally:
        for ref in pending:
            try:
                ray.cancel(ref)
            except Exception:  # noqa: BLE001 - best effort: the task may have finished or its node gone
                pass


__all__ = ["INSTALL_HINT", "MAX_RETRIES", "cluster_cpus", "cluster_gpus", "ensure_initialized", "map_ordered",
           "require_ray"]
