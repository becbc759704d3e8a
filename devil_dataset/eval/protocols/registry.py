"""The registry of evaluation protocols, and the one table of result keys every writer reads.

Every folder of :mod:`devil_dataset.eval.protocols` with a ``definition.py`` holding ``PROTOCOL`` (an
:class:`~devil_dataset.eval.protocols.declaration.EvaluationProtocol`) is a protocol: adding one is adding a folder
(``docs/protocols.md``). :func:`register_protocol` adds one defined elsewhere (a plugin, a test). The better direction,
number format and title of each result key come from the protocols' declarations (:func:`higher_is_better`,
:func:`key_format`, :func:`key_title`), DEVIL's keys first.

    >>> protocol_names()[:3]
    ('devil', 'propainter', 'prove')
    >>> higher_is_better("psnr"), higher_is_better("ewarp"), key_format("ewarp")
    (True, False, 'sig4')
"""
from __future__ import annotations

import functools
import importlib
import pkgutil
from typing import Mapping, Sequence

from ...core.errors import DevilError, unknown_name
from ..metrics import registry as metric_table
from ..metrics.metric import EvalOptions, VideoMetric
from ..metrics.registry import METRICS, register_metric
from .declaration import EvaluationProtocol, ResultKey

_ADDED: dict[str, EvaluationProtocol] = {}


@functools.lru_cache(maxsize=1)
def _folders() -> tuple[EvaluationProtocol, ...]:
    """The protocols of this package's folders, in name order (DEVIL's first)."""
    package = importlib.import_module(__package__ or "devil_dataset.eval.protocols")
    found = []
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: (i.name != "devil", i.name)):
        if info.ispkg:
            definition = importlib.import_module(f"{package.__name__}.{info.name}.definition")
            found.append(definition.PROTOCOL)
    for protocol in found:
        _register_metric_classes(protocol)
    return tuple(found)


def _register_metric_classes(protocol: EvaluationProtocol) -> None:
    """Add the metric classes ``protocol`` declares to the metric table (``devil evaluate --metrics`` and the
    evaluation pass find them there)."""
    for entry in protocol.metric_classes:
        register_metric(entry, before=protocol.metric_classes_before)


def protocols() -> dict[str, EvaluationProtocol]:
    """Name -> protocol: the folders', then the registered ones."""
    return {**{p.name: p for p in _folders()}, **_ADDED}


def protocol_names() -> tuple[str, ...]:
    """The names of every protocol: the package's folders', then the registered ones."""
    return tuple(protocols())


def built_in_protocol_names() -> tuple[str, ...]:
    """The names of the package's own protocols (its folders), DEVIL's first.

    >>> built_in_protocol_names()
    ('devil', 'propainter', 'prove')
    """
    return tuple(p.name for p in _folders())


def get_protocol(name: str) -> EvaluationProtocol:
    """The protocol named ``name``; an unknown name raises, listing the known ones."""
    try:
        return protocols()[name]
    except KeyError:
        raise unknown_name("protocol", name, protocols()) from None


def register_protocol(protocol: EvaluationProtocol) -> EvaluationProtocol:
    """Add a protocol defined outside this package (its result keys must agree with the known ones' directions and
    formats); returns it. Registering the same name again replaces it."""
    if protocol.name in {p.name for p in _folders()}:
        raise DevilError(f"protocol {protocol.name!r}: a protocol of the package has this name")
    known = _result_keys_of([*_folders(), *(p for n, p in _ADDED.items() if n != protocol.name)])
    for key in protocol.keys:
        other = known.get(key.name)
        if other is not None and (other.higher_is_better, other.format) != (key.higher_is_better, key.format):
            raise DevilError(f"protocol {protocol.name!r}: result key {key.name!r} disagrees with the known one "
                             f"(higher is better {other.higher_is_better}, format {other.format})")
    _register_metric_classes(protocol)
    _ADDED[protocol.name] = protocol
    result_keys.cache_clear()
    return protocol


def unregister_protocol(name: str) -> None:
    """Remove a protocol :func:`register_protocol` added (tests)."""
    _ADDED.pop(name, None)
    result_keys.cache_clear()


def _result_keys_of(found: list[EvaluationProtocol]) -> dict[str, ResultKey]:
    """Result key -> its first declaration; the keys of metric classes first, in the metric table's order, then the
    keys protocols write without a class of their own, in protocol order."""
    out: dict[str, ResultKey] = {}
    for protocol in found:
        for key in protocol.keys:
            out.setdefault(key.name, key)
    by_table = [k for e in METRICS.values() for k in e.keys if k in out]
    return {**{k: out[k] for k in by_table}, **out}


@functools.lru_cache(maxsize=1)
def result_keys() -> Mapping[str, ResultKey]:
    """Result key -> its declaration, over every protocol (the first protocol declaring a key wins: DEVIL's)."""
    return _result_keys_of(list(protocols().values()))


def protocol_keys() -> dict[str, tuple[str, ...]]:
    """Protocol -> every result key it can write into a results ``summary``.

    >>> protocol_keys()["propainter"]
    ('psnr', 'ssim', 'hole_psnr', 'hole_ssim', 'hole_lpips', 'vfid', 'ewarp')
    """
    return {name: p.key_names() for name, p in protocols().items()}


def known_result_keys() -> tuple[str, ...]:
    """Every result key with a better direction and a format, in report order (DEVIL's, then the other protocols').

    >>> known_result_keys()[:2], "ewarp" in known_result_keys()
    (('psnr', 'ssim'), True)
    """
    return tuple(result_keys())


def _key(key: str) -> ResultKey:
    try:
        return result_keys()[key]
    except KeyError:
        raise unknown_name("result key", key, result_keys()) from None


def higher_is_better(key: str) -> bool:
    """True when a higher value of result key ``key`` is better: the one lookup of the better direction (tables,
    relative improvements, figures, findings, the HTML report, comparisons, ``devil benchmark`` and ``devil diagnose``
    read it). Every key of every protocol has one; any other key raises
    :class:`~devil_dataset.core.errors.UnknownNameError` (a silent default ranked E_warp the wrong way).

    >>> higher_is_better("psnr"), higher_is_better("warp_error_mask"), higher_is_better("ewarp")
    (True, False, False)
    """
    return _key(key).higher_is_better


def key_format(key: str, default: str = ".4f") -> str:
    """The printed format of result key ``key`` (``default`` for a key no protocol declares)."""
    known = result_keys().get(key)
    return known.format if known is not None else default


def key_title(key: str) -> str:
    """The column title of result key ``key`` (the key itself for a key no protocol declares)."""
    known = result_keys().get(key)
    return known.title if known is not None else key


def build_metrics(names: Sequence[str] | None,
                  options: EvalOptions) -> tuple[dict[str, VideoMetric], dict[str, str]]:
    """:func:`devil_dataset.eval.metrics.registry.build_metrics` over the whole metric table: the metric floor's
    classes and those the protocols declare (``rc_s``, ``rc_t``: PROVE's). The floors above the protocols look metric
    names up here."""
    _folders()
    return metric_table.build_metrics(names, options)


def resolve_metrics(metric_names: Sequence[str] | None,
                    options: EvalOptions) -> tuple[list[str], list[str], dict[str, str]]:
    """:func:`devil_dataset.eval.metrics.registry.resolve_metrics` over the whole metric table (see
    :func:`build_metrics`)."""
    _folders()
    return metric_table.resolve_metrics(metric_names, options)


def scoring_identity(metric_names: Sequence[str], options: EvalOptions) -> str:
    """:func:`devil_dataset.eval.metrics.registry.scoring_identity` over the whole metric table (see
    :func:`build_metrics`).

    >>> len(scoring_identity(["psnr"], EvalOptions()))
    64
    """
    _folders()
    return metric_table.scoring_identity(metric_names, options)


def results_protocol_of(doc: Mapping) -> EvaluationProtocol | None:
    """The registered protocol a results document was scored under (``protocol`` field, else DEVIL's); None for a
    name no protocol has."""
    name = doc.get("protocol") or ((doc.get("provenance") or {}).get("options") or {}).get("protocol") or "devil"
    return protocols().get(str(name))


# Reading this module reads the package's protocols: the metric table it re-exports (METRICS) holds their classes.
_folders()

__all__ = ["METRICS", "build_metrics", "built_in_protocol_names", "get_protocol", "higher_is_better", "key_format",
           "key_title", "known_result_keys", "protocol_keys", "protocol_names", "protocols", "register_protocol",
           "result_keys", "results_protocol_of", "resolve_metrics", "scoring_identity", "unregister_protocol"]
