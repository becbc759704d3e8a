"""Every relative link and file reference in README.md, CHANGELOG.md and docs/*.md names a file that ships.

Checked: markdown links ``[text](target)`` that are not URLs (resolved from the document's folder; an ``#anchor``
must be a heading of the markdown file it points into, as GitHub spells heading anchors), and backticked repository
paths (``docs/x.md``, ``benchmarks/y.py``, ``devil_dataset/...``, ``tests/...``, ``scripts/...``,
``loading_script/...``, and ``builder/x.py``-style paths inside the package, resolved under ``devil_dataset/``).
Placeholders (``<name>``, ``*``, ``{i}``) and paths that a command writes are not references.
Also: no document cites a file outside the repository (the private spec notes, ``/work/...``, ``../shared/...``).
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted([ROOT / "README.md", ROOT / "CHANGELOG.md", *(ROOT / "docs").glob("*.md")])

LINK = re.compile(r"\[[^\]\n]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
CODE = re.compile(r"`([^`\n]+)`")
# A repository path: a top-level folder of the checkout, or a sub-package of devil_dataset/ (as the docs name modules).
REPO_DIRS = ("docs", "benchmarks", "devil_dataset", "tests", "scripts", "loading_script", ".ci")
PACKAGE_DIRS = ("builder", "core", "eval", "cli", "data", "inpaint", "sources", "pipeline", "diagnosis")
PATH = re.compile(r"(?<![\w./~-])((?:%s)/[\w./-]*[\w/])" % "|".join(re.escape(d) for d in REPO_DIRS + PACKAGE_DIRS))
ROOT_FILES = re.compile(r"(?<![\w./-])(README\.md|CHANGELOG\.md|setup\.cfg|pyproject\.toml|constraints\.txt"
                        r"|conftest\.py)(?![\w.-])")
OUTSIDE = re.compile(r"\bSPEC\b|/work/|\.\./shared/")  # the project's private notes and machine paths


# A backticked path right after one of these names another project's file (ProPainter's `core/metrics.py`).
EXTERNAL = re.compile(r"(ProPainter|E2FGVI|PROVE|MichiganCOG|[Tt]he release|[Tt]heir)(?:'s)?[^;()]{0,70}$")


def anchors(doc: Path) -> set[str]:
    """The anchors GitHub gives ``doc``'s headings: lower case, punctuation dropped, spaces to hyphens, repeats -1."""
    seen: dict[str, int] = {}
    out = set()
    in_fence = False
    for line in doc.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
        match = None if in_fence else re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if match:
            slug = re.sub(r"[^\w\- ]", "", match.group(1).lower()).replace(" ", "-")
            out.add(slug if slug not in seen else f"{slug}-{seen[slug]}")
            seen[slug] = seen.get(slug, 0) + 1
    return out


def _link_exists(doc: Path, target: str) -> bool:
    """A relative link's file exists, and its ``#anchor``, if any, is a heading of that markdown file."""
    name, _, anchor = target.partition("#")
    path = (doc.parent / name) if name else doc
    if not path.exists():
        return False
    return not anchor or path.suffix != ".md" or anchor in anchors(path)


def _exists(base: Path, path: str) -> bool:
    """``path`` is a file or folder, or a module (``core/video_io``), or a module's name (``core/flow.dis_flow``)."""
    if (base / path).exists() or (base / f"{path}.py").exists():
        return True
    head, _, tail = path.rpartition("/")
    module = tail.split(".")[0]
    if not head or module == tail:
        return False
    return (base / head / f"{module}.py").exists() or (base / head / module).is_dir()


def _references(doc: Path) -> list[tuple[int, str, bool]]:
    """(line, text, whether it exists) for every reference in ``doc`` outside fenced code blocks."""
    lines, in_fence = [], False
    for line in doc.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
            line = ""
        lines.append("" if in_fence else line)
    text = "\n".join(lines)
    refs: list[tuple[int, str, bool]] = []
    for match in LINK.finditer(text):
        target = match.group(1)
        if re.match(r"[a-z][a-z0-9+.-]*:", target):
            continue  # a URL
        line = text.count("\n", 0, match.start()) + 1
        refs.append((line, target, _link_exists(doc, target)))
    for match in CODE.finditer(text):
        code = match.group(1)
        if any(c in code for c in "<>*{}[]$~") or EXTERNAL.search(text[max(0, match.start() - 80):match.start()]):
            continue  # a placeholder or a pattern, or another project's file
        line = text.count("\n", 0, match.start()) + 1
        for path in PATH.findall(code):
            path = path.split(":")[0]
            base = ROOT / "devil_dataset" if path.split("/")[0] in PACKAGE_DIRS else ROOT
            refs.append((line, path, _exists(base, path)))
        for name in ROOT_FILES.findall(code):
            refs.append((line, name, (ROOT / name).exists()))
    return refs


def _missing(doc: Path) -> list[str]:
    return [f"{doc.relative_to(ROOT)}:{line}: {text}" for line, text, exists in _references(doc) if not exists]


# The changelog tells the history: the files its past entries name may have moved or gone since. Its links are still
# checked (a link is a promise that something is there now).
PRESENT_TENSE_DOCS = [d for d in DOCS if d.name != "CHANGELOG.md"]


@pytest.mark.parametrize("doc", PRESENT_TENSE_DOCS, ids=lambda d: str(d.relative_to(ROOT)))
def test_every_file_a_document_references_exists(doc):
    assert _missing(doc) == []


def test_every_link_of_the_changelog_exists():
    changelog = ROOT / "CHANGELOG.md"
    targets = [m.group(1) for m in LINK.finditer(changelog.read_text(encoding="utf-8"))
               if not re.match(r"[a-z][a-z0-9+.-]*:", m.group(1))]
    assert [t for t in targets if not _link_exists(changelog, t)] == []


@pytest.mark.parametrize("doc", DOCS, ids=lambda d: str(d.relative_to(ROOT)))
def test_no_document_cites_a_file_outside_the_repository(doc):
    hits = [f"{doc.relative_to(ROOT)}:{n}: {line.strip()[:120]}"
            for n, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1) if OUTSIDE.search(line)]
    assert hits == []


@pytest.mark.parametrize("doc", DOCS, ids=lambda d: str(d.relative_to(ROOT)))
def test_no_heading_is_named_after_an_issue(doc):
    """A heading says what its section is about, not which tracker issue or work round produced it."""
    headings = [line for line in doc.read_text(encoding="utf-8").splitlines() if re.match(r"#{1,6}\s", line)]
    assert [h for h in headings if re.search(r"\b(issues?|rounds?) \d|\(issue|round\)|\bround\b", h, re.I)] == []


def test_the_checker_finds_missing_references(tmp_path):
    """A link, a backticked path and a package-relative module path that do not exist are each reported; URLs,
    anchors, placeholders, fenced commands, another project's files and existing files (or modules, or a name in a
    module: the module is what is checked) are not."""
    doc = tmp_path / "x.md"
    doc.write_text(
        "# Top: the page\n[ok](https://example.com) [anchor](#top-the-page) [lost](#nowhere) `docs/<name>.md`\n"
        "`benchmarks/*.py` [section](README.md#quick-start-two-commands)\n"
        f"[exists]({ROOT / 'README.md'}) `devil_dataset/cli/__init__.py` `core/alignment.py` `setup.cfg`\n"
        "[gone](nowhere.md#part) `benchmarks/no_such_script.py --quick` `core/no_such_module.py`\n"
        "`core/flow.dis_flow` `core/video_io` `core/flow.no_such_name` `core/gone.name`\n"
        "ProPainter's `core/metrics.py`\n"
        "```bash\npython benchmarks/also_gone.py\n```\n",
        encoding="utf-8")
    (tmp_path / "README.md").write_text("## Quick start (two commands)\n", encoding="utf-8")
    refs = {text: exists for _, text, exists in _references(doc)}
    assert refs == {"#top-the-page": True, "#nowhere": False, "README.md#quick-start-two-commands": True,
                    str(ROOT / "README.md"): True, "devil_dataset/cli/__init__.py": True,
                    "core/alignment.py": True, "setup.cfg": True, "nowhere.md#part": False,
                    "benchmarks/no_such_script.py": False, "core/no_such_module.py": False,
                    "core/flow.dis_flow": True, "core/video_io": True, "core/flow.no_such_name": True,
                    "core/gone.name": False}
