"""Fixtures for every collected test, the package's doctest examples included."""
from __future__ import annotations

import importlib.util
import tempfile

import pytest
from _pytest.doctest import DoctestItem

# First of the package's imports in every test process, and the CPU pins (core/cpu_pins) set as the devil command sets
# them, before any test module loads scipy or torch: the network passes of the test process run on the portable kernels.
import devil_dataset

devil_dataset.pin_process()


@pytest.fixture(autouse=True)
def _doctest_temporary_files(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Docstring examples call ``tempfile.mkdtemp()`` to stay short and runnable as written; under pytest their
    folders go to pytest's own temporary directory (pruned by pytest) instead of piling up in the system's."""
    if isinstance(request.node, DoctestItem):
        monkeypatch.setattr(tempfile, "tempdir", str(tmp_path_factory.mktemp("doctest")))


#: Modules whose docstring examples load a network through an optional extra: skipped when it is not installed.
DOCTESTS_NEEDING = {"devil_dataset.core.networks.dinov2": "transformers"}


@pytest.fixture(autouse=True)
def _doctest_optional_extras(request: pytest.FixtureRequest) -> None:
    """Skip the examples of :data:`DOCTESTS_NEEDING` when their extra (``[removal]``: transformers) is absent."""
    if isinstance(request.node, DoctestItem):
        module = request.node.name.rsplit(".", 1)[0] if request.node.dtest is None else request.node.dtest.globs.get(
            "__name__", "")
        needed = DOCTESTS_NEEDING.get(module)
        if needed and importlib.util.find_spec(needed) is None:
            pytest.skip(f"{module}: its examples need {needed} (pip install 'devil-dataset[removal]')")
