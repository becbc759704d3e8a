"""``devil diagnose --input-dir``: DEVIL's diagnosis of real object removals, which have no ground truth
(``docs/removal.md``). The input videos (with the object) stand in for the attribute labelling — camera motion, scene
motion, mask size, displacement and motion are properties of the scene and the mask, not of the fill — and each
method is scored with PROVE's reference-free RC-S / RC-T (:func:`devil_dataset.eval.protocols.prove.run.
score_prove_video`), then the groups are compared as ``devil diagnose`` compares them. It follows the same procedure
(:func:`devil_dataset.diagnosis.procedure.run_diagnosis`): every input video, mask and result is decoded (and the
DINOv2 loaded) before anything is written, and every bad one is named in one error; the cache is the same, and each
video's values are cached by the content of its input, mask and result and by the scoring identity (metrics, the
model's identity, the parity's arithmetic). Without ``predictions`` only the attributes are computed.

The PROVE layout (``IN/<name>.mp4``, ``MASKS/<name>.mp4``, each method's ``RESULT/<name>.mp4``, or folders of
frames) is written once as a DAVIS-layout copy (PNG frames, 0/255 masks) that the attribute pass reads; the attribute
cache keys on content, so a second run computes nothing. The masks are read as ``devil evaluate --protocol prove``
reads them (:func:`~devil_dataset.eval.protocols.prove.mask_reading.prepare_masks`): 0/1 (DAVIS-style) and palette
masks are objects, never empty; the object is then grey > 127. What was read is said on the console and recorded
in ``attributes.json`` (``options.mask_reading``), as the evaluation's results record it.

    >>> from devil_dataset.diagnosis.removal import REMOVAL_DIAGNOSIS_METRICS
    >>> REMOVAL_DIAGNOSIS_METRICS
    ('rc_s', 'rc_t')
"""
from __future__ import annotations

import hashlib
import json
import sys
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Mapping, Sequence

import cv2
import numpy as np

from ..core.atomic import atomic_write_text
from ..core.engines import Engine
from ..core.engines.local import map_ordered
from ..core.errors import DevilError, unknown_name
from ..core.progress import progress_bar
from ..eval.kernels.device import resolve_device
from ..eval.metrics.metric import EvalOptions
from ..eval.protocols.propainter.layout import MASK_NAME, PROTOCOL_SIZE
from ..eval.protocols.prove.layout import (
    MAX_FRAMES,
    ProveLayout,
    ProveVideo,
    list_prove_videos,
    read_frames,
    read_masks,
)
from ..eval.protocols.prove.mask_reading import PreparedMasks, prepare_masks
from ..eval.protocols.prove.removal import ARITHMETIC_OF_PARITY, REMOVAL_METRICS
from ..eval.protocols.prove.run import PROVE_METRICS, ProveVideoScores, removal_lines, score_prove_video
from .attributes import AttributeOptions
from .metric_cache import MetricValuesCache, prediction_fingerprint
from .pairs import Pair, davis_pairs
from .procedure import DiagnosisResult, run_diagnosis
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


def read_removal_masks(path: Path) -> PreparedMasks:
    """One mask video (white = object) read as the prove protocol reads it: palette PNGs by index, 0/1 masks scaled
    to 0/255, the notes of :func:`~devil_dataset.eval.protocols.prove.mask_reading.prepare_masks` (what was read, grey
    values, an inverted hole); ``hole`` is the object (grey > 127 after that reading).

        >>> import tempfile, pathlib
        >>> d = pathlib.Path(tempfile.mkdtemp()); m = np.zeros((8, 8), np.uint8); m[2:5, 2:5] = 1  # DAVIS-style 0/1
        >>> _ = cv2.imwrite(str(d / "00000.png"), m)
        >>> read = read_removal_masks(d)
        >>> read.notes["mask_values"]["kind"], int(read.hole.sum())
        ('zero_one', 9)
    """
    return prepare_masks(*read_masks(path))


def _marker_notes(marker: Path) -> dict | None:
    """The mask notes a finished video's ``.done`` marker records; None for a missing marker or one from before masks
    were read as the prove protocol reads them (its copy is written again)."""
    try:
        doc = json.loads(marker.read_text())
    except (OSError, ValueError):
        return None
    return doc.get("mask_notes") if isinstance(doc, dict) and isinstance(doc.get("mask_notes"), dict) else None


def labelling_layout(videos: Sequence[ProveVideo], root: Path) -> tuple[Path, Path]:
    """The input videos and masks as a DAVIS layout under ``root`` (``GT/<name>/%05d.png``, ``MASKS/<name>/
    00000.png`` ... 0/255: the object as :func:`read_removal_masks` reads it), each cut to the shorter of the two;
    written once (a ``.done`` marker per video records the frames and the mask notes, :func:`labelling_notes`)."""
    gt, masks = root / "GT", root / "MASKS"
    for v in videos:
        if _marker_notes(gt / v.name / ".done") is not None:
            continue
        frames, prepared = read_frames(v.inputs), read_removal_masks(v.masks)
        n = min(len(frames), len(prepared.hole))
        for t in range(n):
            _write_png(gt / v.name / f"{t:05d}.png", cv2.cvtColor(frames[t], cv2.COLOR_RGB2BGR))
            hole: np.ndarray = prepared.hole[t].astype(np.uint8) * 255
            if hole.shape != frames[t].shape[:2]:
                hole = np.asarray(cv2.resize(hole, (frames[t].shape[1], frames[t].shape[0]),
                                             interpolation=cv2.INTER_NEAREST))
            _write_png(masks / v.name / MASK_NAME.format(t), hole)
        marker = {"frames": n, "mask_notes": plain_notes(prepared.notes)}
        atomic_write_text(gt / v.name / ".done", json.dumps(marker, sort_keys=True) + "\n")
    return gt, masks


def labelling_notes(videos: Sequence[ProveVideo], root: Path) -> dict[str, dict]:
    """Video -> the mask notes of its labelling copy (:func:`labelling_layout`; only videos with a note: a plain
    0/255 mask has none)."""
    notes = {v.name: _marker_notes(root / "GT" / v.name / ".done") for v in videos}
    return {name: n for name, n in notes.items() if n}


def source_fingerprint_of(path: Path) -> str | None:
    """sha256 of a video's stored bytes: the ``.mp4`` file, or every file of a folder of frames (name order).

        >>> import tempfile, pathlib
        >>> f = pathlib.Path(tempfile.mkdtemp()) / "v.mp4"; _ = f.write_bytes(b"x")
        >>> source_fingerprint_of(f) == source_fingerprint_of(f)
        True
    """
    files = sorted((p for p in path.rglob("*") if p.is_file() and not p.name.startswith(".")),
                   key=lambda p: p.relative_to(path).as_posix()) if path.is_dir() else [path]
    return prediction_fingerprint(path.parent, path.name, tuple(files))


def plain_notes(notes: Mapping[str, Any]) -> dict:
    """A video's reading notes as JSON holds them (numpy numbers and arrays as Python ones, tuples as lists).

        >>> plain_notes({"non_binary_frames": np.int64(3), "size": (4, 2)})
        {'non_binary_frames': 3, 'size': [4, 2]}
    """
    return json.loads(json.dumps(dict(notes), default=lambda o: o.tolist() if hasattr(o, "tolist") else str(o)))


def _unmatched_line(name: str, missing: Sequence[str], what: str) -> str:
    return f"{name}: not in {', '.join(missing)}, not {what}"


@dataclass
class RemovalInputs:
    """Object removals in PROVE's layout (inputs, masks, each method's results) as
    :func:`~devil_dataset.diagnosis.procedure.run_diagnosis` reads them; ``network``: an injected DINOv2 feature
    function (tests) and ``network_identity`` what identifies it (without one, no value is cached)."""

    input_dir: Path
    mask_dir: Path
    predictions: Mapping[str, Path]
    metrics: tuple[str, ...]
    options: AttributeOptions
    eval_options: EvalOptions
    labelling_root: Path
    network: Any = None
    network_identity: dict | None = None
    videos: list[ProveVideo] = field(default_factory=list)  # the inputs with a mask (what the attributes label)
    layouts: dict[str, ProveLayout] = field(default_factory=dict)  # method -> its matched videos
    mask_notes: dict[str, dict] = field(default_factory=dict)  # video -> how its mask was read (labelling copy)
    _model: Any = None

    @property
    def methods(self) -> list[str]:
        return list(self.predictions)

    def _layouts(self, bad: list[str]) -> None:
        try:  # inputs against masks: the folder of inputs stands in for a results folder
            pairs = list_prove_videos(self.input_dir, self.input_dir, self.mask_dir)
        except DevilError as exc:
            bad.append(str(exc).replace("all three folders", "both the inputs and the masks folder"))
            return
        self.videos = pairs.videos
        for name, missing in pairs.unmatched.items():
            print(f"devil diagnose: {_unmatched_line(name, [m for m in missing if m != 'results'], 'labelled')}",
                  file=sys.stderr)
        for method, folder in self.predictions.items():
            try:
                self.layouts[method] = list_prove_videos(self.input_dir, folder, self.mask_dir)
            except DevilError as exc:
                bad.append(f"{method}: {exc}")

    def check(self) -> None:
        """The folders matched, every input, mask and result decoded, the DINOv2 loaded (when RC-S / RC-T are
        scored): every problem named in one DevilError, before anything is written."""
        for m in self.metrics:
            if m not in PROVE_METRICS:
                raise unknown_name("metric of the prove protocol", m, PROVE_METRICS, prefix="--metrics: ")
        bad: list[str] = []
        self._layouts(bad)
        sources = [p for v in self.videos for p in (v.inputs, v.masks)]
        sources += [v.results for layout in self.layouts.values() for v in layout.videos]
        for path in dict.fromkeys(sources):
            try:
                read_frames(path)
            except DevilError as exc:
                bad.append(str(exc))
        if bad:
            raise DevilError(f"{len(bad)} bad input{'s' if len(bad) > 1 else ''} (nothing written):\n  " +
                             "\n  ".join(bad))
        if self.methods and self.network is None and set(self.metrics) & set(REMOVAL_METRICS):
            from ..core.networks.dinov2 import load_dinov2  # torch: only when RC-S / RC-T are scored

            self._model = load_dinov2(self.eval_options.dino_model, resolve_device(self.eval_options.device))

    def pairs(self) -> list[Pair]:
        """The labelling copy's pairs; what its masks held is said on stderr in the evaluation's words (a 0/1 or
        palette mask read as the object, lossy or grey masks, an inverted hole)."""
        gt, masks = labelling_layout(self.videos, self.labelling_root)
        self.mask_notes = labelling_notes(self.videos, self.labelling_root)
        doc = {"num_videos": len(self.videos), "input_notes": self.mask_notes,
               "provenance": {"inputs": {"mask_dir": str(self.mask_dir)}}}
        for line in removal_lines(doc):
            print(f"devil diagnose: attributes: {line}", file=sys.stderr)
        return davis_pairs(gt, masks, self.options.scoring_size)

    def labelling_record(self) -> dict[str, Any]:
        """``attributes.json``'s record of how the masks were read: ``mask_reading``, video -> its notes (what
        :func:`read_removal_masks` read: ``mask_values``, ``non_binary_mask``, ``inverted_mask``), empty when every
        mask was plain 0/255."""
        return {"mask_reading": dict(self.mask_notes)}

    def _arithmetic(self) -> str:
        return ARITHMETIC_OF_PARITY[str(self.eval_options.parity)]

    def scoring_identity(self) -> str:
        """sha256 of the metrics, the DINOv2's identity (name, revision, weights sha256), where and in what batches it
        runs (float results may differ in the last bits), the MMD arithmetic of the parity and the frames read; empty
        (nothing cached) for an injected network without an identity."""
        rc = bool(set(self.metrics) & set(REMOVAL_METRICS))
        dino = (self._model.identity() if self._model is not None else self.network_identity) if rc else None
        if rc and dino is None:
            return ""
        what = {"protocol": "prove", "metrics": sorted(self.metrics), "dino": dino, "arithmetic": self._arithmetic(),
                "max_frames": MAX_FRAMES, "batch_size": self.eval_options.batch_size if rc else None,
                "device": resolve_device(self.eval_options.device) if rc else None}
        return hashlib.sha256(json.dumps(what, sort_keys=True, default=str).encode()).hexdigest()

    def _scored(self, todo: list[ProveVideo], engine: Engine) -> list[ProveVideoScores]:
        network = self.network if self.network is not None else \
            self._model.patch_features if self._model is not None and not engine.parallel else None
        score = partial(score_prove_video, metrics=self.metrics, model=self.eval_options.dino_model,
                        device=resolve_device(self.eval_options.device), batch_size=self.eval_options.batch_size,
                        network=network, arithmetic=self._arithmetic())
        return list(map_ordered(score, todo) if network is not None or not engine.parallel
                    else engine.map_ordered(score, todo))

    def _method_scores(self, method: str, cache: MetricValuesCache | None,
                       engine: Engine) -> tuple[dict[str, tuple[dict[str, float], dict]], dict[str, str | None]]:
        """name -> (values, input notes) of one method's videos (from the cache or scored), and their cache keys."""
        found: dict[str, tuple[dict[str, float], dict]] = {}
        keys: dict[str, str | None] = {}
        for v in self.layouts[method].videos:
            keys[v.name] = cache.content_key(*(source_fingerprint_of(p) for p in (v.inputs, v.masks, v.results))) \
                if cache is not None else None
            hit = cache.load_with_notes(keys[v.name]) if cache is not None else None
            if hit is not None:
                found[v.name] = hit
        for s in self._scored([v for v in self.layouts[method].videos if v.name not in found], engine):
            notes = plain_notes(s.notes)  # as the cache gives them back, so cold and warm runs say the same
            found[s.name] = (s.values, notes)
            if cache is not None:
                cache.save(keys[s.name], s.values, notes=notes)
        return found, keys

    def score(self, pairs: Sequence[Pair], cache: MetricValuesCache | None, engine: Engine,
              progress: bool) -> tuple[PairScores, list[str]]:
        """Each method's RC-S / RC-T (and any other PROVE metric asked) per video, and the input notes."""
        cache = cache if cache is not None and cache.scoring else None
        scores: PairScores = {}
        notes: list[str] = []
        bar = progress_bar(total=len(self.methods), desc="prove", unit="method", enabled=progress)
        for method in self.methods:
            found, _ = self._method_scores(method, cache, engine)
            names = [v.name for v in self.layouts[method].videos]
            unscored = {m: [n for n in names if found[n][0][m] != found[n][0][m]] for m in self.metrics}
            doc = {"num_videos": len(names), "unmatched": {n: m for n, m in self.layouts[method].unmatched.items()
                                                           if "inputs" not in m and "masks" not in m},
                   "unscored": {m: v for m, v in unscored.items() if v},
                   "input_notes": {n: found[n][1] for n in names if found[n][1]}}
            scores[method] = {(n, n): {k: v for k, v in found[n][0].items() if v == v} for n in names}
            notes += [f"{method}: {line}" for line in removal_lines(doc)]
            bar.update(1)
        bar.close()
        return scores, notes


def diagnose_removals(  # noqa: PLR0913  (public API: keyword-only options)
    out_dir: str | Path,
    *,
    input_dir: str | Path,
    mask_dir: str | Path,
    predictions: Mapping[str, str | Path] | None = None,
    metrics: Sequence[str] = REMOVAL_DIAGNOSIS_METRICS,
    options: AttributeOptions | None = None,
    eval_options: EvalOptions | None = None,
    cache_dir: str | Path | None = None,
    engine: Engine = Engine(),
    network: Any = None,
    network_identity: dict | None = None,
    progress: bool = True,
) -> DiagnosisResult:
    """Diagnose object removals: attributes of the input videos and masks and, with ``predictions`` (method ->
    results folder), RC-S / RC-T of each method's results and the groups compared; writes what ``devil diagnose``
    writes into ``out_dir``. ``network``: an injected DINOv2 feature function (tests), ``network_identity`` what
    identifies it in the value cache.

        >>> diagnose_removals("diag/", input_dir="IN", mask_dir="MASKS", predictions={"a": "A"})  # doctest: +SKIP
    """
    out = Path(out_dir)
    options = (options or AttributeOptions(scoring_size=PROTOCOL_SIZE)).resolved()
    eval_options = eval_options or EvalOptions(protocol="prove")
    inputs = RemovalInputs(Path(input_dir), Path(mask_dir), {m: Path(f) for m, f in (predictions or {}).items()},
                           tuple(dict.fromkeys(metrics)), options, eval_options, out / LABELLING_FOLDER, network,
                           network_identity)
    return run_diagnosis(out, inputs, options=options, cache_dir=cache_dir, engine=engine, progress=progress)


__all__ = ["LABELLING_FOLDER", "REMOVAL_DIAGNOSIS_METRICS", "RemovalInputs", "diagnose_removals", "labelling_layout",
           "labelling_notes", "plain_notes", "read_removal_masks", "source_fingerprint_of"]
