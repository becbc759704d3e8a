"""The evaluation networks' arithmetic: float32 (the reference), TF32 or bfloat16 around one forward pass.

:func:`network_precision` is the one place a mode is applied; every network wrapper of this package
(:class:`~devil_dataset.core.networks.inception.FIDInception`, :class:`~devil_dataset.core.networks.lpips.
LPIPSNetwork`, :class:`~devil_dataset.core.networks.raft.RAFTFlow`, :class:`~devil_dataset.core.networks.i3d.I3D`)
takes a ``precision`` at construction and runs its forward pass inside it, then hands back float32 (or float64)
values, whatever the mode.

- ``"float32"``: the reference. TF32 is explicitly **off** for matmuls and convolutions (PyTorch leaves cuDNN
  convolutions in TF32 by default on Ampere and later GPUs) and autocast is disabled, so the values do not depend
  on global torch flags set elsewhere in the process.
- ``"tf32"``: TensorFloat-32 matmuls and convolutions on a CUDA GPU (10-bit mantissa inputs, float32
  accumulation). On a CPU it is the same as float32 (:func:`effective_precision` says so): TF32 is a GPU format.
- ``"bf16"``: ``torch.autocast`` with bfloat16 on the tensors' device (CPU or CUDA); the operations autocast keeps
  in float32 run with TF32 off.

On the CPU every pass also runs on :data:`NETWORK_CPU_THREADS` intra-op thread (:func:`network_threads`) and the
wrappers feed the networks one sample at a time (:func:`sample_batches`): torch's CPU kernels split their sums
over the threads and pick kernels by batch shape, so the same frames gave other values with another thread count
or batch size. With both fixed, a network's output depends only on its input (and, across CPUs, on the
kernels :mod:`devil_dataset.core.cpu_pins` pins). The engines run clips in parallel processes instead.

The global flags (``torch.backends.*.fp32_precision`` where this torch has them, else
``torch.backends.cuda.matmul.allow_tf32`` / ``torch.backends.cudnn.allow_tf32`` and the float32 matmul precision)
are saved on entry and restored on exit, also when the pass raises. They are process-wide: do not run two
networks of different precisions in two threads at once (autocast itself is per thread).
``benchmarks/networks.py --precision`` measures each mode's deviation from float32 and its speed.

    >>> import torch
    >>> conv = torch.nn.Conv2d(3, 4, 3).eval()
    >>> x = torch.rand(1, 3, 8, 8, generator=torch.Generator().manual_seed(0))
    >>> with torch.inference_mode(), network_precision("bf16", "cpu"):
    ...     y = conv(x)
    >>> y.dtype, effective_precision("tf32", "cpu")
    (torch.bfloat16, 'float32')
    >>> network_precision("fp16")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    devil_dataset.core.errors.UnknownNameError: unknown network precision 'fp16'; did you mean ...
"""
from __future__ import annotations

import contextlib
import copy
import threading
from typing import Any, Iterator, TypeVar

import torch  # noqa: TID253

from . import NETWORK_CPU_TOLERANCE, PRECISIONS, check_precision
from .portable import portable_arithmetic, portable_in_force  # noqa: TID253

T = TypeVar("T")

#: Intra-op threads of every network pass on the CPU: a fixed count, so that sums split over threads are split the
#: same way on every machine (the engines parallelise over clips).
NETWORK_CPU_THREADS = 1
#: The autocast dtype of the ``"bf16"`` mode.
BF16_DTYPE = torch.bfloat16
# torch >= 2.9 ``fp32_precision`` switches (the legacy allow_tf32 flags map onto them): the GPU's matmuls and
# cuDNN convolutions / RNNs, which follow the mode, and oneDNN's (CPU), which stay IEEE float32 in every mode.
_GPU_SWITCHES = ("cuda.matmul", "cudnn.conv", "cudnn.rnn")
_CPU_SWITCHES = ("mkldnn.matmul", "mkldnn.conv", "mkldnn.rnn")


def precision_view(network: T, views: dict[str, T], precision: str, label: str) -> T:
    """``network`` computing in ``precision``: a shallow copy (the same modules and parameters, nothing reloaded) with
    its ``precision`` attribute set, kept in ``views`` (the table every view shares), so asking twice gives the same
    object. ``label`` names the caller in the error for an unknown precision.

    >>> class Net:
    ...     def __init__(self): self.precision, self.views = "float32", {"float32": self}
    >>> net = Net(); bf = precision_view(net, net.views, "bf16", "Net")
    >>> bf.precision, bf is precision_view(net, net.views, "bf16", "Net"), bf.views is net.views
    ('bf16', True, True)
    """
    check_precision(precision, prefix=f"{label}.at_precision: ")
    view = views.get(precision)
    if view is None:
        view = copy.copy(network)  # shares the modules, the parameters and this table of views
        view.precision = precision  # type: ignore[attr-defined]
        views[precision] = view
    return view


def effective_precision(precision: str, device: str | torch.device) -> str:
    """The arithmetic ``precision`` really gives on ``device``: ``"tf32"`` is ``"float32"`` off CUDA.

    >>> effective_precision("tf32", "cuda"), effective_precision("tf32", "cpu"), effective_precision("bf16", "cpu")
    ('tf32', 'float32', 'bf16')
    """
    check_precision(precision)
    if precision == "tf32" and str(device).split(":")[0] != "cuda":  # str: also a device name not resolved yet
        return "float32"
    return precision


def precision_provenance(precision: str, device: str | torch.device) -> dict[str, Any]:
    """What a results file records about a network's arithmetic: the mode asked for and the one applied, and how
    reproducible the values are (:func:`arithmetic_provenance`).

    >>> p = precision_provenance("tf32", "cpu")
    >>> p["precision"], p["precision_effective"], p["arithmetic"]["threads"]
    ('tf32', 'float32', 1)
    """
    return {"precision": check_precision(precision), "precision_effective": effective_precision(precision, device),
            "arithmetic": arithmetic_provenance(device)}


def arithmetic_provenance(device: str | torch.device) -> dict[str, Any]:
    """How a network's values were computed and where they are reproducible: on the CPU one sample
    per pass on :data:`NETWORK_CPU_THREADS` thread, and either bit-identical on every x86-64 CPU with AVX2, Intel and
    AMD alike (the pins of :mod:`devil_dataset.core.cpu_pins` in force and the portable kernels of
    :mod:`devil_dataset.core.networks.portable`), or within ``NETWORK_CPU_TOLERANCE`` (relative) of those values.
    GPU values are their own reference (their distance from the CPU's is measured by ``benchmarks/``).

    >>> a = arithmetic_provenance("cpu")
    >>> a["threads"], a["samples_per_pass"], a["tolerance_rel"] in (0.0, NETWORK_CPU_TOLERANCE)
    (1, 1, True)
    """

    if torch.device(device).type != "cpu":
        return {"device": str(device), "samples_per_pass": "batch_size", "reproducible": "on this GPU model and "
                "software only (a separate reference from the CPU values)"}
    portable, why = portable_in_force(device)
    return {"device": "cpu", "threads": NETWORK_CPU_THREADS, "samples_per_pass": 1, "pinned": portable, "why": why,
            "kernels": "portable" if portable else "native",
            "reproducible": "bit-identical on x86-64 CPUs with AVX2, Intel and AMD" if portable else
            f"within {NETWORK_CPU_TOLERANCE:g} (relative) of the portable values",
            "tolerance_rel": 0.0 if portable else NETWORK_CPU_TOLERANCE}


def _switch(path: str) -> Any:
    obj: Any = torch.backends
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def _has_fp32_precision_api() -> bool:
    return hasattr(torch.backends.cudnn, "conv") and hasattr(torch.backends.cudnn.conv, "fp32_precision")


def _save_flags() -> tuple[str, tuple[Any, ...]]:
    if _has_fp32_precision_api():
        return "fp32_precision", tuple(_switch(p).fp32_precision for p in _GPU_SWITCHES + _CPU_SWITCHES)
    return "legacy", (torch.get_float32_matmul_precision(), torch.backends.cudnn.allow_tf32)


def _set_flags(tf32: bool) -> None:
    if _has_fp32_precision_api():
        for p in _GPU_SWITCHES:
            _switch(p).fp32_precision = "tf32" if tf32 else "ieee"
        for p in _CPU_SWITCHES:
            _switch(p).fp32_precision = "ieee"
    else:  # torch < 2.9: "highest" = IEEE float32 matmuls, "high" = TF32 allowed
        torch.set_float32_matmul_precision("high" if tf32 else "highest")
        torch.backends.cudnn.allow_tf32 = tf32


def _restore_flags(saved: tuple[str, tuple[Any, ...]]) -> None:
    api, values = saved
    if api == "fp32_precision":
        for p, value in zip(_GPU_SWITCHES + _CPU_SWITCHES, values):
            _switch(p).fp32_precision = value
    else:
        torch.set_float32_matmul_precision(values[0])
        torch.backends.cudnn.allow_tf32 = values[1]


def float32_flags() -> dict[str, Any]:
    """The global float32 arithmetic flags now (what :func:`network_precision` saves and restores; tests).

    >>> sorted(float32_flags())[:1]
    ['api']
    """
    api, values = _save_flags()
    names = (_GPU_SWITCHES + _CPU_SWITCHES) if api == "fp32_precision" else ("float32_matmul_precision",
                                                                              "cudnn.allow_tf32")
    return {"api": api, **dict(zip(names, values))}


_threads_lock = threading.Lock()
_threads_active = 0  # network passes running now, in any thread of this process
_threads_saved = 0  # the thread count the first of them found


@contextlib.contextmanager
def network_threads(device: str | torch.device = "cpu") -> Iterator[None]:
    """Run the block on :data:`NETWORK_CPU_THREADS` torch thread when ``device`` is the CPU.

    torch's thread count is per thread (OpenMP) and process-wide at once (MKL, the count new threads start with), and
    the evaluation runs network passes in two threads (the read-ahead thread prepares the next clip's ground truth):
    every pass sets its own thread to one, and the count found by the first pass is restored when the last one ends,
    so no pass ever sees another count.

    >>> before = torch.get_num_threads()
    >>> with network_threads("cpu"):
    ...     torch.get_num_threads()
    1
    >>> torch.get_num_threads() == before
    True
    """
    global _threads_active, _threads_saved
    if torch.device(device).type != "cpu":
        yield
        return
    with _threads_lock:
        if _threads_active == 0:
            _threads_saved = torch.get_num_threads()
        _threads_active += 1
        # always: a new thread (the read-ahead) may report the process-wide count while its own OpenMP count is
        # still the default, and a pass with two OpenMP threads splits torch's reductions other ways
        torch.set_num_threads(NETWORK_CPU_THREADS)
    try:
        with portable_arithmetic() if portable_in_force(device)[0] else contextlib.nullcontext():
            yield
    finally:
        with _threads_lock:
            _threads_active -= 1
            if _threads_active == 0 and torch.get_num_threads() != _threads_saved:
                torch.set_num_threads(_threads_saved)


def sample_batches(n: int, device: str | torch.device, batch_size: int) -> list[slice]:
    """How ``n`` samples go through a network: one at a time on the CPU (a fixed partition, whatever the batch size
    asked for), in ``batch_size`` groups on a GPU (GPU values are their own reference).

    >>> sample_batches(3, "cpu", 8)
    [slice(0, 1, None), slice(1, 2, None), slice(2, 3, None)]
    >>> sample_batches(3, "cuda", 2)
    [slice(0, 2, None), slice(2, 3, None)]
    """
    size = 1 if torch.device(device).type == "cpu" else max(1, int(batch_size))
    return [slice(start, min(n, start + size)) for start in range(0, n, size)]


def network_precision(precision: str, device: str | torch.device = "cpu") -> contextlib.AbstractContextManager[None]:
    """Run the enclosed forward pass in ``precision`` (:data:`PRECISIONS`) on ``device``; see the module docstring.

    The name is checked when the call is made, before anything changes.
    """
    check_precision(precision)
    device_type = torch.device(device).type
    return _applied(precision, device_type)


@contextlib.contextmanager
def _applied(precision: str, device_type: str) -> Iterator[None]:
    saved = _save_flags()
    try:
        _set_flags(tf32=precision == "tf32" and device_type == "cuda")
        with network_threads(device_type):
            if precision == "bf16":
                with torch.autocast(device_type, dtype=BF16_DTYPE):
                    yield
            else:  # an autocast region opened by the caller does not leak into the reference
                with torch.autocast(device_type, enabled=False):
                    yield
    finally:
        _restore_flags(saved)


__all__ = ["BF16_DTYPE", "NETWORK_CPU_THREADS", "PRECISIONS", "arithmetic_provenance", "check_precision",
           "effective_precision", "float32_flags", "network_precision", "network_threads", "precision_provenance",
           "precision_view", "sample_batches"]
