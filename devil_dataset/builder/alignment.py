"""Feature matching and similarity-RANSAC alignment shared by the video scorers and the baselines (SPEC section 2).

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

from dataclasses import dataclass
from functools import lru_cache

import cv2
import numpy as np

# SPEC section 2: the release's SURF hessianThreshold (other SURF parameters are OpenCV defaults).
SURF_HESSIAN_THRESHOLD = 750
# SPEC section 2: RANSAC reprojection threshold in pixels for estimateAffinePartial2D.
RANSAC_REPROJ_THRESHOLD = 5.0
# SPEC section 2: fewer matches than this and the alignment fails.
MIN_MATCHES = 2
DETECTORS: tuple[str, ...] = ("surf", "sift", "orb")


@lru_cache(maxsize=1)
def surf_available() -> bool:
    """True when this OpenCV build includes the non-free SURF detector (pip wheels do not)."""
    try:
        cv2.xfeatures2d.SURF_create(SURF_HESSIAN_THRESHOLD)
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
        raise ValueError("detector 'surf' needs an OpenCV build with OPENCV_ENABLE_NONFREE (pip wheels lack it); use 'sift' or 'orb'")
    return detector


def _create(detector: str):
    if detector == "surf":
        return cv2.xfeatures2d.SURF_create(SURF_HESSIAN_THRESHOLD)
    if detector == "sift":
        return cv2.SIFT_create()
    return cv2.ORB_create(nfeatures=2000)


@dataclass(frozen=True)
class Features:
    """Keypoint positions [N, 2] (x, y) and descriptors [N, D] of one frame, with the detector that made them."""

    points: np.ndarray
    descriptors: np.ndarray | None
    detector: str

    def __len__(self) -> int:
        return 0 if self.descriptors is None else len(self.points)


def detect_features(frame: np.ndarray, detector: str | None = None, mask: np.ndarray | None = None) -> Features:
    """Detect keypoints and descriptors on a uint8 RGB frame [H, W, 3].

    ``mask`` (bool [H, W], optional) keeps only keypoints on True (background) pixels.
    """
    detector = resolve_detector(detector)
    cv_mask = None if mask is None else mask.astype(np.uint8) * 255
    keypoints, descriptors = _create(detector).detectAndCompute(frame, cv_mask)
    points = np.array([kp.pt for kp in keypoints], dtype=np.float32).reshape(-1, 2)
    return Features(points, descriptors if len(keypoints) else None, detector)


def estimate_similarity(source: Features, target: Features) -> np.ndarray | None:
    """4-DOF similarity [2, 3] mapping ``source`` (input frame) onto ``target``, or ``None`` when alignment fails.

    Brute-force matching with cross-check (query = target, train = source), then
    ``cv2.estimateAffinePartial2D`` with RANSAC at 5 px and OpenCV's other defaults (SPEC section 2).
    """
    if len(source) == 0 or len(target) == 0:
        return None
    norm = cv2.NORM_HAMMING if source.detector == "orb" else cv2.NORM_L2
    matches = cv2.BFMatcher(norm, crossCheck=True).match(target.descriptors, source.descriptors)
    if len(matches) < MIN_MATCHES:
        return None
    src = source.points[[m.trainIdx for m in matches]]
    dst = target.points[[m.queryIdx for m in matches]]
    matrix, _ = cv2.estimateAffinePartial2D(src, dst, method=cv2.RANSAC, ransacReprojThreshold=RANSAC_REPROJ_THRESHOLD)
    return matrix


def warp_valid_mask(matrix: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """Pixels of the target (W, H) covered by the warped input frame: warp all-ones bilinearly, border 0, keep >= 1."""
    w, h = size
    ones = np.ones((h, w), np.float32)
    warped = cv2.warpAffine(ones, matrix, (w, h), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT, borderValue=0)
    return warped >= 1.0


def warp_frame(frame: np.ndarray, matrix: np.ndarray, size: tuple[int, int] | None = None) -> np.ndarray:
    """Warp a frame (or float map) with a [2, 3] matrix into the target size (W, H), bilinear, border 0."""
    if size is None:
        size = (frame.shape[1], frame.shape[0])
    return cv2.warpAffine(frame, matrix, size, flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT, borderValue=0)
