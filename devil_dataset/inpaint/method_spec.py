"""How to run one method: a baseline name, a command template run once per clip, or a Python ``module:function``.

``devil inpaint`` and ``devil benchmark`` (:mod:`devil_dataset.pipeline`) both take one.

    >>> MethodSpec(baseline="telea").inpainter().__name__
    'telea'
"""
from __future__ import annotations

from dataclasses import dataclass

from ..core.errors import DevilError, unknown_name
from .contract import Inpainter
from .external import callable_identity, callable_inpainter, command_identity, command_inpainter
from .registry import INPAINTERS, get_inpainter


@dataclass(frozen=True)
class MethodSpec:
    """How to run one method: a baseline name, a command template run once per clip, or a ``module:function``.

    ``hole_pixels``, ``size_divisor`` and ``timeout`` apply to external methods as in ``devil inpaint``
    (:mod:`devil_dataset.inpaint.external`). The spec is recorded in each prediction folder's manifest, so a
    re-run with another command refuses the folder instead of mixing predictions.

        >>> MethodSpec(command="python run.py --in {input_dir} --out {output_dir}").kind
        'command'
        >>> MethodSpec(baseline="teleaa").inpainter()
        Traceback (most recent call last):
        ...
        devil_dataset.core.errors.UnknownNameError: unknown baseline 'teleaa'; did you mean 'telea'? valid: telea, ...
    """

    baseline: str | None = None
    command: str | None = None
    callable: str | None = None
    hole_pixels: str = "zero"
    size_divisor: int | None = None
    timeout: float | None = None

    def __post_init__(self) -> None:
        given = [k for k in ("baseline", "command", "callable") if getattr(self, k) is not None]
        if len(given) != 1:
            raise DevilError(f"a method needs exactly one of baseline, command, callable (got {given or 'none'})")

    @property
    def kind(self) -> str:
        """``baseline``, ``command`` or ``callable``."""
        return "baseline" if self.baseline is not None else "command" if self.command is not None else "callable"

    def inpainter(self) -> Inpainter:
        """The inpainter this spec describes (a baseline is checked against the registry)."""
        if self.command is not None:
            return command_inpainter(self.command, hole_pixels=self.hole_pixels, size_divisor=self.size_divisor,
                                     timeout=self.timeout)
        if self.callable is not None:
            return callable_inpainter(self.callable, hole_pixels=self.hole_pixels, size_divisor=self.size_divisor)
        if self.baseline not in INPAINTERS:
            raise unknown_name("baseline", self.baseline, INPAINTERS)
        return get_inpainter(self.baseline, self.size_divisor)

    def provenance(self) -> dict | None:
        """What the method is, for the results' provenance and the stored work's keys: the command and the hashes
        of the files it names (:func:`~devil_dataset.inpaint.external.command_identity`), or the callable and the
        hash of its module's source (:func:`~devil_dataset.inpaint.external.callable_identity`), each with a short
        ``identity``; None for a baseline (the package version says which code it is).

            >>> MethodSpec(command="true {output_dir}").provenance()["files"]
            {}
        """
        if self.command is not None:
            return command_identity(self.command)
        if self.callable is not None:
            return callable_identity(self.callable)
        return None

    def identity(self) -> str | None:
        """The short hash of :meth:`provenance` (None for a baseline): stored work made with another identity (the
        method's code changed) is redone."""
        record = self.provenance()
        return None if record is None else str(record["identity"])

    def run_info(self) -> dict:
        """What the prediction folders' manifests record besides the dataset and slice (as ``devil inpaint``)."""
        if self.kind == "baseline":
            return {"size_divisor": self.size_divisor}
        return {"size_divisor": self.size_divisor, "command": self.command, "callable": self.callable,
                "hole_pixels": self.hole_pixels}


__all__ = ["MethodSpec"]
