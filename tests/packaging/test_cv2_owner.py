"""Exactly one installed distribution owns the ``cv2`` package (two OpenCV wheels overwrite each other)."""
from __future__ import annotations

import importlib.metadata as md

import pytest


def cv2_owners() -> list[str]:
    """Names of installed distributions whose RECORD lists files under ``cv2/``."""
    owners = set()
    for dist in md.distributions():
        files = dist.files or ()
        if any(str(f).startswith("cv2/") for f in files):
            owners.add(dist.metadata["Name"].lower())
    return sorted(owners)


def test_exactly_one_distribution_owns_cv2():
    owners = cv2_owners()
    if not owners:
        pytest.skip("OpenCV is not installed")
    assert len(owners) == 1, f"several distributions write cv2/: {owners}; keep only opencv-python-headless"
