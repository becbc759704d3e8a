"""What an evaluation protocol declares (:class:`EvaluationProtocol`), and the one rule that decides which of its
metrics run (:func:`runnable_metrics`).

A protocol is one folder of :mod:`devil_dataset.eval.protocols` whose ``definition.py`` holds ``PROTOCOL``: its
result keys (better direction, number format, column title, what the number is), the input layouts it reads, its
metrics, the default ones and what each needs (weights, a model), its parity modes, its paper table, and the
function that evaluates its folders. :mod:`devil_dataset.eval.protocols.registry` finds them.

    >>> key = ResultKey("rc_s", True, ".4f", "RC-S", "fill vs its surroundings")
    >>> key.arrow, ResultKey("rc_t", False, ".4f", "RC-T").arrow
    ('▲', '▼')
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from ...core.errors import DevilError, WeightsMissingError, unknown_name
from ..metrics.metric import EvalOptions
from ..metrics.registry import MetricEntry

UP, DOWN = "\u25b2", "\u25bc"  # paper Table 1: ▲ higher is better, ▼ lower is better


@dataclass(frozen=True)
class ResultKey:
    """One number a protocol writes into a results ``summary``: its better direction, printed format (``.2f``, or
    ``sigN``: N significant digits in fixed notation), column title and what it is (captions)."""

    name: str
    higher_is_better: bool
    format: str
    title: str
    caption: str = ""

    @property
    def arrow(self) -> str:
        return UP if self.higher_is_better else DOWN


@dataclass(frozen=True)
class InputLayout:
    """A layout of input folders a protocol reads: the ``devil evaluate`` options (argparse names) it needs, in the
    order they are named, and what it is. ``evaluate``: ``"module:function"`` of :class:`FolderRequest` -> results
    document, where this layout of a protocol with several is scored through the one runner
    (:meth:`EvaluationProtocol.run` with ``layout``; DEVIL's release folders)."""

    name: str
    flags: tuple[str, ...]
    description: str = ""
    evaluate: str | None = None


@dataclass(frozen=True)
class PaperTable:
    """The table papers print from a protocol's results (``devil report --paper-table``): the column groups
    (datasets) printed by default, the metrics printed in each group (the other computed ones follow), per key its
    header, printed scale and digits (and a LaTeX header where the text one does not typeset), and sentences the
    caption adds when a key is shown (e.g. a metric with no interval)."""

    groups: tuple[str, ...]
    keys: tuple[str, ...]
    columns: Mapping[str, tuple[str, float, int]]
    latex_names: Mapping[str, str] = field(default_factory=dict)
    key_notes: Mapping[str, str] = field(default_factory=dict)
    arrows: tuple[str, str] = ("↑", "↓")  # higher, lower is better


@dataclass(frozen=True)
class FolderRequest:
    """What ``devil evaluate`` hands a protocol that reads folders: ``folders`` (option name -> path, every one of
    the layout's), the metrics asked for (``None``: the defaults), the options, the method name, processes / engine,
    progress, and the folder keeping each video's values as it is scored (``cache``; none: not kept), from which a run
    started again after an interruption scores only what is missing
    (:class:`~devil_dataset.eval.protocols.runner.StoredVideoScores`), and the slice the folders hold
    (``slice_name``: recorded by a protocol whose document names one)."""

    folders: Mapping[str, Path]
    metric_names: Sequence[str] | None
    options: EvalOptions
    method: str | None = None
    jobs: int = 1
    engine: Any = None
    progress: bool = False
    cache: Path | None = None
    slice_name: str | None = None


#: A metric's requirement: raises :class:`~devil_dataset.core.errors.WeightsMissingError` (naming the file or model
#: and how to get it) when what the metric needs is not here.
Requirement = Callable[[EvalOptions], None]


@dataclass(frozen=True)
class EvaluationProtocol:
    """One evaluation protocol (see the module docstring). ``evaluate`` / ``notes``: ``"module:function"`` imported
    when called (a protocol's run may import heavy modules; reading the declaration never does). ``metric_classes``:
    the metric classes of this protocol only, which the registry adds to the metric table
    (:func:`~devil_dataset.eval.metrics.registry.register_metric`, before the entry ``metric_classes_before``)."""

    name: str
    description: str
    keys: tuple[ResultKey, ...]
    layouts: tuple[InputLayout, ...]
    metrics: tuple[str, ...]
    default_metrics: tuple[str, ...]
    needs: Mapping[str, Requirement] = field(default_factory=dict)
    parity_modes: Mapping[str, str] = field(default_factory=dict)
    paper_table: PaperTable | None = None
    evaluate: str | None = None  # "module:function" of FolderRequest -> results document (folder protocols)
    notes: str | None = None  # "module:function" of results document -> lines printed on stderr
    metric_classes: tuple[MetricEntry, ...] = ()
    metric_classes_before: str | None = None

    def key(self, name: str) -> ResultKey:
        for k in self.keys:
            if k.name == name:
                return k
        raise unknown_name(f"result key of the {self.name} protocol", name, [k.name for k in self.keys])

    def key_names(self) -> tuple[str, ...]:
        return tuple(k.name for k in self.keys)

    def check_parity(self, parity: str) -> None:
        """Refuse a ``--parity`` this protocol does not declare (:attr:`parity_modes`), naming the ones it has; a
        protocol declaring none has one way of scoring, the default ``release``.

            >>> p = EvaluationProtocol("toy", "", (), (), (), (), parity_modes={"release": "as the paper"})
            >>> p.check_parity("release")
            >>> try:
            ...     p.check_parity("corrected")
            ... except DevilError as exc:
            ...     print(exc)
            --parity corrected: the toy protocol has no corrected mode (its modes: release = as the paper)
        """
        if parity in self.parity_modes or (not self.parity_modes and parity == "release"):
            return
        modes = "; ".join(f"{m} = {d}" if d else m for m, d in self.parity_modes.items()) or "release only"
        raise DevilError(f"--parity {parity}: the {self.name} protocol has no {parity} mode (its modes: {modes})")

    def layout(self, name: str) -> InputLayout:
        """The input layout ``name``.

            >>> toy = EvaluationProtocol("toy", "", (), (InputLayout("folders", ("gt_dir",)),), (), ())
            >>> toy.layout("folders").flags
            ('gt_dir',)
        """
        for layout in self.layouts:
            if layout.name == name:
                return layout
        raise unknown_name(f"input layout of the {self.name} protocol", name, [x.name for x in self.layouts])

    def run(self, request: FolderRequest, layout: str | None = None) -> dict:
        """Evaluate ``request``: the results document of a folder protocol (:attr:`evaluate`), or of its ``layout``
        (:attr:`InputLayout.evaluate`) when given."""
        target = self.evaluate if layout is None else self.layout(layout).evaluate
        if target is None:
            raise DevilError(f"--protocol {self.name}: reads no folders of its own"
                             + (f" in the {layout} layout" if layout is not None else ""))
        return _load(target)(request)

    def warning_lines(self, doc: Mapping) -> list[str]:
        """The lines a results document of this protocol prints on stderr (none without ``notes``)."""
        return list(_load(self.notes)(doc)) if self.notes else []


def _load(target: str) -> Callable[..., Any]:
    module, name = target.split(":")
    return getattr(importlib.import_module(module), name)


def runnable_metrics(protocol: EvaluationProtocol, metric_names: Sequence[str] | None, options: EvalOptions,
                     provided: Sequence[str] = ()) -> tuple[tuple[str, ...], dict[str, str]]:
    """``(metrics that run, skipped metric -> reason)``: the one rule of every protocol, decided before any frame is
    read. ``metric_names`` ``None``: the protocol's defaults, and a default metric whose requirement
    (:attr:`EvaluationProtocol.needs`: weights, a model) is missing is skipped with the reason; named metrics must
    all run: an unknown one raises, and the missing requirements raise one
    :class:`~devil_dataset.core.errors.WeightsMissingError` naming them all. ``provided``: metrics whose network the
    caller injected (their requirement is not checked).

        >>> p = EvaluationProtocol("toy", "", (), (), ("a", "b"), ("a", "b"),
        ...                        needs={"b": lambda o: (_ for _ in ()).throw(WeightsMissingError("w.pt: absent"))})
        >>> runnable_metrics(p, None, EvalOptions())
        (('a',), {'b': 'w.pt: absent'})
        >>> runnable_metrics(p, ["b"], EvalOptions())
        Traceback (most recent call last):
        ...
        devil_dataset.core.errors.WeightsMissingError: metric b: w.pt: absent
    """
    explicit = metric_names is not None
    names = tuple(dict.fromkeys(metric_names or protocol.default_metrics))
    for n in names:
        if n not in protocol.metrics:
            raise unknown_name(f"metric of the {protocol.name} protocol", n, protocol.metrics, prefix="--metrics: ")
    skipped: dict[str, str] = {}
    missing: list[str] = []
    for m in names:
        check = protocol.needs.get(m)
        if check is None or m in provided:
            continue
        try:
            check(options)
        except WeightsMissingError as exc:
            if explicit:
                missing.append(f"metric {m}: {exc}")
            else:
                skipped[m] = str(exc)
    if missing:
        raise WeightsMissingError("; ".join(missing))
    return tuple(m for m in names if m not in skipped), skipped


__all__ = ["DOWN", "UP", "EvaluationProtocol", "FolderRequest", "InputLayout", "PaperTable", "Requirement",
           "ResultKey", "runnable_metrics"]
