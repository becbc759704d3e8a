"""The metric table: CLI name -> implementing class and the result keys it produces (one source of truth).

Classes are imported lazily (``"module:Class"``) so that pixel-only evaluation never imports torch networks. The
table holds the metric classes of this floor; a metric class that belongs to one evaluation protocol is declared by
that protocol (:attr:`~devil_dataset.eval.protocols.declaration.EvaluationProtocol.metric_classes`) and added here by
the protocol registry when it reads the protocols (:func:`register_metric`), which the table asks it to do
(:data:`METRIC_PLUGINS`) before it calls a name unknown.

    >>> METRICS["pcons"].keys
    ('pcons_psnr_mask',)
    >>> "fid" in DEVIL_METRICS
    True
"""
from __future__ import annotations

import hashlib
import importlib
import json
from dataclasses import dataclass
from typing import Mapping, Sequence

from ...core.errors import DevilError, UnknownNameError, WeightsMissingError, unknown_name
from .metric import EvalOptions, VideoMetric


@dataclass(frozen=True)
class MetricEntry:
    """A metric's CLI name, implementing class path, result keys, better direction and report format."""

    name: str
    target: str  # "module:Class", imported on demand
    keys: tuple[str, ...]
    higher_is_better: tuple[bool, ...]
    formats: tuple[str, ...]  # the release's number formats per key
    needs_weights: bool

    def load(self) -> type:
        module, cls = self.target.split(":")
        return getattr(importlib.import_module(module), cls)

    def create(self, options: EvalOptions) -> VideoMetric:
        return self.load()(options)


_E = MetricEntry
METRICS: dict[str, MetricEntry] = {
    e.name: e
    for e in (
        # The DEVIL metrics (the paper's Section 4, the release's evaluation code)
        _E("psnr", "devil_dataset.eval.metrics.pixel:PSNRMetric", ("psnr",), (True,), (".2f",), False),
        _E("ssim", "devil_dataset.eval.metrics.pixel:SSIMMetric", ("ssim",), (True,), (".4f",), False),
        _E("lpips", "devil_dataset.eval.metrics.perceptual:LPIPSMetric", ("lpips",), (False,), (".6f",), True),
        _E("pvcs", "devil_dataset.eval.metrics.i3d:PVCSMetric", ("pvcs",), (False,), (".4f",), True),
        _E("fid", "devil_dataset.eval.metrics.perceptual:FIDMetric", ("fid",), (False,), (".2f",), True),
        _E("vfid", "devil_dataset.eval.metrics.i3d:VFIDMetric", ("vfid", "vfid_clips"), (False, False), (".4f", ".4f"),
           True),
        _E("warp_error", "devil_dataset.eval.metrics.warp:WarpErrorMetric", ("warp_error_mask",), (False,), (".6f",),
           False),
        _E("pcons", "devil_dataset.eval.metrics.pixel:PConsMetric", ("pcons_psnr_mask",), (True,), (".2f",), False),
        # Related benchmarks' reference-free and fidelity metrics
        _E("self_consistency", "devil_dataset.eval.metrics.self_consistency:SelfConsistencyMetric",
           ("self_consistency",), (False,), (".4f",), True),  # default LPIPS sub-metric
        _E("ff_alpha", "devil_dataset.eval.metrics.fidelity:FFAlphaMetric", ("ff_alpha",), (False,), (".4f",), False),
        _E("ff_beta", "devil_dataset.eval.metrics.fidelity:FFBetaMetric", ("ff_beta",), (False,), (".4f",), False),
        _E("unchanged_region", "devil_dataset.eval.metrics.fidelity:UnchangedRegionMetric", ("unchanged_region",),
           (False,),
           (".4f",), False),
        # The removal papers' background (MiniMax-Remover) and masked (VideoPainter) PSNR / SSIM
        _E("bg_psnr", "devil_dataset.eval.metrics.removal_fidelity:BackgroundPSNRMetric", ("bg_psnr",), (True,),
           (".2f",), False),
        _E("bg_ssim", "devil_dataset.eval.metrics.removal_fidelity:BackgroundSSIMMetric", ("bg_ssim",), (True,),
           (".4f",), False),
        _E("masked_psnr", "devil_dataset.eval.metrics.removal_fidelity:MaskedPSNRMetric", ("masked_psnr",), (True,),
           (".2f",), False),
        _E("masked_ssim", "devil_dataset.eval.metrics.removal_fidelity:MaskedSSIMMetric", ("masked_ssim",), (True,),
           (".4f",), False),
    )
}

#: The metric classes of this floor, in table order (the protocols' own classes are added by :func:`register_metric`).
FLOOR_METRICS: tuple[str, ...] = tuple(METRICS)

# The nine DEVIL metric keys of the release's evaluation, in report order.
DEVIL_METRICS: tuple[str, ...] = ("psnr", "ssim", "lpips", "pvcs", "fid", "vfid", "warp_error", "pcons")
# The DEVIL metrics with no network weights, scored per clip by :mod:`devil_dataset.pipeline.inpaint_and_score` (their
# slice values are means of per-video values, so they are rebuilt from the per-video cache), in results order.
PIXEL_METRICS: tuple[str, ...] = ("psnr", "ssim", "pcons", "warp_error")


#: Functions (``"module:function"``) that add metric classes to this table: the evaluation protocols' registry, which
#: adds each protocol's own classes (``EvaluationProtocol.metric_classes``, e.g. PROVE's ``rc_s`` and ``rc_t``). The
#: table calls them, by name as it imports its classes, before it first answers that a name or key is unknown, so
#: that a lookup never depends on what its caller happened to import first.
METRIC_PLUGINS: tuple[str, ...] = ("devil_dataset.eval.protocols.registry:protocols",)
_plugins_read = False


def _read_plugins() -> None:
    """Call every :data:`METRIC_PLUGINS` function once per process."""
    global _plugins_read
    if _plugins_read:
        return
    _plugins_read = True
    for target in METRIC_PLUGINS:
        module, function = target.split(":")
        getattr(importlib.import_module(module), function)()


def register_metric(entry: MetricEntry, *, before: str | None = None) -> MetricEntry:
    """Add ``entry`` to the metric table (placed before the entry named ``before`` when there is one, else last: the
    report's column order follows the table); returns it. Adding the same entry again changes nothing; another entry
    under a known name raises.

    >>> entry = MetricEntry("toy_metric", "devil_dataset.eval.metrics.pixel:PSNRMetric", ("toy",), (True,), (".2f",),
    ...                     False)
    >>> register_metric(entry, before="psnr") is entry, list(METRICS)[0], higher_is_better("toy")
    (True, 'toy_metric', True)
    >>> unregister_metric("toy_metric"); "toy_metric" in METRICS
    False
    """
    known = METRICS.get(entry.name)
    if known is not None:
        if known != entry:
            raise DevilError(f"metric {entry.name!r}: another metric class has this name ({known.target})")
        return entry
    rows = list(METRICS.items())
    at = next((i for i, (name, _) in enumerate(rows) if name == before), len(rows))
    rows.insert(at, (entry.name, entry))
    METRICS.clear()
    METRICS.update(rows)
    _index_keys()
    return entry


def unregister_metric(name: str) -> None:
    """Remove a metric :func:`register_metric` added (the floor's own classes stay)."""
    if name not in FLOOR_METRICS and METRICS.pop(name, None) is not None:
        _index_keys()


def metric_entry(name: str) -> MetricEntry:
    """Look up a metric by CLI name; the error lists the valid names."""
    if name not in METRICS:
        _read_plugins()
    try:
        return METRICS[name]
    except KeyError:
        raise unknown_name("metric", name, METRICS) from None


def build_metrics(
    names: Sequence[str] | None, options: EvalOptions
) -> tuple[dict[str, VideoMetric], dict[str, str]]:
    """Construct the requested metrics; return (name -> metric, skipped name -> reason).

    ``names`` are registry names (``warp_error``) or result keys (``warp_error_mask``).
    ``names=None`` means every DEVIL metric (the release's evaluation) that can run here: a metric whose weights are
    missing (:class:`WeightsMissingError`) or whose implementation is not installed is skipped with its reason.
    A metric named explicitly must run: its error is raised.
    """
    explicit = names is not None
    if names is not None and any(n not in METRICS for n in names):
        _read_plugins()  # a protocol's own class, or a result key
    by_key = {k: e.name for e in METRICS.values() for k in e.keys}  # result keys work as names too
    wanted = list(dict.fromkeys(by_key.get(n, n) if n not in METRICS else n for n in names)) if names is not None \
        else list(DEVIL_METRICS)
    metrics: dict[str, VideoMetric] = {}
    skipped: dict[str, str] = {}
    missing: list[str] = []  # explicit metrics whose weights are missing or corrupt: all named in one error
    errors: list[WeightsMissingError] = []
    for name in wanted:
        try:
            entry = metric_entry(name)
        except UnknownNameError as exc:
            raise UnknownNameError(f"metric_names: {exc}") from None
        try:
            metrics[name] = entry.create(options)
        except WeightsMissingError as exc:
            if explicit:
                missing.append(f"metric {name}: {exc}")
                errors.append(exc)
                continue
            skipped[name] = str(exc)
        except (ImportError, AttributeError) as exc:
            if explicit:
                raise DevilError(f"metric {name}: implementation not available ({exc})") from None
            skipped[name] = f"implementation not available ({exc})"
    if missing:
        # the most specific type all the errors share (every one corrupt -> WeightsCorruptError)
        kind = type(errors[0]) if all(type(e) is type(errors[0]) for e in errors) else WeightsMissingError
        raise kind("; ".join(missing) if len(missing) == 1 else
                   f"{len(missing)} metrics miss their weights:\n  " + "\n  ".join(missing))
    return metrics, skipped


#: Provenance keys that say where a value was computed, not what it is (the backends give the same values).
_VALUE_NEUTRAL_PROVENANCE = frozenset({"pixel_backend", "pixel_device"})


def scoring_identity(metric_names: Sequence[str], options: EvalOptions) -> str:
    """A sha256 hex of what makes the per-video values of ``metric_names`` under ``options`` what they are: each
    metric's provenance (implementation, modes, arithmetic, flow backend, weights), without where it ran. Stored
    per-video values (:class:`~devil_dataset.eval.scoring.results.ValuesCache`) are reused only under the same identity.

    >>> a = scoring_identity(["psnr", "ssim"], EvalOptions())
    >>> a == scoring_identity(["psnr", "ssim"], EvalOptions(pixel_backend="torch"))
    True
    >>> a == scoring_identity(["psnr", "ssim"], EvalOptions(parity="corrected"))
    False
    """

    metrics, _ = build_metrics(list(metric_names), options)
    what = {name: {k: v for k, v in metric.provenance().items() if k not in _VALUE_NEUTRAL_PROVENANCE}
            for name, metric in sorted(metrics.items())}
    return hashlib.sha256(json.dumps(what, sort_keys=True, default=str).encode()).hexdigest()


# Result key -> (higher is better, format) of every metric class's keys. The table of every protocol's keys (the
# metric classes' and those a protocol writes without a class of its own) is
# :func:`devil_dataset.eval.protocols.registry.higher_is_better`, built from the protocols' declarations.
_METRIC_KEYS: dict[str, tuple[bool, str]] = {}


def _index_keys() -> None:
    """Rebuild the result-key table from :data:`METRICS` (after a class is added or removed)."""
    _METRIC_KEYS.clear()
    _METRIC_KEYS.update({k: (hib, f) for e in METRICS.values()
                         for k, hib, f in zip(e.keys, e.higher_is_better, e.formats)})


_index_keys()


def higher_is_better(key: str) -> bool:
    """True when a higher value of a metric class's result key ``key`` is better (the registry entry's direction);
    any other key raises :class:`~devil_dataset.core.errors.UnknownNameError` (no silent default).

    >>> higher_is_better("psnr"), higher_is_better("warp_error_mask"), higher_is_better("ff_alpha")
    (True, False, False)
    """
    if key not in _METRIC_KEYS:
        _read_plugins()
    try:
        return _METRIC_KEYS[key][0]
    except KeyError:
        raise unknown_name("result key", key, _METRIC_KEYS) from None


def resolve_metrics(metric_names: Sequence[str] | None,
                    options: EvalOptions) -> tuple[list[str], list[str], dict[str, str]]:
    """``(pixel metrics, other metrics that can run, skipped metric -> reason)`` of a run's metric request.

    ``None``: every DEVIL metric that can run here (weights present), the others skipped with their reason.
    Names (registry names or result keys) must all run: unknown names and missing weights raise.

    >>> resolve_metrics(["warp_error_mask", "ssim", "psnr"], EvalOptions())
    (['psnr', 'ssim', 'warp_error'], [], {})
    """

    if metric_names is None:
        _, skipped = build_metrics(None, options)
        runnable = [m for m in METRICS if m not in skipped and m in DEVIL_METRICS]
    else:
        if any(n not in METRICS for n in metric_names):
            _read_plugins()
        by_key = {k: e.name for e in METRICS.values() for k in e.keys}
        runnable = list(dict.fromkeys(by_key.get(n, n) for n in metric_names))
        build_metrics(runnable, options)  # raises for unknown names / missing weights
        skipped = {}
    pixel = [m for m in PIXEL_METRICS if m in runnable]
    others = [m for m in runnable if m not in PIXEL_METRICS]
    return pixel, others, skipped


def skipped_lines(skipped: Mapping[str, str]) -> list[str]:
    """One line per distinct reason: ``skipped metrics pvcs, vfid: rgb_imagenet.pt: not in the weights cache``.

    >>> for line in skipped_lines({"fid": "x.pth: not cached. Run this.", "lpips": "x.pth: not cached."}):
    ...     print(line)
    skipped metrics fid, lpips: x.pth: not cached
      (see `devil weights --help`: network weights are downloaded or imported into the cache)
    """
    by_reason: dict[str, list[str]] = {}
    for name, reason in skipped.items():
        by_reason.setdefault(reason.split(". ")[0].rstrip("."), []).append(name)
    lines = [f"skipped metric{'s' if len(names) > 1 else ''} {', '.join(names)}: {reason}"
             for reason, names in by_reason.items()]
    if lines:
        lines.append("  (see `devil weights --help`: network weights are downloaded or imported into the cache)")
    return lines
