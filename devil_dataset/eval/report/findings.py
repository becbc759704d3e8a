"""The paper's robust slice trends (section 6), checked on any results table: held, not held or not checkable,
and, with the per-video values (``docs``), whether the effect is significant under a permutation test over videos.

:func:`check_findings` takes the ``{(method, slice): {key: value}}`` table of
:func:`devil_dataset.eval.report.score_table`; ``devil demo`` and ``devil report --findings`` print the findings
and write them with :func:`write_findings` (``findings.md``, ``findings.json``).

    >>> t = {("telea", "fg_size_low"): {"psnr": 30.0}, ("telea", "fg_size_high"): {"psnr": 25.0}}
    >>> f = check_findings(t, {"fg_size_low": 5, "fg_size_high": 5})[0]
    >>> print(f.summary())
    [HELD] fg_size_high is harder than fg_size_low on every reconstruction metric (psnr)
        telea: psnr 30 -> 25 (fg_size_low: 5 videos, fg_size_high: 5 videos)
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from ...core.atomic import atomic_write_text
from ..protocols.registry import higher_is_better
from ..stats.significance import SIGNIFICANCE_ALPHA, unpaired_test
from .caveats import counted
from .tables import RELATIVE_CHANGE_NAME, relative_improvement

# Which baselines are per-frame (spatial) and which use other frames (temporal), among the demo's baselines.
PER_FRAME_METHODS: tuple[str, ...] = ("telea", "navier-stokes")
TEMPORAL_METHODS: tuple[str, ...] = ("aligned-copy", "flow-propagation")
# Paper section 6 / Table 1: the reconstruction metrics the findings are checked on (LPIPS where present).
RECONSTRUCTION_KEYS: tuple[str, ...] = ("psnr", "ssim", "lpips")
# The files :func:`write_findings` writes.
FINDINGS_MARKDOWN = "findings.md"
FINDINGS_JSON = "findings.json"

Table = Mapping[tuple[str, str], Mapping[str, float]]


@dataclass
class Finding:
    """One of the paper's trends checked on results: ``held`` is True/False, or None if not checkable."""

    key: str
    claim: str
    held: bool | None
    numbers: dict = field(default_factory=dict)
    explanation: str = ""
    significant: bool | None = None  # every part of the effect significant (intersection-union test); None: untested
    test: str = ""  # the test behind ``significant``
    pvalues: dict = field(default_factory=dict)  # "<method> <key>" -> the part's own p (no other part changes it)
    significant_methods: dict = field(default_factory=dict)  # method -> all of its parts significant

    def verdict(self) -> str:
        """``HELD, SIGNIFICANT`` / ``HELD, NOT SIGNIFICANT`` / ``HELD`` (untested) / ``NOT HELD`` / ``NOT CHECKED``."""
        if self.held is None:
            return "NOT CHECKED"
        if not self.held:
            return "NOT HELD"
        return {True: "HELD, SIGNIFICANT", False: "HELD, NOT SIGNIFICANT", None: "HELD"}[self.significant]

    def per_method(self) -> str:
        """``significant for: a, b; not for: c`` (each method's own parts, whatever other methods ran), or ``""``."""
        yes = [m for m, v in self.significant_methods.items() if v]
        no = [m for m, v in self.significant_methods.items() if not v]
        parts = ([f"significant for: {', '.join(yes)}"] if yes else []) + ([f"not for: {', '.join(no)}"] if no else [])
        return "; ".join(parts)

    def summary(self) -> str:
        tested = f"\n    {self.test}: " + ", ".join(f"{k} p={v:.3g}" for k, v in self.pvalues.items()) \
            if self.test else ""
        per_method = f"\n    {self.per_method()}" if self.per_method() else ""
        return f"[{self.verdict()}] {self.claim}\n    {self.explanation}{tested}{per_method}"


def _better(key: str, a: float, b: float) -> bool:
    """True when value ``a`` is better than ``b`` for ``key`` (the registry's direction)."""

    return a > b if higher_is_better(key) else a < b


def _present(table: Table, methods: Sequence[str], slices: Sequence[str], keys: Sequence[str]) -> list[str]:
    """The keys of ``keys`` computed for every method on every slice (none without methods: a finding
    must not list LPIPS when nothing was computed)."""
    if not methods:
        return []
    return [k for k in keys if all(not math.isnan(table.get((m, s), {}).get(k, float("nan")))
                                   for m in methods for s in slices)]


@dataclass(frozen=True)
class _Checked:
    """What every finding is checked on: the table, its methods, the per-frame and temporal baselines among them,
    the relative improvements per (attribute, method), the videos per slice and the per-video values (or None)."""

    table: Table
    methods: list[str]
    per_frame: str | None
    temporal: list[str]
    ri: Mapping[tuple[str, str], Mapping[str, float]]
    counts: Mapping[str, int]
    videos: Mapping[tuple[str, str], Mapping[str, Mapping]] | None

    def quoted(self, *slices: str) -> str:
        """``<slice>: <n> videos`` of the slices with a count, comma-separated."""
        return ", ".join(f"{s}: {counted(self.counts[s], 'video')}" for s in slices if s in self.counts)


def _fg_size(c: _Checked) -> Finding:
    """Finding 1: ``fg_size_high`` is harder than ``fg_size_low`` on every reconstruction metric, every method."""
    table, lo, hi = c.table, "fg_size_low", "fg_size_high"
    ms = [m for m in c.methods if (m, lo) in table and (m, hi) in table]
    keys = _present(table, ms, (lo, hi), RECONSTRUCTION_KEYS)
    # only the metrics computed for every method are named (never a metric that was not computed)
    claim = "fg_size_high is harder than fg_size_low on every reconstruction metric" + (
        f" ({', '.join(keys)})" if keys else "")
    if not ms or not keys:
        return Finding("fg_size", claim, None, {}, "needs fg_size_low and fg_size_high results")
    nums = {m: {k: {"low": table[(m, lo)][k], "high": table[(m, hi)][k]} for k in keys} for m in ms}
    fails = [f"{m} {k}" for m in ms for k in keys if not _better(k, table[(m, lo)][k], table[(m, hi)][k])]
    parts = [f"{m}: " + ", ".join(f"{k} {table[(m, lo)][k]:.4g} -> {table[(m, hi)][k]:.4g}" for k in keys)
             for m in ms]
    expl = "; ".join(parts) + f" ({c.quoted(lo, hi)})"
    if fails:
        expl += ". Not harder for: " + ", ".join(fails)
    return _significance(Finding("fg_size", claim, not fails, nums, expl), c.videos,
                         [(m, None, k) for m in ms for k in keys], lo, hi)


def _moves_more(c: _Checked, attr: str, claim: str, winners: list[str], what: str) -> Finding:
    """Findings 2 and 3: the relative improvement low -> high of ``attr`` is larger for every one of ``winners``
    than for the per-frame method, on every reconstruction metric (``what``: the winners, for the explanation)."""
    lo_s, hi_s = f"{attr}_low", f"{attr}_high"
    per_frame = c.per_frame
    if per_frame is None or not winners:
        return Finding(attr, claim, None, {}, "needs a per-frame method (telea or navier-stokes) and " + what)
    ms = [per_frame] + winners
    if not all((m, s) in c.table for m in ms for s in (lo_s, hi_s)):
        return Finding(attr, claim, None, {}, f"needs {lo_s} and {hi_s} results")
    keys = _present(c.table, ms, (lo_s, hi_s), RECONSTRUCTION_KEYS)
    nums = {m: {k: c.ri.get((attr, m), {}).get(k, float("nan")) for k in keys} for m in ms}
    fails = [f"{w} {k}" for w in winners for k in keys if not nums[w][k] > nums[per_frame][k]]
    parts = [f"{m}: " + ", ".join(f"{k} {100 * nums[m][k]:+.2f}%" for k in keys) for m in ms]
    expl = f"{RELATIVE_CHANGE_NAME} low -> high: " + "; ".join(parts) + f" ({c.quoted(lo_s, hi_s)})"
    if fails:
        expl += ". Not larger than " + per_frame + " for: " + ", ".join(fails)
    return _significance(Finding(attr, claim, not fails, {"relative_improvement": nums}, expl), c.videos,
                         [(w, per_frame, k) for w in winners for k in keys], lo_s, hi_s)


def check_findings(table: Table, slice_counts: Mapping[str, int] | None = None,
                   docs: Iterable[Mapping] | None = None) -> list[Finding]:
    """Check the paper's three robust trends on a results table ``{(method, slice): {key: value}}``.

    1. ``fg_size_high`` is harder than ``fg_size_low`` on every reconstruction metric (PSNR, SSIM, LPIPS where
       present), for every method;
    2. higher foreground displacement helps the temporal methods more than the per-frame one: the relative
       change low -> high of ``fg_displacement`` (:func:`~devil_dataset.eval.report.tables.relative_improvement`,
       sign flipped where lower is better; for positive scores it orders methods as the paper's (hi - lo) / lo does)
       is larger for every temporal method than for the per-frame method, on every reconstruction metric;
    3. camera motion hurts ``aligned-copy`` less than the per-frame method: its relative change from
       ``camera_motion_low`` to ``camera_motion_high`` is larger (less negative) on every reconstruction metric.

    ``slice_counts`` (slice -> videos) are quoted in the explanations. With the results documents ``docs`` (their
    per-video values) each held finding is also tested (:func:`_significance`): low and high slices hold different
    videos, so an unpaired permutation test over videos (``scipy.stats.permutation_test``,
    ``permutation_type="independent"``) per (method, metric) part; the finding is significant when every part is (an
    intersection-union test: each part's p is its own, so adding or removing a method never changes another
    method's verdict, ``Finding.significant_methods``).

    >>> t = {("telea", "fg_size_low"): {"psnr": 30.0}, ("telea", "fg_size_high"): {"psnr": 25.0}}
    >>> [f.held for f in check_findings(t)]
    [True, None, None]
    """

    counts = dict(slice_counts or {})
    videos = _videos(docs) if docs is not None else None
    methods = list(dict.fromkeys(m for m, _ in table))
    per_frame = next((m for m in PER_FRAME_METHODS if m in methods), None)
    temporal = [m for m in methods if m in TEMPORAL_METHODS]
    c = _Checked(table=table, counts=counts, videos=videos, methods=methods, per_frame=per_frame, temporal=temporal,
                 ri=relative_improvement({k: dict(v) for k, v in table.items()}))
    return [
        _fg_size(c),
        _moves_more(c, "fg_displacement",
                    f"higher FG displacement helps the temporal methods ({', '.join(temporal) or 'none'}) more than "
                    f"the per-frame one ({per_frame or 'none'})", temporal, "a temporal method"),
        _moves_more(c, "camera_motion",
                    f"camera motion hurts aligned-copy less than the per-frame method ({per_frame or 'none'})",
                    [m for m in methods if m == "aligned-copy"], "aligned-copy"),
    ]


FINDINGS_TEST = ("two-sided unpaired permutation test over videos per part (low vs high slice; "
                 "scipy.stats.permutation_test, independent); the finding is significant when every part is "
                 "(intersection-union test, level 0.05 with no adjustment: each part's p is its own, whatever "
                 "other methods were run)")


def _videos(docs: Iterable[Mapping]) -> dict[tuple[str, str], Mapping[str, Mapping]]:
    return {(str(d.get("method")), str(d.get("slice"))): d.get("videos") or {} for d in docs}


def _per_video(videos, method: str, other: str | None, slice_name: str, key: str) -> list[float]:
    """``method``'s per-video values on ``slice_name`` (minus ``other``'s on the same video when given)."""

    sign = 1.0 if higher_is_better(key) else -1.0  # "better" is up for every key
    a = videos.get((method, slice_name), {})
    b = videos.get((other, slice_name), {}) if other is not None else None
    out = []
    for c in sorted(a):
        va = a[c].get(key)
        vb = (b.get(c) or {}).get(key) if b is not None else 0.0
        if va is None or vb is None or math.isnan(float(va)) or math.isnan(float(vb)):
            continue
        out.append(sign * (float(va) - float(vb)))
    return out


def _significance(f: Finding, videos, parts: Sequence[tuple[str, str | None, str]], lo: str, hi: str) -> Finding:
    """Test a held finding part by part: ``(method, None, key)`` compares the method's per-video values on the low
    and high slice; ``(method, baseline, key)`` the per-video differences method - baseline (the same videos)
    between the slices (does the slice move the method more than the baseline?)."""

    if videos is None or not f.held or not parts:
        return f
    ps = []
    for m, base, k in parts:
        low, high = _per_video(videos, m, base, lo, k), _per_video(videos, m, base, hi, k)
        ps.append(unpaired_test(low, high) if len(low) >= 2 and len(high) >= 2 else float("nan"))
    # The claim holds for every part, so its null is the union of the parts' nulls: the intersection-union test
    # rejects it when every part's own test rejects at alpha (Berger 1982), with no multiplicity adjustment; a part's
    # p therefore never depends on the other parts (the other methods run).
    f.pvalues = {(f"{m} - {base} {k}" if base else f"{m} {k}"): p for (m, base, k), p in zip(parts, ps)}
    f.test = FINDINGS_TEST
    f.significant = None if any(math.isnan(p) for p in ps) else all(p < SIGNIFICANCE_ALPHA for p in ps)
    by_method: dict[str, list[float]] = {}
    for (m, _, _), p in zip(parts, ps):
        by_method.setdefault(m, []).append(p)
    f.significant_methods = {m: all(p < SIGNIFICANCE_ALPHA for p in v) for m, v in by_method.items()
                             if not any(math.isnan(p) for p in v)}
    return f


def slice_counts(docs: Iterable[Mapping]) -> dict[str, int]:
    """Videos per slice of results documents (``num_videos``; the first document of a slice counts).

    >>> slice_counts([{"slice": "fg_size_low", "num_videos": 5}, {"slice": "fg_size_low", "num_videos": 5}])
    {'fg_size_low': 5}
    """
    counts: dict[str, int] = {}
    for doc in docs:
        if doc.get("slice") is not None and doc.get("num_videos") is not None:
            counts.setdefault(str(doc["slice"]), int(doc["num_videos"]))
    return counts


def findings_markdown(findings: Sequence[Finding]) -> str:
    """The findings as a markdown list (``findings.md``)."""
    lines = []
    for f in findings:
        tested = f" Test: {f.test}: " + ", ".join(f"{k} p={v:.3g}" for k, v in f.pvalues.items()) + "." \
            if f.test else ""
        tested += f" {f.per_method()[0].upper()}{f.per_method()[1:]}." if f.per_method() else ""
        verdict = f"**{f.verdict().lower()}**" if f.held is not None else "not checked"
        lines.append(f"- {verdict}: {f.claim}. {f.explanation}" + (f".{tested}" if tested else ""))
    return "\n".join(lines) + "\n"


def findings_json(findings: Sequence[Finding]) -> str:
    """The findings as a JSON list of their fields (``findings.json``)."""
    return json.dumps([asdict(f) for f in findings], indent=1, default=str) + "\n"


def write_findings(findings: Sequence[Finding], out_dir: str | Path) -> list[Path]:
    """Write ``findings.md`` and ``findings.json`` into ``out_dir`` (atomically); returns their paths."""
    out_dir = Path(out_dir)
    return [atomic_write_text(out_dir / FINDINGS_MARKDOWN, findings_markdown(findings)),
            atomic_write_text(out_dir / FINDINGS_JSON, findings_json(findings))]


__all__ = ["Finding", "PER_FRAME_METHODS", "RECONSTRUCTION_KEYS", "TEMPORAL_METHODS", "check_findings",
           "findings_json", "findings_markdown", "slice_counts", "write_findings"]
