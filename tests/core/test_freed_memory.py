"""Freed memory reused in the package's own processes: a large block freed and allocated again is not faulted in
again; the ``devil`` command and the local engine's workers set it, importing the package does not."""
from __future__ import annotations

import subprocess
import sys

import pytest

from devil_dataset.core.engines.local import map_ordered

# A fresh process: 64 MB blocks from glibc's malloc (above its largest adaptive mmap threshold, 32 MB; numpy would
# ask the kernel for huge pages) written, freed and allocated again; prints the minor page faults of the last four.
ROUNDS = r"""
import ctypes, resource, sys
libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
if sys.argv[1] == "kept":
    from devil_dataset.core.freed_memory import reuse_freed_memory
    assert reuse_freed_memory()
elif sys.argv[1] == "imported":
    import devil_dataset, devil_dataset.eval, devil_dataset.core.freed_memory


def round_trip():  # a 64 MB block through malloc, every byte written (as a network's output), then freed
    block = libc.malloc(64 << 20)
    ctypes.memset(block, 1, 64 << 20)
    libc.free(block)


round_trip()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(4):
    round_trip()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""
def _faults(way: str) -> int:
    out = subprocess.run([sys.executable, "-c", ROUNDS, way], capture_output=True, text=True, check=True)
    return int(out.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc (Linux) is what it tunes")
def test_a_freed_large_block_is_reused_instead_of_faulted_in_again():
    default, imported, kept = _faults("default"), _faults("imported"), _faults("kept")
    # each round maps 64 MB again: every page faulted and zeroed (4 KB pages; 2 MB ones where the kernel's
    # transparent huge pages are "always": 32 a block)
    assert default >= 4 * 32
    assert imported >= default // 2  # importing the package leaves the allocator alone
    assert kept < 8  # the freed block is reused


def _second_block_faults(_) -> int:
    import ctypes
    import resource

    libc = ctypes.CDLL("libc.so.6")
    libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    faults = []
    for _ in range(2):
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        block = libc.malloc(64 << 20)
        ctypes.memset(block, 1, 64 << 20)
        libc.free(block)
        faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
    return faults[1]  # the second block: reused when the worker keeps freed memory


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc (Linux) is what it tunes")
def test_the_local_engines_workers_reuse_freed_memory():
    assert all(f < 8 for f in map_ordered(_second_block_faults, range(2), jobs=2))


def test_the_devil_command_sets_it_before_the_subcommand_runs(monkeypatch, capsys):
    from devil_dataset.cli import main
    from devil_dataset.core import freed_memory

    calls: list[str] = []
    monkeypatch.setattr(freed_memory, "reuse_freed_memory", lambda: calls.append("set") or True)
    assert main(["weights", "list"]) == 0
    assert calls == ["set"]
