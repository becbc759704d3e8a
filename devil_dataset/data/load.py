"""Load a DEVIL dataset (a local directory written by ``devil build`` or a Hub repo) as slices.

- :func:`load_slice`: a thin wrapper over ``datasets.load_dataset`` that checks the config name (and, for a local
  directory, every shard against ``manifest.json``: :func:`check_local_slice`).
- :func:`iter_slice`: numpy rows ``{"clip_id", "frames" uint8 [T, H, W, 3], "hole" bool [T, H, W], ...}``, one
  clip in memory at a time. A local directory is read straight from its parquet shards with pyarrow (no
  ``datasets`` cache); a Hub repo id goes through ``datasets`` streaming. Both decode with Pillow, exactly like
  ``datasets`` does, so every path gives identical pixels.
- :func:`as_torch`: fast torch rows (channels last, zero-copy from the decoded arrays) for a DataLoader.
- :func:`collate_videos`: a DataLoader ``collate_fn`` for clips of different lengths.

    >>> from devil_dataset.data.load import resolve_config
    >>> resolve_config("camera_motion_high")
    'camera_motion_high'
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Collection, Iterator, Sequence

import numpy as np

from ..core.atomic import file_sha256
from ..core.dataset_schema import decode_frames, decode_hole, to_numpy_frames, to_numpy_hole
from ..core.errors import DevilError, unknown_name
from ..core.slices import SLICES
from .dataset_name import HUB_NAMING, check_dataset_name, hub_offline

SPLIT = "test"
VIDEO_COLUMNS = ("frames", "hole")


def resolve_config(config: str) -> str:
    """Check a config name (``all`` or one of the ten slices); the error lists the valid names."""
    if config not in SLICES:
        raise unknown_name("config", config, SLICES)
    return config


def local_shards(directory: str | os.PathLike, config: str, split: str = SPLIT) -> list[Path]:
    """The parquet shards of ``config`` in a local dataset directory, in order (``data/<config>/<split>-*.parquet``)."""
    files = sorted((Path(directory) / "data" / config).glob(f"{split}-*.parquet"))
    if not files:
        raise DevilError(f"{directory}: no data/{config}/{split}-*.parquet shards "
                         "(is it a dataset built by `devil build`?)")
    return files


def fetch_slice(repo_id: str, config: str = "all", split: str = SPLIT, *, revision: str | None = None,
                cache_dir: str | os.PathLike | None = None) -> Path:
    """Download one config of a Hub dataset repo (its shards, the card and ``manifest.json``, nothing else) into
    the Hugging Face cache and return the local folder; a second call reads the cache (works offline).

    ``huggingface_hub.snapshot_download(..., allow_patterns=...)`` does the transfer; a token comes from the
    environment or ``huggingface-cli login`` only.

    >>> fetch_slice("your-org/devil", "camera_motion_high")  # doctest: +SKIP
    PosixPath('.../datasets--your-org--devil/snapshots/<commit>')
    """
    resolve_config(config)
    from huggingface_hub import snapshot_download

    patterns = [f"data/{config}/{split}-*.parquet", "README.md", MANIFEST_NAME]
    try:
        local = snapshot_download(repo_id, repo_type="dataset", revision=revision, allow_patterns=patterns,
                                  cache_dir=str(cache_dir) if cache_dir is not None else None)
    except Exception as exc:  # noqa: BLE001 - offline, unknown repo, auth: one clear message for all
        raise DevilError(f"{repo_id}: cannot fetch config {config} from the Hub ({type(exc).__name__}: {exc}). "
                         "Run once with network access (the files are then cached and used offline), or pass a "
                         "local folder made by `devil build` or `devil import-release`") from None
    return Path(local)


def local_dataset_dir(dir_or_repo: str | os.PathLike, config: str = "all", split: str = SPLIT) -> Path:
    """A local dataset folder for ``dir_or_repo``: the folder itself, or :func:`fetch_slice` of a Hub repo id
    (checked first by :func:`check_dataset_name`)."""
    if Path(dir_or_repo).is_dir():
        return Path(dir_or_repo)
    check_dataset_name(dir_or_repo)
    try:
        return fetch_slice(str(dir_or_repo), config, split)
    except DevilError:
        if hub_offline():
            raise DevilError(f"{dir_or_repo}: no such folder, and the Hub is offline (HF_HUB_OFFLINE) with config "
                             f"{config} not in the Hugging Face cache; {HUB_NAMING}") from None
        raise


MANIFEST_NAME = "manifest.json"  # written by `devil build` (devil_dataset.builder.dataset_writer)
_VERIFIED: dict[tuple[str, int, int], str] = {}  # (path, size, mtime_ns) -> sha256 already checked in this process


def read_manifest(directory: str | os.PathLike) -> dict | None:
    """The ``manifest.json`` of a local dataset directory, or ``None`` when it has none."""
    path = Path(directory) / MANIFEST_NAME
    if not path.is_file():
        return None
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DevilError(f"{path}: unreadable ({exc}); rebuild with `devil build`") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("files"), dict):
        raise DevilError(f"{path}: not a devil-dataset manifest (no 'files' table)")
    return doc


def _sha256(path: Path) -> str:
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    if key not in _VERIFIED:
        _VERIFIED[key] = file_sha256(path)
    return _VERIFIED[key]


def _shard_clip_ids(shard: Path) -> list[str]:
    import pyarrow.parquet as pq

    try:
        return [str(x) for x in pq.read_table(shard, columns=["clip_id"]).column("clip_id").to_pylist()]
    except Exception as exc:  # pyarrow raises ArrowInvalid/OSError on damaged files
        raise DevilError(f"{shard}: damaged parquet shard ({exc})") from None


def check_local_slice(directory: str | os.PathLike, config: str, split: str = SPLIT) -> list[Path]:
    """The shards of ``config``, checked against the directory's ``manifest.json`` before anything is read.

    Every shard the manifest lists must exist with its recorded size and sha256, and no unlisted shard may be
    present; one :class:`DevilError` names every missing, damaged or stray file and the clip ids that are
    missing. A directory without a manifest is only listed (:func:`local_shards`).
    """
    directory = Path(directory)
    manifest = read_manifest(directory)
    if manifest is None:
        return local_shards(directory, config, split)
    prefix = f"data/{config}/{split}-"
    listed = {rel: meta for rel, meta in manifest["files"].items()
              if rel.startswith(prefix) and rel.endswith(".parquet")}
    present = {p.relative_to(directory).as_posix() for p in (directory / "data" / config).glob(f"{split}-*.parquet")}
    cfg = manifest.get("configs", {}).get(config, {})
    if not listed and not present:
        if config in manifest.get("configs", {}) and int(cfg.get("rows", -1)) == 0:
            raise DevilError(omitted_config_message(directory, config, manifest))
        raise DevilError(f"{directory}: no data/{config}/{split}-*.parquet shards "
                         "(is it a dataset built by `devil build`?)")
    problems = []
    for rel in sorted(listed):
        path = directory / rel
        meta = listed[rel]
        if rel not in present:
            problems.append(f"{path}: missing")
        elif path.stat().st_size != int(meta.get("bytes", -1)):
            problems.append(f"{path}: {path.stat().st_size} bytes, the manifest records {meta.get('bytes')} "
                            "(truncated or damaged)")
        elif _sha256(path) != meta.get("sha256"):
            problems.append(f"{path}: checksum mismatch (damaged)")
    for rel in sorted(present - set(listed)):
        problems.append(f"{directory / rel}: not in {MANIFEST_NAME} (a stray shard)")
    if problems:
        expected = [str(c) for c in cfg.get("clip_ids", [])]
        if expected:
            have = set()
            for rel in sorted(set(listed) & present):
                if not any(p.startswith(str(directory / rel) + ":") for p in problems):
                    have.update(_shard_clip_ids(directory / rel))
            lost = [c for c in expected if c not in have]
            problems.append(f"clips missing from slice {config} ({len(lost)} of {len(expected)}): {', '.join(lost)}")
        raise DevilError(f"{directory}: slice {config} does not match {MANIFEST_NAME}; rebuild with `devil build` "
                         "or download it again:\n  " + "\n  ".join(problems))
    return [directory / rel for rel in sorted(listed)]


def omitted_config_message(directory: str | os.PathLike, config: str, manifest: dict) -> str:
    """Why ``config`` is not in the build at ``directory`` (its manifest records 0 rows), and what to use instead.

    >>> print(omitted_config_message("ds", "camera_motion_high", {"configs": {"all": {"rows": 6},
    ...     "camera_motion_high": {"rows": 0, "omitted": "0 rows in this build"}}}))  # doctest: +NORMALIZE_WHITESPACE
    ds: config camera_motion_high is not in this build: 0 rows in this build. 6 clips in all: a slice takes
    the tails of a ranking of the clips, so a small build has none for some slices. Configs with rows: all
    """
    configs = manifest.get("configs", {})
    total = configs.get("all", {}).get("rows")
    reason = str(configs.get(config, {}).get("omitted", "0 rows in this build")).rstrip(".")
    count = f"{total} clips in all: a" if total is not None else "A"
    have = [name for name, c in configs.items() if int(c.get("rows", 0)) > 0]
    return (f"{directory}: config {config} is not in this build: {reason}. {count} slice takes the tails of a "
            "ranking of the clips, so a small build has none for some slices. Configs with rows: "
            f"{', '.join(have) or 'none'}")


def _read_errors():
    import pyarrow as pa

    return (pa.ArrowException, OSError)


def load_slice(dir_or_repo: str | os.PathLike, config: str = "all", split: str = SPLIT, streaming: bool = False,
               **kwargs: Any):
    """``datasets.load_dataset(dir_or_repo, config, split=split, streaming=streaming, **kwargs)``.

    Rows hold ``frames`` (T PIL RGB images), ``hole`` (T PIL mode-'1' images, True = hole) and the metadata
    columns; add ``.with_format("torch")`` for tensors (frames uint8 [T, 3, H, W], hole bool [T, 1, H, W]).

    >>> ds = load_slice("path/to/dataset", "fg_size_high")  # doctest: +SKIP
    """
    import datasets

    resolve_config(config)
    check_dataset_name(dir_or_repo)
    if Path(dir_or_repo).is_dir():
        check_local_slice(dir_or_repo, config, split)  # a config left out of a small build: its reason, named
    return datasets.load_dataset(str(dir_or_repo), config, split=split, streaming=streaming, **kwargs)


def _decode_row(row: dict, columns: Sequence[str] | None) -> dict:
    out = {}
    for key, value in row.items():
        if columns is not None and key not in columns:
            continue
        if key == "frames":
            out[key] = decode_frames(value)
        elif key == "hole":
            out[key] = decode_hole(value)
        else:
            out[key] = value
    return out


def iter_slice(
    dir_or_repo: str | os.PathLike,
    config: str = "all",
    split: str = SPLIT,
    *,
    columns: Sequence[str] | None = None,
    clip_ids: Collection[str] | None = None,
) -> Iterator[dict]:
    """Yield the rows of a slice as numpy: ``frames`` uint8 [T, H, W, 3], ``hole`` bool [T, H, W] (True = hole).

    ``columns`` limits what is read and decoded (e.g. ``["clip_id", "hole"]``); ``clip_ids`` yields only those
    clips' rows (the others are not decoded). One row group (one clip) is in
    memory at a time. A Hub repo id (``ORG/NAME``) is fetched with :func:`fetch_slice` (that config only, cached).
    A local directory's shards are first checked against its ``manifest.json``
    (:func:`check_local_slice`): a missing, truncated or altered shard is a :class:`DevilError` naming it. These
    checks (and a config a small build left out, named with the reason) raise at the call, before any row.

    >>> for row in iter_slice("path/to/dataset", "camera_motion_high"):  # doctest: +SKIP
    ...     frames, hole = row["frames"], row["hole"]
    """
    resolve_config(config)
    path = local_dataset_dir(dir_or_repo, config, split)
    shards = check_local_slice(path, config, split)
    wanted = None if clip_ids is None else {str(c) for c in clip_ids}
    return _iter_shards(shards, columns, wanted)


def _iter_shards(shards: Sequence[Path], columns: Sequence[str] | None, wanted: set[str] | None) -> Iterator[dict]:
    """The rows of checked ``shards`` (see :func:`iter_slice`), one row group in memory at a time."""
    import pyarrow.parquet as pq

    errors = _read_errors()
    read = None if columns is None else list(dict.fromkeys([*columns, *(["clip_id"] if wanted is not None else [])]))
    for shard in shards:
        try:
            pf = pq.ParquetFile(shard)
            num_groups = pf.num_row_groups
        except errors as exc:
            raise DevilError(f"{shard}: damaged parquet shard ({exc})") from None
        for g in range(num_groups):
            try:
                if wanted is not None and read != ["clip_id"]:
                    # the clip ids first: a row group without a wanted clip is not read any further
                    ids = pf.read_row_group(g, columns=["clip_id"]).column("clip_id").to_pylist()
                    if not wanted.intersection(str(i) for i in ids):
                        continue
                table = pf.read_row_group(g, columns=read)
                rows = table.to_pylist()
            except errors as exc:
                raise DevilError(f"{shard}: damaged parquet shard, row group {g} ({exc})") from None
            for row in rows:
                if wanted is None or str(row.get("clip_id")) in wanted:
                    yield _decode_row(row, columns)


def _torch_frames(value, channels_first: bool):
    import torch

    t = torch.from_numpy(decode_frames(value))
    return t.permute(0, 3, 1, 2) if channels_first else t


def _torch_hole(value, channels_first: bool):
    import torch

    t = torch.from_numpy(decode_hole(value))
    return t[:, None] if channels_first else t


class _TorchRows:
    """Decode ``frames``/``hole`` of a row or a batch to tensors (picklable, for DataLoader workers)."""

    def __init__(self, channels_first: bool = False) -> None:
        self.channels_first = channels_first

    def row(self, row: dict) -> dict:
        out = dict(row)
        if "frames" in row:
            out["frames"] = _torch_frames(row["frames"], self.channels_first)
        if "hole" in row:
            out["hole"] = _torch_hole(row["hole"], self.channels_first)
        return out


class TorchSlice:
    """Map-style torch view of a map-style slice (what :func:`as_torch` returns for a ``datasets.Dataset``).

    Reads the stored JPEG/PNG bytes through an Arrow-formatted view of the same table (``with_format("arrow")``:
    no ``cast_column``, so the Arrow cache is never rewritten) and decodes only the rows asked for. Supports
    ``len``, ``[i]`` and ``__getitems__`` (the batched fetch a ``DataLoader`` uses), and pickles to workers.
    """

    def __init__(self, ds, *, channels_first: bool = False) -> None:
        self._arrow = ds.with_format("arrow")
        self._rows = _TorchRows(channels_first)
        self.column_names = list(ds.column_names)

    def __len__(self) -> int:
        return len(self._arrow)

    def __getitem__(self, index: int) -> dict:
        if not isinstance(index, (int, np.integer)):
            raise TypeError(f"TorchSlice indices are integers, got {type(index).__name__}")
        n = len(self)
        if not -n <= index < n:
            raise IndexError(f"index {index} out of range for a slice of {n} rows")
        return self._rows.row(self._arrow[int(index) % n].to_pylist()[0])

    def __getitems__(self, indices: Sequence[int]) -> list[dict]:
        return [self._rows.row(r) for r in self._arrow[[int(i) for i in indices]].to_pylist()]


def as_torch(ds, *, channels_first: bool = False):
    """Fast torch rows from a ``load_slice``/``load_dataset`` result (map-style or streaming).

    ``frames`` become uint8 tensors [T, H, W, 3] and ``hole`` bool tensors [T, H, W] (channels last, the same
    arrays as :func:`iter_slice`), or with ``channels_first=True`` [T, 3, H, W] and [T, 1, H, W] (the layout of
    ``.with_format("torch")`` and of the training dataset, as views: no copy); other columns stay Python values.
    A map-style dataset gives a :class:`TorchSlice` (reads the encoded bytes directly, never rewrites the Arrow
    cache), a streaming one an ``IterableDataset``. Rows go through a ``DataLoader`` with the default collate
    (``batch_size=1``) or :func:`collate_videos`. Several times faster than ``.with_format("torch")``, whose
    channels-first conversion copies every frame element by element.

    For one clip per step, ``batch_size=None`` skips the default collate's extra copy of every clip:

    >>> loader = torch.utils.data.DataLoader(  # doctest: +SKIP
    ...     as_torch(load_slice("dir", "all")), batch_size=None, num_workers=2)
    """
    import datasets

    if not isinstance(ds, datasets.IterableDataset):
        return TorchSlice(ds, channels_first=channels_first)
    raw = datasets.List(datasets.Image(decode=False))
    for col in VIDEO_COLUMNS:  # lazy on a stream: the cast only changes how each streamed row is decoded
        if col in (ds.column_names or ()):
            ds = ds.cast_column(col, raw)
    return ds.map(_TorchRows(channels_first).row)


def row_arrays(row: dict) -> tuple[np.ndarray, np.ndarray]:
    """``(frames uint8 [T, H, W, 3], hole bool [T, H, W])`` from a row of any path (PIL lists, numpy, torch)."""
    return to_numpy_frames(row["frames"]), to_numpy_hole(row["hole"])


def collate_videos(batch: Sequence[dict]) -> dict:
    """Collate rows whose clips have different lengths: pad ``frames``/``hole`` along time to the longest clip.

    Works on torch-format rows (``frames`` [T, 3, H, W]) and on numpy rows from :func:`iter_slice`
    (``frames`` [T, H, W, 3]); padding frames are zeros, padding mask frames False. Adds ``num_frames_valid``
    (the true lengths). Numbers become tensors, strings stay lists.

    >>> import torch
    >>> rows = [{"frames": torch.zeros(2, 3, 4, 4, dtype=torch.uint8),
    ...          "hole": torch.zeros(2, 1, 4, 4, dtype=torch.bool), "clip_id": "a"},
    ...         {"frames": torch.ones(3, 3, 4, 4, dtype=torch.uint8),
    ...          "hole": torch.ones(3, 1, 4, 4, dtype=torch.bool), "clip_id": "b"}]
    >>> b = collate_videos(rows)
    >>> tuple(b["frames"].shape), b["num_frames_valid"].tolist(), b["clip_id"]
    ((2, 3, 3, 4, 4), [2, 3], ['a', 'b'])
    """
    import torch

    out: dict[str, Any] = {}
    lengths = [len(r["frames"]) for r in batch]
    longest = max(lengths)
    for key in batch[0]:
        values = [r[key] for r in batch]
        if key in VIDEO_COLUMNS:
            tensors = [v if isinstance(v, torch.Tensor) else torch.from_numpy(np.ascontiguousarray(v)) for v in values]
            padded = []
            for t in tensors:
                if len(t) < longest:
                    pad = torch.zeros((longest - len(t),) + tuple(t.shape[1:]), dtype=t.dtype)
                    t = torch.cat([t, pad])
                padded.append(t)
            out[key] = torch.stack(padded)
        elif all(isinstance(v, torch.Tensor) for v in values):
            out[key] = torch.stack(values)
        elif all(isinstance(v, (bool, np.bool_)) for v in values):
            out[key] = torch.tensor(values, dtype=torch.bool)
        elif all(isinstance(v, (int, np.integer)) for v in values):
            out[key] = torch.tensor(values, dtype=torch.int64)
        elif all(isinstance(v, (float, np.floating)) for v in values):
            out[key] = torch.tensor(values, dtype=torch.float64)
        else:
            out[key] = list(values)
    out["num_frames_valid"] = torch.tensor(lengths, dtype=torch.int64)
    return out
