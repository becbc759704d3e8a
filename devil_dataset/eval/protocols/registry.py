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
from typing import Mapping

from ...core.errors import DevilError, unknown_name
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
    return tuple(found)


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
    _ADDED[protocol.name] = protocol
    result_keys.cache_clear()
    return protocol


def unregister_protocol(name: str) -> None:
    """Remove a protocol :func:`register_protocol` added (tests)."""
    _ADDED.pop(name, None)
    result_keys.cache_clear()


def _result_keys_of(found: list[EvaluationProtocol]) -> dict[str, ResultKey]:
    out: dict[str, ResultKey] = {}
    for protocol in found:
        for key in protocol.keys:
            out.setdefault(key.name, key)
    return out


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


def results_protocol_of(doc: Mapping) -> EvaluationProtocol | None:
    """The registered protocol a results document was scored under (``protocol`` field, else DEVIL's); None for a
    name no protocol has."""
    name = doc.get("protocol") or ((doc.get("provenance") or {}).get("options") or {}).get("protocol") or "devil"
    return protocols().get(str(name))


__all__ = ["built_in_protocol_names", "get_protocol", "higher_is_better", "key_format", "key_title",
           "known_result_keys", "protocol_keys", "protocol_names", "protocols", "register_protocol", "result_keys",
           "results_protocol_of", "unregister_protocol"]
