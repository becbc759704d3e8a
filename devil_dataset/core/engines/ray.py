"""The Ray engine: map a stage function over records as Ray tasks on a Ray cluster (the ``ray`` extra).

Same contract as :func:`devil_dataset.core.engines.local.map_ordered`: results come back in record order, at most
``window`` tasks are in flight (backpressure: memory does not grow with the number of records), an exception
raised by ``fn`` is raised here for its record. Each task declares its resources (``num_cpus``, ``num_gpus``), so
Ray packs them onto the cluster's nodes; a task whose worker process dies (killed, out of memory, node lost) is
run again by Ray up to :data:`MAX_RETRIES` times, so stage functions must be idempotent (the build's are: they
write their outputs atomically and skip what is already written). ``fn`` and the records are shipped with
cloudpickle; output paths must be on a filesystem every node sees.

Each task runs pinned as the ``devil`` command is: its worker process starts with the environment pins (Ray's
``runtime_env`` ``env_vars``: those of this process, or those :func:`~devil_dataset.core.cpu_pins.pinned_environment`
gives on this machine; the cluster's nodes are x86-64 machines with AVX2, as the driver), and the task pins OpenCV
for the worker (:func:`~devil_dataset.core.cpu_pins.pin_process`) before it runs ``fn``.

Ray is imported only when a function here runs, so this module imports without it.

    >>> list(map_ordered(abs, [-2, 3, -1], address="local"))  # doctest: +SKIP
    [2, 3, 1]
"""
from __future__ import annotations

import contextlib
import logging
import os
import secrets
import sys
from collections import deque
from pathlib import Path
from typing import Callable, Iterable, Iterator, TypeVar

from ..cpu_pins import AVX2_PINS, pin_process, pinned_environment
from ..errors import DevilError
from ..freed_memory import reuse_freed_memory

T = TypeVar("T")
R = TypeVar("R")

#: retries of a task whose worker process died (Ray's ``max_retries``; application exceptions are not retried)
MAX_RETRIES = 3
#: the message of a missing Ray, naming the extra that installs it
INSTALL_HINT = 'the Ray engine needs Ray: pip install "devil-dataset[ray]"'
#: Ray's token authentication (Ray >= 2.52, https://docs.ray.io/en/latest/ray-security/token-auth.html): the mode
#: and token variables, and the token file a local ``ray.init()`` writes when it finds none (Ray 2.60)
AUTH_MODE_ENV, AUTH_TOKEN_ENV, AUTH_TOKEN_PATH_ENV = "RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH"
AUTH_FIX = ("give this command the cluster's token (`ray get-auth-token` on the head node prints it; put it in "
            "RAY_AUTH_TOKEN or ~/.ray/auth_token on this machine), or, on a trusted network only, start every node "
            "and run this command with RAY_AUTH_MODE=disabled; see docs/cluster.md")

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


def default_token_file() -> Path:
    """The token file Ray reads when ``RAY_AUTH_TOKEN``/``RAY_AUTH_TOKEN_PATH`` are unset: ``~/.ray/auth_token``."""
    return Path.home() / ".ray" / "auth_token"


def token_sources() -> list[str]:
    """Where this process would take a Ray token from (Ray's precedence order), e.g. ``['~/.ray/auth_token']``."""
    found = [name for name in (AUTH_TOKEN_ENV, AUTH_TOKEN_PATH_ENV) if os.environ.get(name)]
    if default_token_file().is_file():
        found.append(str(default_token_file()))
    return found


def connection_error_message(address: str | None, exc: BaseException) -> str:
    """The CLI's message for a failed ``ray.init``: Ray's error, and where token authentication can explain it,
    the cause (a token mismatch) and the fix.

    >>> rejected = RuntimeError("Token authentication is enabled but the authentication token is invalid")
    >>> print(connection_error_message("127.0.0.1:6399", rejected))  # doctest: +ELLIPSIS
    cannot connect to the Ray cluster at 127.0.0.1:6399: Token authentication is enabled but the ... invalid
    cause: the cluster rejected this process's Ray token (a token mismatch). Fix: give this command the ...
    """
    text = f"cannot connect to the Ray cluster at {address or 'RAY_ADDRESS/local'}: {exc}"
    rejected = type(exc).__name__ == "AuthenticationError" or "token" in str(exc).lower() or \
        "authenticat" in str(exc).lower() or "unauthenticated" in str(exc).lower()
    mode = os.environ.get(AUTH_MODE_ENV, "")
    sources = token_sources()
    if rejected:
        return f"{text}\ncause: the cluster rejected this process's Ray token (a token mismatch). Fix: {AUTH_FIX}"
    if address not in (None, "local") and (sources or mode.lower() == "token") and mode.lower() != "disabled":
        held = ", ".join(sources) or "none found"
        return (f"{text}\npossible cause: a Ray token mismatch. Ray (>= 2.52) uses token authentication when "
                f"RAY_AUTH_MODE=token or a token exists (here: {held}; a local `ray.init()` writes "
                f"~/.ray/auth_token), and a cluster started with another token, or without one, refuses this "
                f"process. Fix: {AUTH_FIX}")
    return text


def ensure_initialized(address: str | None = None):
    """Connect this process to Ray once: ``address`` (``host:port``, ``auto`` or ``local``), else ``RAY_ADDRESS``
    or a new local cluster. An already-initialised Ray is reused as is. Returns the ``ray`` module.

    A failed connection raises :class:`DevilError` naming the address, Ray's error and, where Ray's token
    authentication explains it, the cause and the fix (:func:`connection_error_message`)."""
    ray = require_ray()
    if not ray.is_initialized():
        try:
            ray.init(address=address, include_dashboard=False, logging_level=logging.WARNING,
                     configure_logging=True, log_to_driver=True)
        except (ConnectionError, RuntimeError, ValueError, ray.exceptions.RayError) as exc:
            raise DevilError(connection_error_message(address, exc)) from exc
    return ray


@contextlib.contextmanager
def private_ray_token() -> Iterator[str]:
    """For tests and benchmarks that start their own local Ray: token authentication with a fresh token held in
    ``RAY_AUTH_TOKEN`` only, so Ray writes no ``~/.ray/auth_token`` (a token left there makes every later
    ``ray start`` on the machine require it). On exit the process's ``RAY_AUTH_*`` variables are restored, and a
    ``~/.ray/auth_token`` that appeared meanwhile is removed; one that was there before is never touched.

        >>> with private_ray_token() as token:
        ...     os.environ["RAY_AUTH_TOKEN"] == token, os.environ["RAY_AUTH_MODE"]
        (True, 'token')
    """
    names = (AUTH_MODE_ENV, AUTH_TOKEN_ENV, AUTH_TOKEN_PATH_ENV)
    saved = {name: os.environ.get(name) for name in names}
    token_file = default_token_file()
    had_file = token_file.exists()
    token = secrets.token_hex(32)
    os.environ.pop(AUTH_TOKEN_PATH_ENV, None)
    os.environ.update({AUTH_MODE_ENV: "token", AUTH_TOKEN_ENV: token})
    _reload_ray_auth()
    try:
        yield token
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        _reload_ray_auth()
        if not had_file:
            with contextlib.suppress(FileNotFoundError):
                token_file.unlink()


def _reload_ray_auth() -> None:
    """Make an already imported Ray read ``RAY_AUTH_*`` again: it caches the mode (its ``Config``) and the token
    when imported (Ray 2.60 does the same itself when a local ``ray.init()`` switches token auth on)."""
    raylet, ray = sys.modules.get("ray._raylet"), sys.modules.get("ray")
    if raylet is None or ray is None or ray.is_initialized():  # a connected Ray keeps what it connected with
        return
    with contextlib.suppress(AttributeError):
        raylet.Config.initialize("")
        raylet.AuthenticationTokenLoader.instance().reset_cache()


def cluster_cpus() -> int:
    """CPUs of the connected cluster (at least 1)."""
    ray = require_ray()
    return max(1, int(ray.cluster_resources().get("CPU", 1)))


def cluster_gpus() -> int:
    """GPUs of the connected cluster (0 when none)."""
    ray = require_ray()
    return int(ray.cluster_resources().get("GPU", 0))


def _call(fn, record):
    pin_process()  # OpenCV for this worker process; its environment pins came with its start (runtime_env)
    reuse_freed_memory()  # as the command's own process (core/freed_memory)
    return fn(record)


def worker_environment() -> dict[str, str]:
    """The pins a Ray worker starts with: this process's own (set by the ``devil`` command, or by the user), else
    those :func:`~devil_dataset.core.cpu_pins.pinned_environment` gives on this machine.

    >>> set(worker_environment()) <= set(AVX2_PINS)
    True
    """
    return {**pinned_environment(os.environ), **{name: os.environ[name] for name in AVX2_PINS if name in os.environ}}


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
                                retry_exceptions=False, runtime_env={"env_vars": worker_environment()})
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


__all__ = ["INSTALL_HINT", "MAX_RETRIES", "cluster_cpus", "cluster_gpus", "connection_error_message",
           "default_token_file", "ensure_initialized", "map_ordered", "private_ray_token", "require_ray",
           "token_sources", "worker_environment"]
