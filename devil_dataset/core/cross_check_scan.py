"""The cross-check's pass over a distance matrix, one block of query rows at a time: compiled (numba), outside the GIL.

The exact matcher (:func:`devil_dataset.core.alignment.exact_cross_check`) computes the squared L2 distances of
every query row to every train column as exact integers, a block of query rows at a time, and needs:

- each query row's **first** nearest column (the lowest column index among equal distances, as OpenCV's
  ``BFMatcher``), and
- each train column's first nearest query row over all blocks (the lowest row index among equal distances).

A query is matched (cross-checked) when it is the first row at its nearest column's minimum. :class:`CrossCheckScan`
keeps the column minima and their first rows across blocks and the rows' nearest columns; :meth:`CrossCheckScan.add`
reads each block once. A block holds ``row_term[r] + col_term[c] + factor * block[r, c]``: the int8 product form's
raw products (factor -2 and its two integer terms, :mod:`devil_dataset.core.int8_products`) or distances already
(factor 1, zero terms; the float32 product's exact integers are read as they are). A row's first minimum is the
minimum of ``distance << 32 | column``, one integer reduction; a column's first row is kept by replacing it only on a
strictly smaller distance, rows in order.

Integers only, so every CPU and every vector width LLVM picks give the same matches. Compiled once per process with
numba (``nogil``, cached on disk by numba), so the matcher's other thread is not held up by the GIL; without it
numpy takes ~6 passes over each block in ~20 calls, holding the GIL between them: 9.7 ->
7.3 ms a pair of ~3,000 SIFT features on one Zen 4 core, the int8 product ~5.7 ms of it (docs/labelling.md).

    >>> import numpy as np
    >>> d = np.array([[4, 1, 1], [1, 9, 1]], np.int32)  # 2 query rows x 3 train columns
    >>> scan = CrossCheckScan(2, 3)
    >>> scan.add(d, np.zeros(2, np.int32), np.zeros(3, np.int32), 1, 0)
    >>> scan.matches().tolist()  # row 0 -> column 1 (first of two), row 1 -> column 0; both mutual
    [[1, 0], [0, 1]]
"""
from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

# Distances and terms are below 2^26 (SIFT: 128 dimensions of bytes, docs in core/int8_products.py), so int32 holds
# every sum exactly; the packed key is int64: distance << 32 | column.
_NO_DISTANCE = np.iinfo(np.int32).max
_KEY_BITS = 32
_KEY_MASK = (1 << _KEY_BITS) - 1
# The blocks the pass reads: int8 products (int32) or the float32 product's distances (exact integers below 2^24).
_BLOCK_DTYPES = (np.dtype(np.int32), np.dtype(np.float32))


def scan_block(block: np.ndarray, row_term: np.ndarray, col_term: np.ndarray, factor: int, row0: int,
               col_dist: np.ndarray, col_row: np.ndarray, best_col: np.ndarray) -> None:
    """One block's pass (the function numba compiles; plain Python when called as it is): for rows ``row0 + r``,
    ``best_col`` gets the first column at the row's minimum of ``row_term[r] + col_term[c] + factor * block[r, c]``;
    ``col_dist`` / ``col_row`` (int32 [columns]) the column minima so far and the first row at each."""
    rows, cols = block.shape
    f = np.int32(factor)
    for r in range(rows):
        rt = np.int32(row_term[r])
        row = np.int32(row0 + r)
        line = block[r]
        best = np.int64(0x7FFFFFFFFFFFFFFF)
        for c in range(cols):
            d = np.int32(np.int32(rt + col_term[c]) + np.int32(f * line[c]))
            best = min(best, (np.int64(d) << _KEY_BITS) | np.int64(c))
            if d < col_dist[c]:  # strict: an earlier row keeps a tie, as OpenCV
                col_dist[c] = d
                col_row[c] = row
        best_col[row0 + r] = best & _KEY_MASK


@functools.lru_cache(maxsize=1)
def compiled_scan_block() -> Callable[..., Any]:
    """:func:`scan_block` compiled by numba (without the GIL, bounds checks off; the machine code is cached on disk by
    numba, so a process compiles it only when the cache has none for this CPU, or every time where numba finds no
    writable cache folder).

    >>> callable(compiled_scan_block())
    True
    """
    import numba  # loaded on first use (~0.3 s)

    try:
        return numba.njit(nogil=True, cache=True, boundscheck=False)(scan_block)
    except RuntimeError:  # numba found no writable cache folder (read-only install and home): compile per process
        return numba.njit(nogil=True, cache=False, boundscheck=False)(scan_block)


class CrossCheckScan:
    """The state of one cross-check over ``rows`` query rows and ``cols`` train columns (see the module): feed every
    block in row order with :meth:`add`, then read :meth:`matches`."""

    def __init__(self, rows: int, cols: int) -> None:
        self.rows, self.cols = rows, cols
        self.col_dist = np.full(cols, _NO_DISTANCE, np.int32)
        self.col_row = np.full(cols, -1, np.int32)
        self.best_col = np.zeros(rows, np.int64)
        self._next_row = 0
        self._scan = compiled_scan_block()

    def add(self, block: np.ndarray, row_term: np.ndarray, col_term: np.ndarray, factor: int, row0: int) -> None:
        """Scan query rows ``row0 : row0 + len(block)`` (``block`` [rows, cols], C-contiguous rows: int32, or float32
        holding integers below 2^24, such as the float32 product's distances; int32 ``row_term`` [rows] and
        ``col_term`` [cols]); blocks must come in row order, each once."""
        if row0 != self._next_row or block.shape[1] != self.cols or block.dtype not in _BLOCK_DTYPES:
            raise ValueError(f"block of rows {row0}.. ({block.dtype} {block.shape}) does not continue a scan at row "
                             f"{self._next_row} over {self.cols} int32 or float32 columns")
        self._scan(block, row_term, col_term, factor, row0, self.col_dist, self.col_row, self.best_col)
        self._next_row = row0 + len(block)

    def matches(self) -> np.ndarray:
        """The cross-checked matches as int64 [K, 2] rows of (train column, query row), ascending in query row."""
        if self._next_row != self.rows:
            raise ValueError(f"the scan has seen {self._next_row} of {self.rows} query rows")
        mutual = np.nonzero(self.col_row[self.best_col] == np.arange(self.rows))[0]
        return np.stack([self.best_col[mutual], mutual], axis=1).astype(np.int64)


__all__ = ["CrossCheckScan", "compiled_scan_block", "scan_block"]
