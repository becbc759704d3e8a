"""Convert the original DEVIL release's split archives into this package's dataset layout.

The release ships each split as a plain tar: video splits ``flickr-<subset>.tar`` (``all``, ``cm-l``, ``cm-h``,
``bsm-l``, ``bsm-h``) holding ``<video>/frame_%04d_gt.png``, and mask splits ``fvi-<subset>.tar`` (``all``,
``fgd-l``, ``fgd-h``, ``fgm-l``, ``fgm-h``, ``fgs-l``, ``fgs-h``) holding ``<video>/frame_%04d_mask.png`` (mode '1',
1 = known). A config is written when both of its archives are given. The release writes entry i of each list to a
folder ``{i:05d}`` and evaluates frames folder i with masks folder i (the release's pairing), so row i of an
imported config is folder i of both archives and keeps i as ``release_index`` — the same row order as a slice
rebuilt by :func:`devil_dataset.builder.assemble.plan_slices`. Archives with other folder names are paired by
sorted name (``release_index`` = position). A clip with T frames uses mask frames 0..T-1 (cycled back and forth if
the mask is shorter). Frames are stored losslessly (PNG) by default, so the
imported ground truth keeps the release's exact pixels.

    >>> parse_split_name("downloads/flickr-cm-h.tar"), parse_split_name("fvi-all.tar.gz")
    (('flickr', 'cm-h'), ('fvi', 'all'))
"""
from __future__ import annotations

import io
import json
import math
import os
import re
import shutil
import tarfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np
from PIL import Image

from ..core.atomic import atomic_write_text
from ..core.dataset_schema import FRAME_FORMATS, encode_frames, encode_hole
from ..core.errors import DevilError
from ..core.mask_stats import mask_stats
from ..core.masks import PRESETS, mask_seed
from ..core.progress import progress_bar
from ..core.slices import MASK_SUBSETS, SLICES, VIDEO_SUBSETS
from ..core.version import __version__
from . import dataset_writer as writer
from .assemble import mask_frames_for_clip, preset_labels

_SPLIT_RE = re.compile(r"^(flickr|fvi)-([a-z-]+?)(?:\.tar(?:\.gz|\.bz2|\.xz)?|\.tgz)$")
_FRAME_RE = {"gt": re.compile(r"^frame_(\d{4,})_gt\.png$"), "mask": re.compile(r"^frame_(\d{4,})_mask\.png$")}
_PRESET_RE = re.compile(r"(fgs-[lh]_fgm-[lh]_fgd-[lh])(?:_(\d+))?")
_CLIP_INDEX_RE = re.compile(r"^(.*)-\d{5}$")
KIND_OF = {"flickr": "gt", "fvi": "mask"}
_FOLDER_INDEX_RE = re.compile(r"^\d{5}$")  # the release names its folders {i:05d}
IMPORT_PLAN = "import-plan.json"


def parse_split_name(path: str | os.PathLike) -> tuple[str, str]:
    """``(family, subset)`` of a release archive name, e.g. ``flickr-cm-h.tar`` -> ``("flickr", "cm-h")``."""
    name = Path(path).name
    m = _SPLIT_RE.match(name)
    if not m:
        raise DevilError(f"{path}: not a release split archive (expected flickr-<subset>.tar or fvi-<subset>.tar)")
    family, subset = m.group(1), m.group(2)
    valid = VIDEO_SUBSETS if family == "flickr" else MASK_SUBSETS
    if subset not in valid:
        raise DevilError(f"{path}: unknown {family} subset {subset!r}; valid: {', '.join(valid)}")
    return family, subset


class SplitArchive:
    """An index of one split archive: video name -> frame members in order; frames read on demand."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.family, self.subset = parse_split_name(self.path)
        self.kind = KIND_OF[self.family]
        try:
            self._tar = tarfile.open(self.path, "r:*")
            members: dict[str, dict[int, tarfile.TarInfo]] = {}
            for info in self._tar:
                if not info.isfile():
                    continue
                parts = Path(info.name).parts
                m = _FRAME_RE[self.kind].match(parts[-1])
                if m is None or len(parts) < 2:
                    continue
                members.setdefault(parts[-2], {})[int(m.group(1))] = info
        except (tarfile.TarError, OSError, EOFError) as exc:
            raise DevilError(f"{self.path}: unreadable tar archive ({exc})") from None
        if not members:
            raise DevilError(f"{self.path}: no <video>/frame_%04d_{self.kind}.png files")
        self.videos: dict[str, list[tarfile.TarInfo]] = {}
        for video, frames in sorted(members.items()):
            idx = sorted(frames)
            if idx != list(range(len(idx))):
                raise DevilError(f"{self.path}: {video}: {self.kind} frames are not numbered 0..N-1")
            self.videos[video] = [frames[i] for i in idx]

    def names(self) -> list[str]:
        """Video (or mask) folder names, sorted."""
        return list(self.videos)

    def _image(self, info: tarfile.TarInfo) -> Image.Image:
        f = self._tar.extractfile(info)
        if f is None:
            raise DevilError(f"{self.path}: {info.name}: not a file")
        try:
            with warnings.catch_warnings():  # Pillow only warns between MAX_IMAGE_PIXELS and twice that
                warnings.simplefilter("error", Image.DecompressionBombWarning)
                im = Image.open(io.BytesIO(f.read()))
                im.load()
            return im
        except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
            raise DevilError(
                f"{self.path}: {info.name}: refused, image too large (a decompression bomb?): {exc}"
            ) from None
        except OSError as exc:
            raise DevilError(f"{self.path}: {info.name}: unreadable PNG ({exc})") from None

    def read_frames(self, video: str) -> np.ndarray:
        """Ground-truth frames uint8 [T, H, W, 3]."""
        return np.stack([np.asarray(self._image(i).convert("RGB")) for i in self.videos[video]])

    def read_hole(self, video: str) -> np.ndarray:
        """Mask as bool [T, H, W] with True = hole (the files use 1 = known)."""
        return np.stack([~np.asarray(self._image(i).convert("1"), dtype=bool) for i in self.videos[video]])

    def close(self) -> None:
        self._tar.close()


def release_pairs(videos: Sequence[str], masks: Sequence[str]) -> list[tuple[int, str, str]]:
    """(release_index, video folder, mask folder) rows: folder i with folder i when both use ``{i:05d}`` names.

    Otherwise both lists are sorted by name and paired by position (index = position).

    >>> release_pairs(["00001", "00000", "00002"], ["00000", "00001"])
    [(0, '00000', '00000'), (1, '00001', '00001')]
    >>> release_pairs(["b", "a"], ["m2", "m1"])
    [(0, 'a', 'm1'), (1, 'b', 'm2')]
    """
    if all(_FOLDER_INDEX_RE.match(n) for n in [*videos, *masks]):
        common = sorted(set(videos) & set(masks), key=int)
        return [(int(n), n, n) for n in common]
    return [(i, v, m) for i, (v, m) in enumerate(zip(sorted(videos), sorted(masks)))]


def _mask_identity(name: str) -> tuple[str, int]:
    """(preset, index) parsed from a mask folder name like ``devil_fgs-h_fgm-l_fgd-h_00042``; ('', -1) if absent."""
    m = _PRESET_RE.search(name)
    if not m or m.group(1) not in PRESETS:
        return "", -1
    index = int(m.group(2)) if m.group(2) is not None else -1
    return m.group(1), index


def _fg_labels_from_subset(subset: str) -> dict[str, str]:
    if subset == "all":
        return {}
    key, level = subset.split("-")
    col = {"fgd": "fg_displacement_label", "fgm": "fg_motion_label", "fgs": "fg_size_label"}[key]
    return {col: {"l": "low", "h": "high"}[level]}


@dataclass
class ImportResult:
    """Configs written by :func:`import_release` with rows and bytes, and the configs that lacked an archive."""

    out_dir: Path
    config_rows: dict[str, int] = field(default_factory=dict)
    config_bytes: dict[str, int] = field(default_factory=dict)
    missing: dict[str, list[str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def summary(self) -> str:
        lines = [f"{self.out_dir}: {len(self.config_rows)} configs imported"]
        for name, rows in self.config_rows.items():
            lines.append(f"  {name:24s} {rows:4d} rows  {self.config_bytes.get(name, 0) / 1e6:9.2f} MB")
        for name, need in self.missing.items():
            lines.append(f"  {name:24s} skipped: needs {', '.join(need)}")
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)


def import_release(
    archives: Sequence[str | os.PathLike],
    out_dir: str | os.PathLike,
    *,
    frame_format: str = "png",
    license: str = "other",
    progress: bool = True,
    on_shard: Callable[[Path], None] | None = None,
) -> ImportResult:
    """Write every config whose ``flickr-*`` and ``fvi-*`` archives are both among ``archives`` into ``out_dir``.

    Example:
        >>> import_release(["flickr-all.tar", "fvi-fgd-h.tar"], "devil-release")  # doctest: +SKIP
    """

    if frame_format not in FRAME_FORMATS:
        raise DevilError(f"unknown frame format {frame_format!r}; valid: {', '.join(FRAME_FORMATS)}")
    if not archives:
        raise DevilError("no archives given")
    splits = _open_splits(archives)
    out, work = writer.prepare_output_dir(out_dir)
    video_labels = _video_labels(splits)
    result = ImportResult(out)
    plan = _plan_configs(splits, result)
    _write_import_plan(out, work, splits, plan, frame_format)

    bar = None
    if progress:
        bar = progress_bar(total=sum(len(p) for p in plan.values()), desc="importing", unit="clip")
    configs = {}
    for name, pairs in plan.items():
        spec = SLICES[name]
        varc, marc = splits[("flickr", spec.videos)], splits[("fvi", spec.masks)]

        def row(i: int, pairs=pairs, varc=varc, marc=marc, spec=spec) -> dict:
            return _import_row(pairs[i], varc, marc, spec.masks, video_labels, frame_format, bar)

        writer.write_config(out, name, len(pairs), row, on_shard=on_shard)
        result.config_rows[name] = len(pairs)
        configs[name] = {"rows": len(pairs), "description": f"{spec.videos} x {spec.masks}"}
    if bar is not None:
        bar.close()
    for arc in splits.values():
        arc.close()
    result.config_bytes = _finish_import(out, splits, result.notes, configs, frame_format, license)
    return result


def _open_splits(archives: Sequence[str | os.PathLike]) -> dict[tuple[str, str], SplitArchive]:
    """Index each archive as ``(family, subset) -> SplitArchive``; a missing file or a repeated split is an error."""
    splits: dict[tuple[str, str], SplitArchive] = {}
    for path in archives:
        if not Path(path).is_file():
            raise DevilError(f"{path}: no such archive")
        arc = SplitArchive(path)
        if (arc.family, arc.subset) in splits:
            raise DevilError(f"{path}: split {arc.family}-{arc.subset} given twice")
        splits[(arc.family, arc.subset)] = arc
    return splits


def _video_labels(splits: Mapping[tuple[str, str], SplitArchive]) -> dict[str, dict[str, str]]:
    """Labels the release's video splits imply (a video in flickr-cm-h has high camera motion, ...)."""
    video_labels: dict[str, dict[str, str]] = {}
    for (family, subset), arc in splits.items():
        if family == "flickr" and subset != "all":
            attr = {"cm": "camera_motion_label", "bsm": "bg_scene_motion_label"}[subset.split("-")[0]]
            for v in arc.names():
                video_labels.setdefault(v, {})[attr] = "low" if subset.endswith("-l") else "high"
    return video_labels


def _plan_configs(splits: Mapping[tuple[str, str], SplitArchive], result: ImportResult) -> dict[str, list[list]]:
    """Config -> ``[video folder, mask folder, release_index]`` rows for every config whose two archives are given.

    Configs lacking an archive go to ``result.missing``, pairing notes to ``result.notes``; no config at all is an
    error.
    """
    plan: dict[str, list[list]] = {}
    for name, spec in SLICES.items():
        need = [f"flickr-{spec.videos}", f"fvi-{spec.masks}"]
        varc, marc = splits.get(("flickr", spec.videos)), splits.get(("fvi", spec.masks))
        if varc is None or marc is None:
            result.missing[name] = [n for n, a in zip(need, (varc, marc)) if a is None]
            continue
        videos, masks = varc.names(), marc.names()
        rows = release_pairs(videos, masks)
        if not (len(videos) == len(masks) == len(rows)):
            result.notes.append(f"{name}: {len(videos)} videos and {len(masks)} masks; {len(rows)} rows paired "
                                "(folder i with folder i, else by sorted name)")
        plan[name] = [[v, m, i] for i, v, m in rows]
    if not plan:
        raise DevilError("no config can be imported: each needs a flickr-<videos> and an fvi-<masks> archive "
                         f"({'; '.join(f'{k}: {v}' for k, v in result.missing.items())})")
    return plan


def _write_import_plan(out: Path, work: Path, splits: Mapping[tuple[str, str], SplitArchive],
                       plan: Mapping[str, list[list]], frame_format: str) -> None:
    """Record the plan in the work folder; a different earlier plan's shards are removed first."""
    plan_doc = {"version": __version__, "frame_format": frame_format, "plan": plan,
                "archives": {f"{a.family}-{a.subset}": [a.path.name, a.path.stat().st_size] for a in splits.values()}}
    plan_text = json.dumps(plan_doc, indent=1, sort_keys=True) + "\n"
    plan_path = work / IMPORT_PLAN
    if not plan_path.is_file() or plan_path.read_text(encoding="utf-8") != plan_text:
        shutil.rmtree(out / writer.DATA_DIR, ignore_errors=True)
        atomic_write_text(plan_path, plan_text)


def _read_clip(varc: SplitArchive, marc: SplitArchive, video: str, mask_name: str) -> tuple[np.ndarray, np.ndarray]:
    """(frames, hole) of one row: the video's frames and its mask fitted to their length; sizes must agree."""
    frames = varc.read_frames(video)
    hole = mask_frames_for_clip(marc.read_hole(mask_name), len(frames), False)
    if hole.shape[1:] != frames.shape[1:3]:
        raise DevilError(f"{marc.path}: {mask_name}: mask size {hole.shape[2]}x{hole.shape[1]} differs from "
                         f"video {video} ({frames.shape[2]}x{frames.shape[1]})")
    return frames, hole


def _mask_labels(preset: str, mask_subset: str) -> dict[str, str]:
    """The foreground labels of a row: its preset's, else those its mask split implies (others empty)."""
    return preset_labels(preset) if preset else {
        "fg_displacement_label": "", "fg_motion_label": "", "fg_size_label": "",
        **_fg_labels_from_subset(mask_subset),
    }


def _import_row(pair: Sequence, varc: SplitArchive, marc: SplitArchive, mask_subset: str,
                video_labels: Mapping[str, Mapping[str, str]], frame_format: str, bar: Any) -> dict:
    """One dataset row from a planned ``[video folder, mask folder, release_index]`` pair (``bar`` advanced by one)."""
    video, mask_name, release_index = pair
    frames, hole = _read_clip(varc, marc, video, mask_name)
    preset, index = _mask_identity(mask_name)
    labels = _mask_labels(preset, mask_subset)
    src = _CLIP_INDEX_RE.match(video)
    stats = mask_stats(hole, size=(frames.shape[2], frames.shape[1]))
    vl = video_labels.get(video, {})
    if bar is not None:
        bar.update(1)
    return {
        "clip_id": video, "mask_id": mask_name,
        "frames": encode_frames(frames, frame_format), "hole": encode_hole(hole),
        "num_frames": len(frames), "height": frames.shape[1], "width": frames.shape[2], "fps": math.nan,
        "preset": preset, "mask_index": index,
        "mask_seed": mask_seed(index) if 0 <= index < 1000 else -1, "reversed": False,
        "source": src.group(1) if src else video, "source_first_frame": -1,
        "attribution": f"DEVIL release archive {varc.path.name} (Flickr video; see its original licence)",
        "license": "",
        "camera_motion_score": math.nan, "camera_motion_label": vl.get("camera_motion_label", ""),
        "bg_scene_motion_score": math.nan, "bg_scene_motion_label": vl.get("bg_scene_motion_label", ""),
        **labels,
        "mask_mean_area": stats.mean_area, "mask_centroid_speed": stats.centroid_speed,
        "mask_pose_motion": stats.pose_motion, "mask_union_coverage": stats.union_coverage,
        "release_index": release_index,
    }


def _finish_import(out: Path, splits: Mapping[tuple[str, str], SplitArchive], pairing_notes: Sequence[str],
                   configs: Mapping[str, Mapping], frame_format: str, license: str) -> dict[str, int]:
    """Write the card, licence, info and manifest of the imported configs; returns each config's bytes."""
    notes = ["### Import", "", f"Imported by devil-dataset {__version__} from the original release's split archives: "
             + ", ".join(sorted(a.path.name for a in splits.values())) + ". Row i pairs video folder i with mask "
             "folder i as the release's evaluation does (`release_index` = i); masks are stored as shipped (already "
             "cropped and time-reversed by the release), so `reversed` is False and unknown values are -1/NaN/empty."]
    notes += [f"- {n}" for n in pairing_notes]
    info = {"format": "devil-dataset/1", "builder": f"devil-dataset {__version__} import-release",
            "frame_format": frame_format, "archives": sorted(a.path.name for a in splits.values())}
    return writer.finish_repository(
        out, configs=configs, license=license, pretty_name="DEVIL release slices (imported)",
        build_notes="\n".join(notes), attributions=["Videos: Flickr users credited in the DEVIL release "
                                                     "(clip ids are `<user>-<video>-<clip index>`)."], info=info,
    )
