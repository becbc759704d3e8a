"""The compiled cross-check pass: the same state as its plain-Python source and OpenCV's tie rules, block by block."""
from __future__ import annotations

import numpy as np
import pytest

from devil_dataset.core import cross_check_scan as ccs


def _reference(dist: np.ndarray) -> np.ndarray:
    """Cross-checked (column, row) pairs by first minima along rows and along columns (numpy's first argmin)."""
    best_col = dist.argmin(axis=1)
    best_row = dist.argmin(axis=0)
    rows = np.nonzero(best_row[best_col] == np.arange(len(dist)))[0]
    return np.stack([best_col[rows], rows], axis=1).astype(np.int64)


def _scan(dist: np.ndarray, block: int, *, factor: int = 1, compiled: bool = True) -> ccs.CrossCheckScan:
    """Scan ``dist`` written as ``row_term + col_term + factor * block`` with random terms (factor -2: even parts)."""
    rng = np.random.default_rng(len(dist))
    rows, cols = dist.shape
    if factor == 1:
        row_term, col_term, stored = np.zeros(rows, np.int32), np.zeros(cols, np.int32), dist
    else:  # dist = row_term + col_term - 2 * stored, with stored chosen to make it so
        row_term = (2 * rng.integers(-1000, 1000, rows)).astype(np.int32)
        col_term = (2 * rng.integers(-1000, 1000, cols)).astype(np.int32)
        stored = (row_term[:, None] + col_term - dist) // 2
        dist = row_term[:, None] + col_term - 2 * stored  # the same when dist is even, by construction below
    scan = ccs.CrossCheckScan(rows, cols)
    if not compiled:
        scan._scan = ccs.scan_block  # the plain-Python source of the compiled function
    for start in range(0, rows, block):
        part = np.ascontiguousarray(stored[start:start + block], np.int32)
        scan.add(part, row_term[start:start + block], col_term, factor, start)
    return scan


@pytest.mark.parametrize("factor", [1, -2])
def test_compiled_pass_equals_the_plain_python_one_and_first_minima(factor):
    """Small distances on many columns: ties everywhere, within rows, columns and across blocks."""
    rng = np.random.default_rng(7)
    for trial in range(12):
        rows, cols = int(rng.integers(1, 40)), int(rng.integers(1, 30))
        dist = (rng.integers(0, 6, (rows, cols)) * 2).astype(np.int32)
        want = _reference(dist)
        for block in (1, 3, 16, 64):
            compiled = _scan(dist, block, factor=factor)
            plain = _scan(dist, block, factor=factor, compiled=False)
            assert np.array_equal(compiled.matches(), want), (trial, block)
            for name in ("col_dist", "col_row", "best_col"):
                assert np.array_equal(getattr(compiled, name), getattr(plain, name)), (trial, block, name)


def test_float32_distances_are_read_as_the_same_integers():
    """The float32 product's distances (exact integers) give the state of the same distances in int32."""
    rng = np.random.default_rng(9)
    dist = rng.integers(0, 2**22, (37, 29)).astype(np.int32)
    dist[:, 3] = dist[:, 7]  # ties within rows
    dist[5] = dist[30]  # and across blocks
    for compiled in (True, False):
        as_int, as_float = ccs.CrossCheckScan(37, 29), ccs.CrossCheckScan(37, 29)
        if not compiled:
            as_int._scan = as_float._scan = ccs.scan_block
        for start in range(0, 37, 16):
            rows = slice(start, start + 16)
            terms = np.zeros(len(dist[rows]), np.int32)
            as_int.add(np.ascontiguousarray(dist[rows]), terms, np.zeros(29, np.int32), 1, start)
            as_float.add(dist[rows].astype(np.float32), terms, np.zeros(29, np.int32), 1, start)
        for name in ("col_dist", "col_row", "best_col"):
            assert np.array_equal(getattr(as_int, name), getattr(as_float, name)), (compiled, name)
        assert np.array_equal(as_float.matches(), _reference(dist))


def test_an_earlier_row_keeps_a_column_tie_across_blocks():
    """Row 0 (block 0) and row 2 (block 1) are both at column 1's minimum: only row 0 is matched there."""
    dist = np.array([[5, 1, 9], [0, 7, 9], [8, 1, 9], [9, 9, 2]], np.int32)
    assert _scan(dist, 2).matches().tolist() == [[1, 0], [0, 1], [2, 3]]


def test_blocks_must_continue_the_scan():
    scan = ccs.CrossCheckScan(4, 3)
    terms = np.zeros(4, np.int32)
    with pytest.raises(ValueError, match="does not continue a scan at row 0"):
        scan.add(np.zeros((2, 3), np.int32), terms, terms[:3], 1, 2)
    with pytest.raises(ValueError, match="int32 or float32 columns"):
        scan.add(np.zeros((2, 3), np.float64), terms, terms[:3], 1, 0)
    scan.add(np.zeros((2, 3), np.int32), terms, terms[:3], 1, 0)
    with pytest.raises(ValueError, match="seen 2 of 4 query rows"):
        scan.matches()


def test_no_query_rows_give_no_matches():
    assert ccs.CrossCheckScan(0, 5).matches().shape == (0, 2)


def test_without_a_writable_cache_folder_the_pass_is_compiled_uncached(monkeypatch):
    """numba refuses ``cache=True`` at decoration when it finds no writable folder (a read-only install and home)."""
    import numba

    real = numba.njit
    asked = []

    def njit(**options):
        asked.append(options["cache"])
        if options["cache"]:
            raise RuntimeError("cannot cache function 'scan_block': no locator available for file")
        return real(**options)

    monkeypatch.setattr(numba, "njit", njit)
    ccs.compiled_scan_block.cache_clear()
    try:
        scan = ccs.compiled_scan_block()
        col_dist, col_row, best = np.full(2, 99, np.int32), np.full(2, -1, np.int32), np.zeros(1, np.int64)
        scan(np.array([[3, 1]], np.int32), np.zeros(1, np.int32), np.zeros(2, np.int32), 1, 0, col_dist, col_row,
             best)
        assert asked == [True, False] and best.tolist() == [1] and col_row.tolist() == [0, 0]
    finally:
        ccs.compiled_scan_block.cache_clear()
