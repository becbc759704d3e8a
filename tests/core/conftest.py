"""Fixtures of the core tests."""
from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def core_allow_random_weights(monkeypatch):
    """The network tests plant random weights in a temporary cache: accept their (mismatching) checksums.

    They are still read with ``weights_only=True``; tests of the checksum checks remove the variable.
    """
    monkeypatch.setenv("DEVIL_WEIGHTS_ALLOW_UNVERIFIED", "1")
