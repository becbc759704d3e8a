"""Skip a ``devil benchmark`` report whose inputs did not change (an unchanged re-run spent 51 of its 58 s
regenerating the same report).

After a report is written, :func:`write_report_stamp` records (atomically, in the run's cache folder) a content key
of everything the report is made from (:func:`report_key`: every results file's bytes, the report options, the
dataset's digest and the package version), the SHA-256 of every file the report wrote, and what the run prints (Table
1 as markdown, the findings). The next run with the same key reuses the report when every recorded file is still
there with its recorded bytes (:func:`read_report_stamp`); anything else (a changed results file or option, another
package version, a report file edited or removed, no stamp, a stamp of another format) regenerates it.

    >>> import tempfile
    >>> out = Path(tempfile.mkdtemp()); (out / "r.json").write_text("{}"); (out / "table1.md").write_text("| t |")
    2
    5
    >>> key = report_key([out / "r.json"], {"ci": None})
    >>> stamp = out / ".devil-benchmark" / REPORT_STAMP
    >>> _ = write_report_stamp(stamp, key, out, [out / "table1.md"], "| t |", [])
    >>> read_report_stamp(stamp, key, out).table_markdown
    '| t |'
    >>> _ = (out / "table1.md").write_text("edited")
    >>> read_report_stamp(stamp, key, out) is None
    True
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..core.atomic import atomic_write_text, file_sha256
from ..core.version import __version__
from ..eval.report.findings import Finding

#: The stamp's file name inside the run's cache folder, and its format tag.
REPORT_STAMP = "report-stamp.json"
STAMP_FORMAT = "devil-report-stamp"
STAMP_FORMAT_VERSION = 1


@dataclass(frozen=True)
class KeptReport:
    """What a stamp records of a report: its files (absolute), the HTML index among them, Table 1 as markdown and
    the findings."""

    files: list[Path]
    table_markdown: str
    findings: list[Finding]


def report_key(results: Sequence[Path], options: Mapping[str, Any]) -> str:
    """A SHA-256 hex of the report's inputs: each results file's path and bytes (in the order given), ``options``
    (JSON-able: what the report was asked for) and the package version.

    >>> import tempfile
    >>> p = Path(tempfile.mkdtemp()) / "r.json"; _ = p.write_text("{}")
    >>> report_key([p], {"ci": None}) == report_key([p], {"ci": "se"})
    False
    """
    h = hashlib.sha256(json.dumps({"package_version": __version__, "options": options}, sort_keys=True,
                                  default=str).encode())
    for path in results:
        h.update(f"\n{Path(path).resolve()}\t{file_sha256(path)}".encode())
    return h.hexdigest()


def _relative(path: Path, out: Path) -> str:
    return Path(path).resolve().relative_to(out.resolve()).as_posix()


def report_outputs(out: Path, files: Sequence[Path]) -> dict[str, str]:
    """``relative path -> SHA-256`` of the report's ``files`` and of every file under the folders among them or
    holding them below ``out`` (the HTML report's clips and plots), sorted."""
    found: set[Path] = set()
    for f in files:
        f = Path(f)
        found.add(f)
        top = Path(_relative(f, out)).parts
        if len(top) > 1:  # a file in a folder of the report (report-html/index.html): the whole folder
            found |= {p for p in (out / top[0]).rglob("*") if p.is_file()}
    return {_relative(p, out): file_sha256(p) for p in sorted(found)}


def write_report_stamp(stamp: Path, key: str, out: Path, files: Sequence[Path], table_markdown: str,
                       findings: Sequence[Finding]) -> Path:
    """Record a report just written (atomically; see the module docstring); returns the stamp's path."""
    doc = {"format": STAMP_FORMAT, "format_version": STAMP_FORMAT_VERSION, "key": key,
           "files": [_relative(f, out) for f in files], "outputs": report_outputs(out, files),
           "table_markdown": table_markdown, "findings": [asdict(f) for f in findings]}
    return atomic_write_text(stamp, json.dumps(doc, indent=1, default=str) + "\n")


def read_report_stamp(stamp: Path, key: str, out: Path) -> KeptReport | None:
    """The report a stamp records when its key is ``key`` and every recorded output is still there with its bytes;
    ``None`` otherwise (the report is to be written)."""
    try:
        doc = json.loads(Path(stamp).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("format") != STAMP_FORMAT or \
            doc.get("format_version") != STAMP_FORMAT_VERSION or doc.get("key") != key:
        return None
    for rel, digest in (doc.get("outputs") or {}).items():
        path = out / rel
        if not path.is_file() or file_sha256(path) != digest:
            return None
    try:
        findings = [Finding(**f) for f in doc.get("findings") or ()]
    except TypeError:  # another shape of Finding
        return None
    return KeptReport([out / rel for rel in doc.get("files") or ()], str(doc.get("table_markdown", "")), findings)


__all__ = ["KeptReport", "REPORT_STAMP", "STAMP_FORMAT", "read_report_stamp", "report_key", "report_outputs",
           "write_report_stamp"]
