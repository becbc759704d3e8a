"""Fixtures for every collected test, the package's doctest examples included."""
from __future__ import annotations

import tempfile

import pytest
from _pytest.doctest import DoctestItem


@pytest.fixture(autouse=True)
def _doctest_temporary_files(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Docstring examples call ``tempfile.mkdtemp()`` to stay short and runnable as written; under pytest their
    folders go to pytest's own temporary directory (pruned by pytest) instead of piling up in the system's."""
    if isinstance(request.node, DoctestItem):
        monkeypatch.setattr(tempfile, "tempdir", str(tmp_path_factory.mktemp("doctest")))
