"""One switch for the release-versus-corrected choice: ``parity`` sets every mode of a stage together.

Where the release has a quirk that its published labels and scores depend on, the package names two behaviours:
``release`` reproduces the release ("parity": same labels, masks and scores as the original
release on the same inputs) and ``corrected`` fixes it, clearly named (the release's scorers, slices and metrics). Each
stage's options (:class:`devil_dataset.builder.build_options.BuildOptions`,
:class:`devil_dataset.eval.metrics.metric.EvalOptions`) hold one ``parity`` and the individual modes, with a table of
the modes each parity sets. A mode left at ``None`` takes the value ``parity`` sets; a mode given explicitly wins (an
expert's override). :func:`resolve_modes` does that for every options object, so that a whole protocol is one choice, as
clean-fid's ``compute_fid(mode=...)``.

    >>> table = {"release": {"ssim_mode": "release"}, "corrected": {"ssim_mode": "standard"}}
    >>> resolve_modes("corrected", {"ssim_mode": None}, table)
    {'ssim_mode': 'standard'}
    >>> resolve_modes("corrected", {"ssim_mode": "release"}, table)  # an explicit mode wins
    {'ssim_mode': 'release'}
"""
from __future__ import annotations

from typing import Literal, Mapping

from .errors import UnknownNameError

Parity = Literal["release", "corrected"]
#: the protocols ``parity`` names ("parity" = the release's behaviour; "corrected" = fixed)
PARITIES: tuple[str, ...] = ("release", "corrected")


def mode_choices(table: Mapping[str, Mapping[str, str]], mode: str) -> tuple[str, ...]:
    """The values ``mode`` may take: the ones the parities of ``table`` set, in :data:`PARITIES` order.

    >>> mode_choices({"release": {"ssim_mode": "release"}, "corrected": {"ssim_mode": "standard"}}, "ssim_mode")
    ('release', 'standard')
    """
    return tuple(dict.fromkeys(table[p][mode] for p in PARITIES))


def resolve_modes(parity: str, modes: Mapping[str, str | None],
                  table: Mapping[str, Mapping[str, str]]) -> dict[str, str]:
    """Every mode of ``modes`` resolved: ``None`` -> the value ``table[parity]`` sets, else the given value.

    Raises :class:`~devil_dataset.core.errors.UnknownNameError` (a ``DevilError``) for a parity that is not in
    :data:`PARITIES` or a mode value that no parity sets, naming the field and the valid values.

        >>> resolve_modes("strict", {}, {"release": {}, "corrected": {}})
        Traceback (most recent call last):
        ...
        devil_dataset.core.errors.UnknownNameError: parity: unknown parity 'strict'; valid: release, corrected
    """
    if parity not in PARITIES:
        raise UnknownNameError(f"parity: unknown parity {parity!r}; valid: {', '.join(PARITIES)}")
    resolved = {}
    for name, value in modes.items():
        valid = mode_choices(table, name)
        if value is not None and value not in valid:
            raise UnknownNameError(f"{name}: unknown {name.replace('_', ' ')} {value!r}; valid: {', '.join(valid)} "
                                   f"(or None: the mode parity {parity!r} sets)")
        resolved[name] = table[parity][name] if value is None else value
    return resolved


__all__ = ["PARITIES", "Parity", "mode_choices", "resolve_modes"]
