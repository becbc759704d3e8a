"""``devil diagnose --removal``: DEVIL's diagnosis of real object removals, which have no ground truth (issue 45;
``docs/removal.md``). The input videos (with the object) stand in for the attribute labelling — camera motion, scene
motion, mask size, displacement and motion are properties of the scene and the mask, not of the fill — and each
method is scored with PROVE's reference-free RC-S / RC-T
(:func:`devil_dataset.eval.protocols.prove.run.evaluate_prove`), then the groups are compared as ``devil diagnose``
compares them (same tests, same report).

The PROVE layout (``IN/<name>.mp4``, ``MASKS/<name>.mp4``, each method's ``RESULT/<name>.mp4``, or folders of
frames) is written once as a DAVIS-layout copy (PNG frames, masks thresholded at > 127 as PROVE does) that the
attribute pass reads; the attribute cache keys on content, so a second run computes nothing.

    >>> from devil_dataset.diagnosis.removal import REMOVAL_DIAGNOSIS_METRICS
    >>> REMOVAL_DIAGNOSIS_METRICS
    ('rc_s', 'rc_t')
"""
from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import Any, Mapping, Sequence

import cv2
import numpy as np

from ..core.atomic import atomic_write_text
from ..core.engines import Engine
from ..core.errors import DevilError
from ..eval.metrics.metric import EvalOptions
from ..eval.protocols.propainter.layout import MASK_NAME, PROTOCOL_SIZE
from ..eval.protocols.prove.kernels import MASK_THRESHOLD, grey_mask
from ..eval.protocols.prove.layout import ProveVideo, list_prove_videos, read_frames
from ..eval.protocols.prove.run import evaluate_prove, removal_lines
from .attribute_table import write_attribute_table
from .attributes import AttributeOptions
from .cache import default_attribute_cache_dir
from .compare import compare_groups, group_documents
from .diagnose import NO_CACHE, DiagnosisResult
from .pairs import davis_pairs
from .report import write_report
from .run import compute_attributes
from .scores import PairScores

#: The metrics a removal diagnosis compares by default (both reference-free).
REMOVAL_DIAGNOSIS_METRICS: tuple[str, ...] = ("rc_s", "rc_t")
LABELLING_FOLDER = "labelling-frames"  # under the output folder: the DAVIS-layout copy the attribute pass reads


def _write_png(path: Path, image: np.ndarray) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    ok, data = cv2.imencode(".png", image)
    if not ok:
        raise DevilError(f"{path}: cannot encode the frame")
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data.tobytes())
    tmp.replace(path)  # atomic: a stopped run never leaves half a frame


def labelling_layout(videos: Sequence[ProveVideo], root: Path) -> tuple[Path, Path]:
    """The input videos and masks as a DAVIS layout under ``root`` (``GT/<name>/%05d.png``, ``MASKS/<name>/
    00000.png`` ... 0/255 at PROVE's threshold), each cut to the shorter of the two; written once (a ``done`` marker
    per video)."""
    gt, masks = root / "GT", root / "MASKS"
    for v in videos:
        if (gt / v.name / ".done").is_file():
            continue
        frames, mask = read_frames(v.inputs), read_frames(v.masks)
        n = min(len(frames), len(mask))
        for t in range(n):
            _write_png(gt / v.name / f"{t:05d}.png", cv2.cvtColor(frames[t], cv2.COLOR_RGB2BGR))
            hole: np.ndarray = (grey_mask(mask[t]) > MASK_THRESHOLD).astype(np.uint8) * 255
            if hole.shape != frames[t].shape[:2]:
                hole = np.asarray(cv2.resize(hole, (frames[t].shape[1], frames[t].shape[0]),
                                             interpolation=cv2.INTER_NEAREST))
            _write_png(masks / v.name / MASK_NAME.format(t), hole)
        atomic_write_text(gt / v.name / ".done", f"{n}\n")
    return gt, masks


def removal_scores_by_pair(input_dir: str | Path, mask_dir: str | Path, predictions: Mapping[str, str | Path],
                           metrics: Sequence[str], options: EvalOptions, *, engine: Engine | None = None,
                           network: Any = None, progress: bool = False) -> tuple[PairScores, list[str]]:
    """Method -> (video, video) -> values of each method's removals, and the input notes (one line each)."""
    scores: PairScores = {}
    notes: list[str] = []
    for method, folder in predictions.items():
        doc = evaluate_prove(input_dir, folder, mask_dir, metrics, options, method=method, engine=engine,
                             network=network, progress=progress)
        scores[method] = {(name, name): {k: v for k, v in row.items() if v == v} for name, row in doc["videos"].items()}
        notes += [f"{method}: {line}" for line in removal_lines(doc)]
    return scores, notes


def diagnose_removals(  # noqa: PLR0913  (public API: keyword-only options)
    out_dir: str | Path,
    *,
    input_dir: str | Path,
    mask_dir: str | Path,
    predictions: Mapping[str, str | Path],
    metrics: Sequence[str] = REMOVAL_DIAGNOSIS_METRICS,
    options: AttributeOptions | None = None,
    eval_options: EvalOptions | None = None,
    cache_dir: str | Path | None = None,
    engine: Engine = Engine(),
    network: Any = None,
    progress: bool = True,
) -> DiagnosisResult:
    """Diagnose object removals: attributes of the input videos and masks, RC-S / RC-T of each method's results
    (``predictions``: method -> results folder), the groups compared; writes what ``devil diagnose`` writes into
    ``out_dir``. ``network``: an injected DINOv2 feature function (tests).

        >>> diagnose_removals("diag/", input_dir="IN", mask_dir="MASKS", predictions={"a": "A"})  # doctest: +SKIP
    """
    out = Path(out_dir)
    layout = list_prove_videos(input_dir, next(iter(predictions.values())), mask_dir) if predictions else None
    if layout is None:
        raise DevilError("a removal diagnosis needs --predictions NAME=RESULTS (the methods' removals)")
    gt, masks = labelling_layout(layout.videos, out / LABELLING_FOLDER)
    options = (options or AttributeOptions(scoring_size=PROTOCOL_SIZE)).resolved()
    pairs = davis_pairs(gt, masks, options.scoring_size)
    cache = None if str(cache_dir) == NO_CACHE else (cache_dir or default_attribute_cache_dir())
    table, stats = compute_attributes(pairs, options=options, cache_dir=cache, engine=engine, progress=progress)
    result = DiagnosisResult(table, stats)
    result.paths += write_attribute_table(out, table)
    eval_options = replace(eval_options or EvalOptions(), protocol="prove")
    result.scores, result.notes = removal_scores_by_pair(input_dir, mask_dir, predictions, metrics, eval_options,
                                                         network=network, progress=progress)
    result.findings = compare_groups(table, result.scores)
    docs = group_documents(table, result.scores)
    result.paths += write_report(out, table, result.findings, docs, list(predictions), result.notes)
    for note in result.notes:
        print(f"devil diagnose: {note}", file=sys.stderr)
    return result


__all__ = ["LABELLING_FOLDER", "REMOVAL_DIAGNOSIS_METRICS", "diagnose_removals", "labelling_layout",
           "removal_scores_by_pair"]
