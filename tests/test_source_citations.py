"""Source comments cite the paper, the release's code or the behaviour: no issue numbers of this project's tracker
and no private notes (``SPEC``, which does not ship) in the package, its tests or its benchmarks."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: An issue of the tracker ("issue 45", "issues 36 and 47", "issue #3") or the private spec ("SPEC section 7").
PRIVATE_CITATION = re.compile(r"\b[Ii]ssues? #?\d+|\bSPEC\b")


def citations(root: Path, base: Path = ROOT) -> list[str]:
    """``path:line: text`` (relative to ``base``) of every private citation in the Python files below ``root``."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if PRIVATE_CITATION.search(line) and path.name != Path(__file__).name:
                found.append(f"{path.relative_to(base)}:{number}: {line.strip()[:100]}")
    return found


def test_the_package_tests_and_benchmarks_cite_no_issue_or_private_spec():
    assert [hit for folder in ("devil_dataset", "tests", "benchmarks") for hit in citations(ROOT / folder)] == []


def test_the_check_finds_a_citation(tmp_path):
    (tmp_path / "m.py").write_text("x = 1  # see issue 45\ny = 2  # the release's rule\n", encoding="utf-8")
    assert citations(tmp_path, tmp_path) == ["m.py:1: x = 1  # see issue 45"]
