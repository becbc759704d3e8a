"""Feature matching and similarity-RANSAC alignment shared by the video scorers and the baselines (the release's
alignment).

Features are computed once per frame (:func:`detect_features`) and matched per pair
(:func:`estimate_similarity`), which is what makes our camera-motion scorer fast: the release recomputed
them for every pair.

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> a = (rng.random((240, 320, 3)) * 255).astype(np.uint8)
    >>> b = np.roll(a, 5, axis=1)
    >>> m = estimate_similarity(detect_features(a, "sift"), detect_features(b, "sift"))
    >>> round(float(m[0, 2]))
    5
"""
from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Iterator

import cv2
import numpy as np

from .blas_threads import one_blas_thread
from .cross_check_scan import CrossCheckScan
from .cv_determinism import fast_simd, serial_opencv
from .int8_products import Int8Operands, block_products, int8_operands, one_omp_thread

# The release's SURF hessianThreshold (other SURF parameters are OpenCV defaults).
SURF_HESSIAN_THRESHOLD = 750
# The release's alignment: RANSAC reprojection threshold in pixels for estimateAffinePartial2D.
RANSAC_REPROJ_THRESHOLD = 5.0
# The release's alignment: fewer matches than this and the alignment fails.
MIN_MATCHES = 2
DETECTORS: tuple[str, ...] = ("surf", "sift", "orb")


# The release warps an all-ones float64 (``np.float``) mask; the dtype changes border pixels.
MASK_WARP_DTYPE = np.float64


@lru_cache(maxsize=1)
def surf_available() -> bool:
    """True when this OpenCV build includes the non-free SURF detector (pip wheels do not)."""
    try:
        cv2.xfeatures2d.SURF_create(SURF_HESSIAN_THRESHOLD)  # type: ignore[attr-defined]  # contrib-only module
        return True
    except (AttributeError, cv2.error):
        return False


def default_detector() -> str:
    """The paper's SURF where the OpenCV build has it, SIFT otherwise."""
    return "surf" if surf_available() else "sift"


def resolve_detector(detector: str | None) -> str:
    """Validate a detector name (``None`` = :func:`default_detector`)."""
    detector = default_detector() if detector is None else detector
    if detector not in DETECTORS:
        raise ValueError(f"unknown detector {detector!r}; valid: {', '.join(DETECTORS)}")
    if detector == "surf" and not surf_available():
        raise ValueError("detector 'surf' needs an OpenCV build with OPENCV_ENABLE_NONFREE (pip wheels lack it); "
                         "use 'sift' or 'orb'")
    return detector


def _create(detector: str):
    if detector == "surf":
        return cv2.xfeatures2d.SURF_create(SURF_HESSIAN_THRESHOLD)  # type: ignore[attr-defined]  # contrib-only
    if detector == "sift":
        return cv2.SIFT.create()  # = cv2.SIFT_create(), the name OpenCV's type stubs declare
    return cv2.ORB.create(nfeatures=2000)


@dataclass(frozen=True)
class Features:
    """Keypoint positions [N, 2] (x, y) and descriptors [N, D] of one frame, with the detector that made them."""

    points: np.ndarray
    descriptors: np.ndarray | None
    detector: str

    def __len__(self) -> int:
        return 0 if self.descriptors is None else len(self.points)

    @cached_property
    def exact_operands(self) -> ExactOperands | None:
        """This frame's operands of the exact matcher (:func:`exact_operands`), made once per frame: a frame is
        matched against many others (nine in the camera-motion scorer, a whole segment in the scene-motion walk)."""
        if self.descriptors is None or len(self) == 0:
            return None
        return exact_operands(self.descriptors, binary=self.detector == "orb")


def detect_features(frame: np.ndarray, detector: str | None = None, mask: np.ndarray | None = None) -> Features:
    """Detect keypoints and descriptors on a uint8 RGB frame [H, W, 3].

    ``mask`` (bool [H, W], optional) keeps only keypoints on True (background) pixels.
    """
    detector = resolve_detector(detector)
    if frame.dtype != np.uint8 or frame.ndim != 3 or frame.shape[2] != 3:
        raise ValueError(f"expected a uint8 RGB frame [H, W, 3], got {frame.dtype} {frame.shape}")
    cv_mask = None if mask is None else np.ascontiguousarray(mask, dtype=np.uint8) * 255
    with serial_opencv():  # pinned SIFT races across OpenCV threads (core/cv_determinism.py)
        keypoints, descriptors = _create(detector).detectAndCompute(np.ascontiguousarray(frame), cv_mask)
    # OpenCV's own conversion (the same float32 values as [kp.pt for kp in keypoints]: 0.02 ms instead of 2 ms for
    # 3,000 keypoints, time the labellers' other thread would wait for the GIL)
    points = np.asarray(cv2.KeyPoint.convert(keypoints), np.float32) if len(keypoints) else np.zeros((0, 2), np.float32)
    return Features(points, descriptors if len(keypoints) else None, detector)


def match_features(source: Features, target: Features) -> np.ndarray:
    """Cross-checked brute-force matches as an int array [K, 2] of (source index, target index).

    Query = target, train = source (the release's alignment): rows come in OpenCV's order, ascending target index.
    L2 norm, Hamming for ORB's binary descriptors; no ratio test. Cross-checked matches are mutual nearest
    neighbours, so the matches of the reversed pair are the same rows swapped and re-sorted
    (:func:`reverse_matches`), which is how the camera-motion scorer matches each unordered pair once.

    SIFT (integer-valued float descriptors) and ORB descriptors are matched by :func:`exact_cross_check`, a
    matrix-product form that gives exactly the matches of ``cv2.BFMatcher(norm, crossCheck=True)``; other
    descriptors (SURF) go through OpenCV's matcher.
    """
    query, train = target.descriptors, source.descriptors
    if query is None or train is None or len(source) == 0 or len(target) == 0:
        return np.zeros((0, 2), np.int64)
    q_ops, t_ops = target.exact_operands, source.exact_operands
    fast = None if q_ops is None or t_ops is None else exact_cross_check(q_ops, t_ops)
    if fast is not None:
        return fast
    norm = cv2.NORM_HAMMING if source.detector == "orb" else cv2.NORM_L2
    matches = cv2.BFMatcher(norm, crossCheck=True).match(query, train)
    return np.array([(m.trainIdx, m.queryIdx) for m in matches], np.int64).reshape(-1, 2)


# Bound on |descriptor|^2 sums below which float32 products of integer-valued descriptors are exact (< 2^24) and
# sqrt is injective on the integer squared distances (< 2^22), so comparing squared distances is comparing
# OpenCV's float32 L2 distances.
_EXACT_NORM_BOUND = 2.0**21
#: Query rows per block of the distance matrix (a 256 x 3,000 int32 block stays in cache; 256 measured
#: best with the compiled scan too, docs/labelling.md).
MATCH_BLOCK = 256


@dataclass(frozen=True)
class ExactOperands:
    """One descriptor set in the exact matcher's matrix-product forms (:func:`exact_operands`).

    ``values`` [N, D] are the integer-valued descriptors (float32; ORB's bits unpacked to 0/1), ``norms`` [N] their
    |v|^2 (float64, exact integers) and ``max_norm`` the largest. ``int8`` is their int8 form
    (:mod:`devil_dataset.core.int8_products`) where this process's int8 products are exact, else ``None``. The
    float32 form is made on first use: ``as_query`` [N, D + 2] = [-2 v, 1, |v|^2] and ``as_train`` [D + 2, N] = [v,
    |v|^2, 1] transposed (contiguous: the product is faster with it), so that ``query.as_query @ train.as_train`` is
    the matrix of squared L2 distances (Hamming for bit vectors). Both forms give the same integers.
    """

    values: np.ndarray
    norms: np.ndarray
    int8: Int8Operands | None = None

    @cached_property
    def max_norm(self) -> float:
        return float(self.norms.max()) if len(self.norms) else 0.0

    @cached_property
    def as_query(self) -> np.ndarray:
        v = self.values
        return np.hstack([v * np.float32(-2.0), np.ones((len(v), 1), np.float32), self._norms32])

    @cached_property
    def as_train(self) -> np.ndarray:
        v = self.values
        return np.ascontiguousarray(np.hstack([v, self._norms32, np.ones((len(v), 1), np.float32)]).T)

    @cached_property
    def _norms32(self) -> np.ndarray:
        return self.norms.astype(np.float32)[:, None]  # exact: integers below 2^21


def exact_operands(descriptors: np.ndarray, *, binary: bool, int8: bool = True) -> ExactOperands | None:
    """The exact matcher's operands of integer-valued float32 descriptors (SIFT) or uint8 bit strings (ORB,
    ``binary=True``, unpacked to 0/1 vectors); ``None`` when the descriptors are not integer-valued (SURF).
    ``int8=False`` leaves out the int8 form (the float32 product then runs; the matches are the same).

    >>> ops = exact_operands(np.array([[1, 2]], np.float32), binary=False)
    >>> ops.as_query.tolist(), ops.as_train.T.tolist(), ops.max_norm
    ([[-2.0, -4.0, 1.0, 5.0]], [[1.0, 2.0, 5.0, 1.0]], 5.0)
    """
    if binary:
        if descriptors.dtype != np.uint8:
            return None
        v = np.unpackbits(descriptors, axis=1).astype(np.float32)
    else:
        if descriptors.dtype != np.float32 or not np.array_equal(descriptors, np.round(descriptors)):
            return None
        v = descriptors
    norms = np.einsum("ij,ij->i", v, v, dtype=np.float64)
    if len(v) and norms.max() >= _EXACT_NORM_BOUND:  # float32 products would not be exact
        return None
    return ExactOperands(v, norms, int8_operands(v) if int8 else None)


def exact_cross_check(query: ExactOperands, train: ExactOperands) -> np.ndarray | None:
    """Cross-checked matches (train index, query index), ascending in query index, of two operand sets; ``None``
    when their squared distances could exceed exact float32 integers.

    Every entry of the distance matrix is an exact integer: one int8 product and two integer terms where both sets
    have the int8 form (:mod:`devil_dataset.core.int8_products`), else one float32 product of the descriptors
    augmented with their squared norms (its partial sums are integers below 2^24). Either way any kernel and
    summation order gives the same integers, so the matches are the same bits on every CPU. Blocks of
    :data:`MATCH_BLOCK` query rows (each block's products stay in cache) go through one compiled pass each
    (:class:`~devil_dataset.core.cross_check_scan.CrossCheckScan`): each row's first minimum (as OpenCV), each
    column's first row at its minimum over all blocks (an earlier query keeps a tie, as OpenCV); a query is matched
    when it is the first row at its best train's minimum.

    >>> ops = exact_operands(np.array([[0, 0], [3, 0], [0, 0], [3, 0]], np.float32), binary=False)
    >>> exact_cross_check(ops, ops).tolist()
    [[0, 0], [1, 1]]
    """
    if query.max_norm + train.max_norm >= _EXACT_NORM_BOUND:
        return None
    nq, nt = len(query.values), len(train.values)
    block = min(MATCH_BLOCK, nq)
    q8, t8 = query.int8, train.int8
    threads: contextlib.AbstractContextManager[None]
    if q8 is not None and t8 is not None:
        products = np.empty((block, nt), np.int32)

        def rows(start: int, stop: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
            return block_products(q8, t8, start, stop, products), q8.row_term[start:stop], t8.column_term, -2

        threads = one_omp_thread()
    else:
        dist32 = np.empty((block, nt), np.float32)
        q_rows, t_cols = query.as_query, train.as_train
        no_terms = np.zeros(max(block, nt), np.int32)

        def rows(start: int, stop: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
            d = dist32[: stop - start]
            np.matmul(q_rows[start:stop], t_cols, out=d)  # squared distances, exact integers below 2^22
            return d, no_terms[: stop - start], no_terms[:nt], 1

        threads = contextlib.nullcontext()
    scan = CrossCheckScan(nq, nt)
    with threads:
        for start in range(0, nq, block):
            scan.add(*rows(start, min(start + block, nq)), start)
    return scan.matches()


@contextlib.contextmanager
def single_threaded_blas() -> Iterator[None]:
    """Run the block with one BLAS thread (``threadpoolctl``, a dependency).

    The exact matcher's products are small to medium sized; on a busy machine a multi-threaded BLAS spends more CPU
    waking and spinning its threads than computing (measured: 15 ms instead of 0.3 ms for 200 x 200 descriptors).
    Scoring many clips is better parallelised across clips. Enter it once per clip, not per pair (~2 ms).
    """
    with one_blas_thread():  # shared safely with the other threads that need one (core/blas_threads)
        yield


def reverse_matches(matches: np.ndarray) -> np.ndarray:
    """The matches of the reversed pair: columns swapped, rows in ascending new-target (query) order.

    >>> reverse_matches(np.array([[4, 0], [1, 2]])).tolist()
    [[2, 1], [0, 4]]
    """
    swapped = matches[:, ::-1]
    return swapped[np.argsort(swapped[:, 1], kind="stable")]


def similarity_from_matches(source: Features, target: Features, matches: np.ndarray) -> np.ndarray | None:
    """Similarity RANSAC (5 px, OpenCV defaults otherwise) on given matches; ``None`` when alignment fails.

    OpenCV's final Levenberg-Marquardt refinement on the inliers runs on its bundled OpenBLAS, whose kernels (and
    results) depend on the CPU; the same least-squares fit is computed by :func:`refine_similarity` instead (closed
    form, correctly rounded sums), unless ``DEVIL_FAST_SIMD=1`` keeps OpenCV's.
    """
    if len(matches) < MIN_MATCHES:
        return None
    src = np.ascontiguousarray(source.points[matches[:, 0]])
    dst = np.ascontiguousarray(target.points[matches[:, 1]])
    if fast_simd():
        matrix, _ = cv2.estimateAffinePartial2D(src, dst, method=cv2.RANSAC,
                                                ransacReprojThreshold=RANSAC_REPROJ_THRESHOLD)
        return matrix
    matrix, inliers = cv2.estimateAffinePartial2D(src, dst, method=cv2.RANSAC,
                                                  ransacReprojThreshold=RANSAC_REPROJ_THRESHOLD, refineIters=0)
    if matrix is None:
        return None
    return refine_similarity(src, dst, inliers.ravel() != 0, matrix)


def refine_similarity(src: np.ndarray, dst: np.ndarray, inliers: np.ndarray, initial: np.ndarray) -> np.ndarray:
    """Least-squares 4-DOF similarity [2, 3] mapping ``src`` [N, 2] onto ``dst`` on the ``inliers`` (bool [N]).

    The objective of OpenCV's refinement in ``estimateAffinePartial2D`` (sum of squared reprojection errors of
    x' = a x - b y + tx, y' = b x + a y + ty), which is linear in (a, b, tx, ty): solved in closed form around the
    centroids, every sum with ``math.fsum`` (correctly rounded, so independent of order and SIMD). ``initial`` (the
    RANSAC model) is returned when the inliers are all one point.

    >>> src = np.array([[0, 0], [10, 0], [0, 10]], np.float32); dst = src * 2 + 1
    >>> refine_similarity(src, dst, np.ones(3, bool), np.zeros((2, 3))).tolist()
    [[2.0, -0.0, 1.0], [0.0, 2.0, 1.0]]
    """
    p = np.asarray(src, np.float64)[inliers]
    q = np.asarray(dst, np.float64)[inliers]
    n = len(p)
    if n == 0:
        return initial
    px, py, qx, qy = p[:, 0], p[:, 1], q[:, 0], q[:, 1]
    mpx, mpy = _exact_sum(px) / n, _exact_sum(py) / n
    mqx, mqy = _exact_sum(qx) / n, _exact_sum(qy) / n
    cpx, cpy, cqx, cqy = px - mpx, py - mpy, qx - mqx, qy - mqy
    norm = _exact_sum(cpx * cpx, cpy * cpy)
    if norm == 0.0:
        return initial
    a = _exact_sum(cpx * cqx, cpy * cqy) / norm
    b = _exact_sum(cpx * cqy, -(cpy * cqx)) / norm
    tx = mqx - (a * mpx - b * mpy)
    ty = mqy - (b * mpx + a * mpy)
    return np.array([[a, -b, tx], [b, a, ty]], np.float64)


def _exact_sum(*parts: np.ndarray) -> float:
    """The correctly rounded sum of the float64 arrays ``parts`` (``math.fsum``: independent of order and SIMD).

    fsum of a list of Python floats, not of the arrays: iterating an array makes a numpy scalar per element, 1.7x
    slower, and the time is spent holding the GIL, which the labellers' other thread then waits for (measured on a
    pair of ~2,600 matches: RANSAC and refinement 2.3 -> 1.0 ms on one thread, 4.3 -> 2.5 ms of wall each with two
    threads in it at once). The same values, so the same bits.

    >>> _exact_sum(np.array([1e16, 1.0]), np.array([-1e16]))
    1.0
    """
    return math.fsum(parts[0].tolist() if len(parts) == 1 else np.concatenate(parts).tolist())


def estimate_similarity(source: Features, target: Features) -> np.ndarray | None:
    """4-DOF similarity [2, 3] mapping ``source`` (input frame) onto ``target``, or ``None`` when alignment fails.

    Brute-force matching with cross-check (query = target, train = source), then
    ``cv2.estimateAffinePartial2D`` with RANSAC at 5 px and OpenCV's other defaults (the release's alignment).
    Zero keypoints in either frame or fewer than 2 matches: alignment fails.
    """
    return similarity_from_matches(source, target, match_features(source, target))


@lru_cache(maxsize=8)
def all_ones_mask(h: int, w: int) -> np.ndarray:
    """A read-only all-ones [H, W] mask of the mask warp's dtype (float64 like the release's), made
    once per size instead of once per warp (at 854x480 in a loop of warps: 3.8 ms a call with a new array, 1.3 ms
    with this one; ~0.1 ms a call in the labellers, where the allocator hands the same memory back).

    >>> m = all_ones_mask(2, 3)
    >>> m.shape, m.dtype == MASK_WARP_DTYPE, m.flags.writeable
    ((2, 3), True, False)
    """
    ones = np.ones((h, w), MASK_WARP_DTYPE)
    ones.flags.writeable = False
    return ones


def warp_valid_mask(matrix: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """Pixels of the target (W, H) covered by the warped input frame: warp all-ones bilinearly, border 0, keep >= 1.

    The mask is float64 like the release's ``np.float``: OpenCV rounds border pixels of
    sub-pixel shifts differently for float32, which would make a still camera score 0.006 instead of 0.0.

    >>> m = np.array([[1.0, 0.0, 0.25], [0.0, 1.0, 0.0]])
    >>> warp_valid_mask(m, (8, 4)).sum(axis=1).tolist()  # a quarter-pixel shift right: column 0 is not covered
    [7, 7, 7, 7]
    """
    w, h = size
    warped = cv2.warpAffine(all_ones_mask(h, w), matrix, (w, h), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT,
                            borderValue=0)
    return warped >= 1.0


def warp_frame(frame: np.ndarray, matrix: np.ndarray, size: tuple[int, int] | None = None) -> np.ndarray:
    """Warp a frame (or float map) with a [2, 3] matrix into the target size (W, H), bilinear, border 0."""
    if size is None:
        size = (frame.shape[1], frame.shape[0])
    return cv2.warpAffine(frame, matrix, size, flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT, borderValue=0)


def compose_affine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` for 3x3 (or stacked [..., 3, 3]) matrices, summed in a fixed order (same bits on every CPU).

    numpy's ``@`` on float64 goes through the BLAS, whose kernel (and rounding: FMA or not) depends on the CPU
    (measured: OpenBLAS's Sandybridge kernel changed the aligned-copy baseline's output).

    >>> m = np.array([[1.0, 0.0, 2.0], [0.0, 1.0, 3.0], [0.0, 0.0, 1.0]])
    >>> compose_affine(m, m)[:2, 2].tolist()
    [4.0, 6.0]
    """
    return (a[..., :, 0:1] * b[..., 0:1, :] + a[..., :, 1:2] * b[..., 1:2, :]) + a[..., :, 2:3] * b[..., 2:3, :]


def invert_affine(m: np.ndarray) -> np.ndarray:
    """Inverse of 3x3 affine matrices [..., 3, 3] (last row 0, 0, 1) in closed form (same bits on every CPU).

    ``np.linalg.inv`` runs LAPACK on CPU-dispatched BLAS kernels; this is a fixed sequence of IEEE operations.

    >>> m = np.array([[2.0, 0.0, 4.0], [0.0, 2.0, -2.0], [0.0, 0.0, 1.0]])
    >>> (invert_affine(m)[:2] + 0.0).tolist()  # + 0.0: -0.0 prints as 0.0
    [[0.5, 0.0, -2.0], [0.0, 0.5, 1.0]]
    """
    a, b, tx = m[..., 0, 0], m[..., 0, 1], m[..., 0, 2]
    c, d, ty = m[..., 1, 0], m[..., 1, 1], m[..., 1, 2]
    det = a * d - b * c
    ia, ib, ic, id_ = d / det, -b / det, -c / det, a / det
    out = np.zeros(m.shape, np.float64)
    out[..., 0, 0], out[..., 0, 1], out[..., 0, 2] = ia, ib, -(ia * tx + ib * ty)
    out[..., 1, 0], out[..., 1, 1], out[..., 1, 2] = ic, id_, -(ic * tx + id_ * ty)
    out[..., 2, 2] = 1.0
    return out
