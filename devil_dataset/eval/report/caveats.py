"""What a reported number cannot be read without: videos whose infinite PSNR-type value was clipped, results
scored differently from the others, and slices too small for any significant difference.

- :func:`clipped_counts`: per (method, slice) and key, how many videos had an infinite PSNR-type value that the
  release's rule (``parity="release"``) clipped to the largest finite value of the slice (the
  results' ``clipped`` block). Such a cell carries ``∞n`` in every table, figure and summary; it never wins: where
  any cell of a (slice, metric) rests on clipped videos, no cell of it is marked best (the clipped mean depends on
  the other videos' values, so the order is not decided);
- :func:`check_scoring`: results whose scoring identity differs (the evaluation protocol, parity and modes, flow,
  weights, precision: each metric's provenance) are refused with one error naming the files and the differing
  fields, or, when allowed, marked ``§`` and never marked best;
- :func:`significance_floor_note`: the line saying when no method difference can reach significance (the smallest
  Holm-adjusted p of a paired sign-flip test over n videos and m method pairs is m 2 / 2^n).

    >>> docs = [{"method": "a", "slice": "s", "num_videos": 5, "clipped": {"pcons_psnr_mask": ["c1", "c2"]}}]
    >>> clipped_counts(docs)
    {('a', 's'): {'pcons_psnr_mask': 2}}
    >>> clip_mark(2)
    ' ∞2'
"""
from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from ...core.errors import DevilError
from ..stats.intervals import result_cell
from ..stats.significance import SIGNIFICANCE_ALPHA, smallest_sign_flip_p

CLIP_MARK = "\u221e"  # ∞n: n videos of the cell had an infinite value, clipped (the release's rule)
IDENTICAL_MARK = "\u2205"  # ∅n: n videos of the cell were scored identical to the ground truth (an empty mask?)
MIXED_MARK = "\u00a7"  # §: scored differently from the other results (--allow-mixed)
# Provenance fields that say where or how fast a value was computed, or note sharing, not what it is.
NEUTRAL_PROVENANCE = frozenset({"pixel_backend", "pixel_device", "shared", "mean_remasked_fraction", "device"})
# Files named per differing value in an error before "and N more".
FILES_NAMED = 3

Clipped = dict[tuple[str, str], dict[str, int]]
# (method, slice) -> result key -> the videos of the cell scored identical to the ground truth that the key's mean holds
Identical = dict[tuple[str, str], dict[str, list[str]]]
# An SSIM this close to 1 is an identical video's (the release's SSIM of equal frames is 1 up to rounding).
_SSIM_ONE = 1.0 - 1e-12


def _cell(doc: Mapping) -> tuple[str, str]:
    return result_cell(doc)


def capped_counts(docs: Iterable[Mapping]) -> Clipped:
    """``(method, slice) -> {key: videos}`` whose value of a key was capped (``input_notes``' ``capped_frames``: a
    removal leaving the background untouched has an infinite background PSNR, capped at the one-grey-level PSNR).

    >>> capped_counts([{"method": "a", "input_notes": {"v1": {"capped_frames": {"bg_psnr": 3}}}}])
    {('a', '-'): {'bg_psnr': 1}}
    """
    out: Clipped = {}
    for doc in docs:
        counts: dict[str, int] = {}
        for notes in (doc.get("input_notes") or {}).values():
            for key, frames in ((notes or {}).get("capped_frames") or {}).items():
                if frames:
                    counts[str(key)] = counts.get(str(key), 0) + 1
        if counts:
            out[_cell(doc)] = counts
    return out


def clipped_counts(docs: Iterable[Mapping]) -> Clipped:
    """``(method, slice) -> {key: videos clipped}`` from the results' ``clipped`` lists (keys with none left out),
    and the videos whose value of a key was capped (``input_notes``' ``capped_frames``: a removal leaving the
    background untouched has an infinite background PSNR, capped at the one-grey-level PSNR): such a value is as
    undecided as a clipped one.

    >>> clipped_counts([{"method": "a", "input_notes": {"v1": {"capped_frames": {"bg_psnr": 3}}}}])
    {('a', '-'): {'bg_psnr': 1}}
    """
    out: Clipped = {}
    for doc in docs:
        counts = {str(k): len(ids) for k, ids in (doc.get("clipped") or {}).items() if ids}
        for key, n in capped_counts([doc]).get(_cell(doc), {}).items():
            counts[key] = counts.get(key, 0) + n
        if counts:
            out[_cell(doc)] = counts
    return out


def counted(n: int, noun: str) -> str:
    """``n`` and ``noun``, plural unless ``n`` is 1 (the reports' counts: "with 1 video", "5 videos").

    >>> counted(1, "video"), counted(5, "video"), counted(2, "method pair")
    ('1 video', '5 videos', '2 method pairs')
    """
    return f"{n} {noun}{'' if n == 1 else 's'}"


def identical_videos(docs: Iterable[Mapping]) -> Identical:
    """``(method, slice) -> {key: videos}``: the videos whose composite equals the ground truth in every pixel (an
    infinite PSNR, in the results' ``clipped`` or ``infinite`` list, and an SSIM of 1: an empty mask, or a fill equal
    to the ground truth), per key whose mean holds their value (a key they have no value of, e.g. a hole-only
    metric of an empty hole, is left out). Such a video moves every mean toward the metric's best.

    >>> doc = {"method": "a", "slice": "s", "clipped": {"psnr": ["c1"]},
    ...        "videos": {"c0": {"psnr": 30.0, "ssim": 0.9}, "c1": {"psnr": 30.0, "ssim": 1.0, "pcons": None}}}
    >>> identical_videos([doc])
    {('a', 's'): {'psnr': ['c1'], 'ssim': ['c1']}}
    """
    out: Identical = {}
    for doc in docs:
        infinite = {*((doc.get("clipped") or {}).get("psnr") or ()), *((doc.get("infinite") or {}).get("psnr") or ())}
        videos = doc.get("videos") or {}
        ids = sorted(c for c in infinite if _at_least(((videos.get(c) or {}).get("ssim")), _SSIM_ONE))
        by_key: dict[str, list[str]] = {}
        for c in ids:
            for key, value in videos[c].items():
                if isinstance(value, (int, float)) and value == value:  # NaN / null: not in the mean
                    by_key.setdefault(key, []).append(c)
        if by_key:
            out[_cell(doc)] = by_key
    return out


def _at_least(value: object, bound: float) -> bool:
    return isinstance(value, (int, float)) and float(value) >= bound


def identical_lines(docs: Iterable[Mapping]) -> list[str]:
    """One line per (method, slice) naming its videos scored identical to the ground truth (the console's words).

    >>> doc = {"method": "a", "slice": "s", "infinite": {"psnr": ["c1"]}, "videos": {"c1": {"psnr": 1, "ssim": 1.0}}}
    >>> print(identical_lines([doc])[0][:88])
    a on s: video c1 identical to the ground truth in every pixel (an empty mask?): PSNR inf
    """
    lines = []
    for (method, slice_name), by_key in identical_videos(docs).items():
        ids = sorted({c for cs in by_key.values() for c in cs})
        lines.append(f"{method} on {slice_name}: {'video' if len(ids) == 1 else 'videos'} {', '.join(ids)} identical "
                     "to the ground truth in every pixel (an empty mask?): PSNR infinite, SSIM 1; "
                     f"{'it moves' if len(ids) == 1 else 'they move'} every mean toward the metric's best "
                     f"(marked {IDENTICAL_MARK}n)")
    return lines


def clip_mark(n: int) -> str:
    """The mark a cell resting on ``n`` clipped videos carries (empty for none)."""
    return f" {CLIP_MARK}{n}" if n else ""


def clipped_legend() -> str:
    """The legend sentence of the ``∞n`` mark."""
    return (f"{CLIP_MARK}n: n of the cell's videos had an infinite value (an identical frame or patch), clipped to the "
            "largest finite value of the slice, or left infinite when none is finite (the release's rule; "
            "--parity corrected caps each frame at the PSNR of a one-grey-level error instead); where a cell of a "
            "slice and metric rests on clipped videos, none of its cells is marked best")


@dataclass(frozen=True)
class Caveats:
    """What the tables and figures mark: clipped videos per cell and cells scored differently (``§``).

    ``mixed``: (method, slice) -> the fields where it differs from the other results (``parity corrected``).
    """

    clipped: Clipped = field(default_factory=dict)
    mixed: Mapping[tuple[str, str], str] = field(default_factory=dict)
    identical: Identical = field(default_factory=dict)
    capped: Clipped = field(default_factory=dict)  # the part of ``clipped`` that was capped (:func:`capped_counts`)

    def clipped_n(self, method: str, slice_name: str, key: str) -> int:
        return self.clipped.get((method, slice_name), {}).get(key, 0)

    def identical_n(self, method: str, slice_name: str, key: str) -> int:
        """Videos of the cell scored identical to the ground truth (:func:`identical_videos`)."""
        return len(self.identical.get((method, slice_name), {}).get(key, ()))

    def mark(self, method: str, slice_name: str, key: str) -> str:
        """The marks after a cell's value: `` ∞n``, `` ∅n`` and/or `` §``."""
        n = self.identical_n(method, slice_name, key)
        return clip_mark(self.clipped_n(method, slice_name, key)) + (f" {IDENTICAL_MARK}{n}" if n else "") + (
            f" {MIXED_MARK}" if (method, slice_name) in self.mixed else "")

    def undecided(self, slice_name: str, key: str, methods: Sequence[str]) -> bool:
        """True when some cell of (slice, key) rests on clipped videos: no best there."""
        return any(self.clipped_n(m, slice_name, key) for m in methods)

    def legend(self, keys: Sequence[str]) -> str:
        """The legend sentences of the marks present among ``keys`` (empty when none)."""
        parts = []
        if any(n > self.capped.get(c, {}).get(k, 0) for c in self.clipped for k, n in self.clipped[c].items()
               if k in keys):
            parts.append(clipped_legend())
        capped = sorted({k for c in self.capped.values() for k in c if k in keys})
        if capped:
            parts.append(f"{CLIP_MARK}n on {', '.join(capped)}: n of the cell's videos left the compared region "
                         "untouched (an infinite PSNR), capped at the one-grey-level PSNR 10 log10(N 255^2); never "
                         "marked best")
        named = {c: sorted({v for k in keys for v in by_key.get(k, ())}) for c, by_key in self.identical.items()}
        if any(named.values()):
            where = "; ".join(f"{m} on {s}: {', '.join(ids)}" for (m, s), ids in sorted(named.items()) if ids)
            parts.append(f"{IDENTICAL_MARK}n: n of the cell's videos were scored identical to the ground truth in "
                         f"every pixel (PSNR infinite, SSIM 1: an empty mask, or a fill equal to the ground truth), "
                         f"which moves the mean toward the metric's best ({where})")
        if self.mixed:
            what = "; ".join(f"{m} on {s}: {d}" for (m, s), d in sorted(self.mixed.items()))
            parts.append(f"{MIXED_MARK}: scored differently from the other results ({what}); not comparable, never "
                         "marked best")
        return "; ".join(parts)


def results_protocol(doc: Mapping) -> str:
    """The evaluation protocol a results document was scored under: its ``protocol`` field (``devil evaluate
    --protocol``), else ``provenance.options.protocol``, else ``"devil"`` (DEVIL's results files do not record it).

    >>> results_protocol({"protocol": "other"}), results_protocol({"provenance": {"options": {}}})
    ('other', 'devil')
    """
    top = doc.get("protocol")
    if isinstance(top, str) and top:
        return top
    options = (doc.get("provenance") or {}).get("options") or {}
    return str(options.get("protocol") or "devil")


def scoring_fields(doc: Mapping) -> dict[str, str]:
    """What makes a results document's values what they are, field by field: the ``protocol``
    (:func:`results_protocol`: two protocols' PSNR are different numbers), ``parity``, and for each metric its
    provenance (implementation, modes, arithmetic, flow backend, weights, precision) without where it ran.

    >>> scoring_fields({"provenance": {"options": {"parity": "corrected"},
    ...                                "metrics": {"ssim": {"mode": "standard", "pixel_device": "cpu"}}}})
    {'protocol': '"devil"', 'parity': '"corrected"', 'ssim.mode': '"standard"'}
    """
    prov = doc.get("provenance") or {}
    options = prov.get("options") or {}
    out = {"protocol": json.dumps(results_protocol(doc)), "parity": json.dumps(options.get("parity", "release"))}
    for name, mp in sorted((prov.get("metrics") or {}).items()):
        for k, v in sorted((mp or {}).items()):
            if k not in NEUTRAL_PROVENANCE:
                out[f"{name}.{k}"] = json.dumps(v, sort_keys=True, default=str)
    for kind in ("weights", "flow_backend"):
        for name, v in sorted((prov.get(kind) or {}).items()):
            out.setdefault(f"{name}.{kind}", json.dumps(v, sort_keys=True, default=str))
    if prov.get("weights"):  # a network metric ran: its arithmetic matters
        out["precision"] = json.dumps(options.get("precision", "float32"))
    return out


def _named(files: Sequence[str]) -> str:
    more = f" and {len(files) - FILES_NAMED} more" if len(files) > FILES_NAMED else ""
    return ", ".join(files[:FILES_NAMED]) + more


def scoring_conflicts(docs: Sequence[Mapping]) -> dict[str, dict[str, list[int]]]:
    """Field -> value -> indices of the documents with it, for the fields whose value differs between documents
    that have it (a metric one document did not compute is no conflict)."""
    per_doc = [scoring_fields(d) for d in docs]
    values: dict[str, dict[str, list[int]]] = {}
    for i, fields in enumerate(per_doc):
        for k, v in fields.items():
            values.setdefault(k, {}).setdefault(v, []).append(i)
    return {k: vs for k, vs in values.items() if len(vs) > 1}


def check_scoring(docs: Sequence[Mapping], names: Sequence[str | Path] | None = None, *,
                  allow_mixed: bool = False) -> dict[tuple[str, str], str]:
    """Refuse results scored differently: a :class:`DevilError` naming, per differing field, each value and the files
    (``names``, default ``method/slice``) that have it. With ``allow_mixed`` return the (method, slice) cells that
    differ from the most common value of a field (ties: the first document's) -> their differing fields, to be
    marked ``§``; ``{}`` when every document agrees.

    >>> a = {"method": "x", "slice": "s", "provenance": {"options": {"parity": "release"}}}
    >>> b = {"method": "y", "slice": "s", "provenance": {"options": {"parity": "corrected"}}}
    >>> check_scoring([a, b], allow_mixed=True)
    {('y', 's'): 'parity "corrected" (others "release")'}
    """
    docs = list(docs)
    labels = [str(n) for n in names] if names is not None else ["/".join(_cell(d)) for d in docs]
    conflicts = scoring_conflicts(docs)
    if not conflicts:
        return {}
    if not allow_mixed and "protocol" in conflicts:
        found = "; ".join(f"{json.loads(v)} in {_named([labels[i] for i in idx])}"
                          for v, idx in conflicts["protocol"].items())
        raise DevilError(f"results of different evaluation protocols cannot share a table (the same metric names "
                         f"are different numbers under each protocol): protocol {found}; report each protocol "
                         f"separately, or pass --allow-mixed to report them side by side, marked {MIXED_MARK}")
    if not allow_mixed:
        lines = [f"  {k}: " + "; ".join(f"{v} in {_named([labels[i] for i in idx])}" for v, idx in vs.items())
                 for k, vs in conflicts.items()]
        raise DevilError("results scored differently cannot be compared (their scoring identity differs; rerun "
                         "them alike, or pass --allow-mixed to report them side by side, marked "
                         f"{MIXED_MARK}):\n" + "\n".join(lines))
    marks: dict[tuple[str, str], list[str]] = {}
    for k, vs in conflicts.items():
        counts = Counter({v: len(idx) for v, idx in vs.items()})
        first = scoring_fields(docs[0]).get(k)
        top = max(counts.values())
        ref = first if counts.get(first or "", 0) == top else next(v for v, c in counts.items() if c == top)
        for v, idx in vs.items():
            if v != ref:
                for i in idx:
                    marks.setdefault(_cell(docs[i]), []).append(f"{k} {v} (others {ref})")
    return {c: "; ".join(d) for c, d in marks.items()}


def caveats_of(docs: Sequence[Mapping], names: Sequence[str | Path] | None = None, *,
                allow_mixed: bool = False) -> Caveats:
    """The :class:`Caveats` of results documents: clipped videos, videos identical to the ground truth, and the
    cells scored differently (refused with the files ``names`` unless ``allow_mixed``: :func:`check_scoring`).

    >>> caveats_of([{"method": "a", "slice": "s", "clipped": {"psnr": ["c"]}, "videos": {"c": {"ssim": 1.0}}}])
    Caveats(clipped={('a', 's'): {'psnr': 1}}, mixed={}, identical={('a', 's'): {'ssim': ['c']}}, capped={})
    """
    docs = list(docs)
    return Caveats(clipped_counts(docs), check_scoring(docs, names, allow_mixed=allow_mixed), identical_videos(docs),
                   capped_counts(docs))


def significance_floor_note(comparisons: Sequence[Mapping[str, Any]] | None,
                            alpha: float = SIGNIFICANCE_ALPHA) -> str:
    """One sentence when some (slice, metric) family of paired comparisons cannot reach significance: with n paired
    videos and m method pairs the smallest Holm-adjusted p is ``min(1, m 2 / 2^n)`` (an exact sign-flip test's
    smallest p is 2 / 2^n); empty when every family can.

    >>> pairs = (("x", "y"), ("x", "z"), ("y", "z"))
    >>> rows = [{"slice": "s", "metric": "psnr", "a": a, "b": b, "n": 5} for a, b in pairs]
    >>> significance_floor_note(rows)[:112]
    'Significance is out of reach: with 5 videos and 3 method pairs per slice and metric the smallest Holm-adjusted p'
    """
    families: dict[tuple[str, str], list[int]] = {}
    for r in comparisons or ():
        if r.get("n"):
            families.setdefault((str(r["slice"]), str(r["metric"])), []).append(int(r["n"]))
    floors = {f: min(1.0, len(ns) * smallest_sign_flip_p(min(ns))) for f, ns in families.items()}
    blocked = [f for f, p in floors.items() if p >= alpha]
    if not blocked:
        return ""
    n = min(min(families[f]) for f in blocked)
    m = max(len(families[f]) for f in blocked)
    where = "" if len(blocked) == len(floors) else f" ({len(blocked)} of {len(floors)} slice-metric families)"
    return (f"Significance is out of reach: with {counted(n, 'video')} and {counted(m, 'method pair')} per slice and "
            f"metric the smallest Holm-adjusted p a paired sign-flip test can give is {m} x 2/2^{n} = "
            f"{min(1.0, m * smallest_sign_flip_p(n)):.3g} >= {alpha:g}{where}: every method that is not the best "
            "carries †, whatever the difference; more videos are needed.")


__all__ = ["CLIP_MARK", "Caveats", "Clipped", "IDENTICAL_MARK", "Identical", "MIXED_MARK", "check_scoring", "clip_mark",
           "capped_counts", "caveats_of", "clipped_counts", "counted", "identical_lines", "identical_videos",
           "clipped_legend", "results_protocol", "scoring_conflicts", "scoring_fields", "significance_floor_note"]
