"""``devil diagnose`` of a dataset with ground truth as one call: pairs -> attribute pass -> groups -> (with
predictions) scores, comparisons and the report, all written under one folder, through the procedure every diagnosis
follows (:func:`devil_dataset.diagnosis.procedure.run_diagnosis`; the inputs: :class:`GroundTruthInputs`).

    >>> from devil_dataset.diagnosis.diagnose import input_mode
    >>> input_mode(dataset="ds", gt_dir=None, mask_dir=None)
    'dataset'
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..core.engines import Engine
from ..core.errors import DevilError
from ..eval.metrics.metric import EvalOptions
from ..eval.protocols.propainter.layout import PROTOCOL_SIZE, layout_notes
from ..eval.protocols.registry import scoring_identity
from .attributes import SCORING_SIZE, AttributeOptions
from .metric_cache import MetricValuesCache
from .pairs import Pair, dataset_pairs, davis_pairs, directory_pairs
from .procedure import NO_CACHE, DiagnosisResult, run_diagnosis
from .scores import DEFAULT_METRICS, PairScores, dataset_scores, davis_scores, directory_scores


def input_mode(*, dataset: str | Path | None, gt_dir: str | Path | None, mask_dir: str | Path | None) -> str:
    """``dataset``, ``directory`` (release layout) or ``davis``; a clear error for a wrong combination."""
    if dataset is not None and (gt_dir is not None or mask_dir is not None):
        raise DevilError("give either --dataset or --gt-dir (with --mask-dir for the DAVIS layout), not both")
    if dataset is not None:
        return "dataset"
    if gt_dir is None:
        raise DevilError("nothing to diagnose: give --dataset DIR, or --gt-dir DIR [--mask-dir DIR]")
    return "davis" if mask_dir is not None else "directory"


def default_scoring_size(mode: str) -> tuple[int, int]:
    """The size the video attributes are scored at unless one is named: the protocol's resolution of the input, the
    ProPainter / E2FGVI protocol's 432x240 for the DAVIS / YouTube-VOS layout (the frames that protocol scores), the
    release's 854x480 for DEVIL's own layouts.

    >>> default_scoring_size("davis"), default_scoring_size("dataset")
    ((432, 240), (854, 480))
    """
    return PROTOCOL_SIZE if mode == "davis" else SCORING_SIZE


def _pairs(mode: str, dataset, configs, gt_dir, mask_dir, options: AttributeOptions) -> list[Pair]:
    if mode == "dataset":
        return dataset_pairs(dataset, configs)
    if configs:
        raise DevilError("--config selects configs of a built dataset (--dataset)")
    if mode == "davis":
        return davis_pairs(gt_dir, mask_dir, options.scoring_size)
    return directory_pairs(gt_dir)


def _scores(mode: str, pairs: Sequence[Pair], predictions: Mapping[str, str | Path], metrics: Sequence[str], *,
            dataset, gt_dir, eval_options: EvalOptions | None, engine: Engine,
            progress: bool, cache: MetricValuesCache | None = None) -> tuple[PairScores, list[str]]:
    if mode == "dataset":
        return dataset_scores(dataset, pairs, predictions, metrics, options=eval_options, engine=engine,
                              progress=progress, cache=cache)
    notes: list[str] = []
    if mode == "davis":
        return davis_scores(pairs, predictions, metrics, options=eval_options, progress=progress, cache=cache,
                            notes=notes), notes
    return directory_scores(gt_dir, predictions, metrics, options=eval_options, progress=progress, pairs=pairs,
                            cache=cache, notes=notes), notes


@dataclass
class GroundTruthInputs:
    """A dataset with ground truth (a built dataset, a release-layout or a DAVIS / YouTube-VOS folder) and the
    methods' predictions, as :func:`~devil_dataset.diagnosis.procedure.run_diagnosis` reads them."""

    mode: str
    dataset: str | Path | None
    configs: Sequence[str] | None
    gt_dir: str | Path | None
    mask_dir: str | Path | None
    predictions: Mapping[str, str | Path]
    metrics: Sequence[str]
    options: AttributeOptions
    eval_options: EvalOptions | None

    @property
    def methods(self) -> list[str]:
        return list(self.predictions)

    def check(self) -> None:
        """Every predictions folder exists (all missing ones named at once)."""
        bad = [f"{m}: {p}: not a folder" for m, p in self.predictions.items() if not Path(p).is_dir()]
        if bad:
            raise DevilError(f"{len(bad)} bad input{'s' if len(bad) > 1 else ''} (nothing written):\n  " +
                             "\n  ".join(bad))

    def pairs(self) -> list[Pair]:
        pairs = _pairs(self.mode, self.dataset, self.configs, self.gt_dir, self.mask_dir, self.options)
        if self.mode == "davis" and self.gt_dir is not None and self.mask_dir is not None and pairs:
            videos = [p.source.video for p in pairs if p.source.video is not None]  # videos left out, ._* files
            for note in layout_notes(self.gt_dir, self.mask_dir, videos, None)[1]:
                print(f"devil diagnose: {note}", file=sys.stderr)
        return pairs

    def labelling_record(self) -> dict[str, Any]:
        """Nothing: the masks of a dataset with ground truth are read as its layout defines them."""
        return {}

    def scoring_identity(self) -> str:
        return scoring_identity(list(self.metrics), self.eval_options or EvalOptions())

    def score(self, pairs: Sequence[Pair], cache: MetricValuesCache | None, engine: Engine,
              progress: bool) -> tuple[PairScores, list[str]]:
        return _scores(self.mode, pairs, self.predictions, self.metrics, dataset=self.dataset, gt_dir=self.gt_dir,
                       eval_options=self.eval_options, engine=engine, progress=progress, cache=cache)


def diagnose(  # noqa: PLR0913  (public API: keyword-only options)
    out_dir: str | Path,
    *,
    dataset: str | Path | None = None,
    configs: Sequence[str] | None = None,
    gt_dir: str | Path | None = None,
    mask_dir: str | Path | None = None,
    predictions: Mapping[str, str | Path] | None = None,
    metrics: Sequence[str] = DEFAULT_METRICS,
    options: AttributeOptions | None = None,
    eval_options: EvalOptions | None = None,
    cache_dir: str | Path | None = None,
    engine: Engine = Engine(),
    progress: bool = True,
) -> DiagnosisResult:
    """Diagnose a dataset: write ``out_dir/attributes.tsv`` / ``attributes.json`` and, with ``predictions``
    (method -> folder), the report (:func:`devil_dataset.diagnosis.report.write_report`).

    Inputs: ``dataset`` (a built dataset; ``configs`` some of its configs), or ``gt_dir`` in the release layout, or
    ``gt_dir`` + ``mask_dir`` in the DAVIS / YouTube-VOS layout. ``cache_dir``: the attribute cache (default
    :func:`~devil_dataset.diagnosis.cache.default_attribute_cache_dir`; ``"none"``: off).

        >>> diagnose("out", dataset="sample-dataset")  # doctest: +SKIP
    """
    mode = input_mode(dataset=dataset, gt_dir=gt_dir, mask_dir=mask_dir)
    if configs and mode != "dataset":
        raise DevilError("--config selects configs of a built dataset (--dataset)")
    options = (options or AttributeOptions(scoring_size=default_scoring_size(mode))).resolved()
    inputs = GroundTruthInputs(mode, dataset, configs, gt_dir, mask_dir, dict(predictions or {}), metrics, options,
                               eval_options)
    return run_diagnosis(out_dir, inputs, options=options, cache_dir=cache_dir, engine=engine, progress=progress)


__all__ = ["DiagnosisResult", "GroundTruthInputs", "NO_CACHE", "default_scoring_size", "diagnose", "input_mode"]
