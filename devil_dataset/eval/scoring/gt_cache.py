"""The ground truth prepared once per benchmark: a disk cache of what the metrics' ``prepare`` computes per clip.

Scoring a method re-does ground-truth-only work (the warp error's forward and backward flows, the FID Inception
features of the ground truth) that every other method scored on the same slice repeats. :class:`GroundTruthCache`
stores that work on disk, one entry per (clip, metric), so a second method costs only its own side:

* **key** (:func:`prepare_key`): the sha256 of the clip's frames (shape, dtype and bytes), the metric and what
  changes its ``prepare`` (:func:`prepare_identity`: the resolved parity modes and what the metric declares, e.g.
  the flow backend actually used, and for a network the device, batch size, precision and the sha256 of its weights
  file); an injected network or flow function has no stable identity and is never cached.
* **entry**: ``MAGIC``, the sha256 of the payload, then the payload: an uncompressed ``.npz`` of arrays with a JSON
  header (``__header__``), written with fixed zip timestamps so that two writers of one key write identical bytes;
  loaded with ``allow_pickle=False`` (arrays only). The metric takes its prepared state apart and puts it back
  (:meth:`~devil_dataset.eval.metrics.metric.Metric.prepared_to_arrays` / ``prepared_from_arrays``).
* **written atomically** (:func:`~devil_dataset.core.atomic.atomic_write_bytes`: a temporary file renamed onto the
  entry), so concurrent runs and Ray workers can share one folder; **verified on read**: a corrupt entry is
  reported (``stats.corrupt``, a note on stderr), removed and recomputed, never trusted.
* **bounded**: after each write the least recently used entries (by mtime; a hit touches its entry) are removed
  until the folder holds at most ``max_bytes``.

What is cached is what each metric declares (the cache knows no metric by name): a metric with
``prepares_ground_truth`` and a ``prepare_identity()`` that is not ``None`` is read or computed and stored, keyed by
the clip and that identity, and by the hole too when it sets ``prepared_per_hole``. Today the warp error (what it
needs of the flows under the clip's hole: :class:`~devil_dataset.eval.kernels.warp.HoleFlow`) and FID (the ground
truth's Inception features). SSIM needs nothing of the ground truth alone: its map is computed around the hole
only, from exact window sums (:mod:`devil_dataset.eval.kernels.ssim_window`).

    >>> import tempfile
    >>> from devil_dataset.eval.metrics import EvalOptions, build_metrics
    >>> cache = GroundTruthCache(tempfile.mkdtemp())
    >>> metrics, _ = build_metrics(["warp_error"], EvalOptions(flow="dis"))
    >>> gt = np.random.default_rng(0).integers(0, 256, (3, 32, 32, 3), dtype=np.uint8)
    >>> cold = cached_prepare_clip(metrics, gt, cache); warm = cached_prepare_clip(metrics, gt, cache)
    >>> cache.stats.misses, cache.stats.hits, bool((cold["warp_error"].fw[0] == warm["warp_error"].fw[0]).all())
    (1, 1, True)
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import io
import json
import os
import sys
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np

from ...core.atomic import TMP_PREFIX, atomic_write_bytes
from ...core.content_hash import clip_content_hash
from ...core.errors import DevilError
from ...core.version import __version__
from ..metrics.metric import Metric, VideoMetric
from .storage import cache_folder

#: Environment variable naming the default cache folder (else ``$XDG_CACHE_HOME/devil-dataset/gt`` or
#: ``~/.cache/devil-dataset/gt``, next to the weights cache of :mod:`devil_dataset.core.weights`).
GT_CACHE_ENV = "DEVIL_GT_CACHE"
#: Default size cap: 128 GiB holds the whole of DEVIL (1,250 clips: 35-71 GiB for the warp error's entries, which
#: take 28.6 MiB per 45-frame and 57.9 MiB per 90-frame 832x480 clip, measured by ``benchmarks/slice_eval.py``;
#: FID's float32 features add 8 KiB per frame). A cap below one slice gives no hits at all when methods are scored slice
#: after slice (the least recently used entry is always the next one needed).
DEFAULT_GT_CACHE_MAX_BYTES = 128 << 30
#: Version of the entry layout and of the key's identity fields; a change makes old entries unreachable.
GT_CACHE_FORMAT = 1
MAGIC = b"DEVIL-GT-CACHE 1\n"
ENTRY_SUFFIX = ".gt"
_HEADER = "__header__"
#: A temporary file (an interrupted write) older than this is removed when the cache is trimmed; a younger one may
#: be a concurrent run's write in progress.
STALE_TEMPORARY_SECONDS = 24 * 3600
_ZIP_DATE = (1980, 1, 1, 0, 0, 0)  # fixed timestamps: the same entry is the same bytes (zip's earliest date)


def default_gt_cache_dir() -> Path:
    """``$DEVIL_GT_CACHE``, else ``$XDG_CACHE_HOME/devil-dataset/gt``, else ``~/.cache/devil-dataset/gt``.

    >>> import os; os.environ["DEVIL_GT_CACHE"] = "/tmp/gt"; str(default_gt_cache_dir())
    '/tmp/gt'
    >>> del os.environ["DEVIL_GT_CACHE"]
    """
    return cache_folder(GT_CACHE_ENV, "gt")


def prepare_identity(metric: VideoMetric, options: Any = None) -> dict[str, Any] | None:
    """What makes ``metric``'s ``prepare`` output what it is (JSON-able), or ``None`` when it is not stored: the
    metric's own :meth:`~devil_dataset.eval.metrics.metric.Metric.prepare_identity` (``None`` for a metric that
    prepares nothing worth storing, or has no stable identity), with the cache's format, the package version, the
    metric's class and the resolved parity modes of its options.

    >>> from devil_dataset.eval.metrics import EvalOptions, build_metrics
    >>> ms, _ = build_metrics(["warp_error", "psnr"], EvalOptions(flow="dis"))
    >>> prepare_identity(ms["warp_error"])["flow_backend"], prepare_identity(ms["psnr"])
    ('dis', None)
    """
    declared = getattr(metric, "prepare_identity", None)
    own = declared() if callable(declared) and getattr(metric, "prepares_ground_truth", False) else None
    if own is None:
        return None
    options = options if options is not None else getattr(metric, "options", None)
    ident: dict[str, Any] = {"format": GT_CACHE_FORMAT, "package": __version__,
                             "class": f"{type(metric).__module__}.{type(metric).__qualname__}"}
    if options is not None:
        ident.update({"ssim_mode": options.ssim_mode, "pvcs_mode": options.pvcs_mode})
    return {**ident, **own}


def prepare_key(clip_hash: str, identity: Mapping[str, Any]) -> str:
    """The entry key (sha256 hex) of a clip's content hash and a metric's :func:`prepare_identity`.

    >>> k = prepare_key("ab" * 32, {"metric": "fid"}); len(k), k == prepare_key("ab" * 32, {"metric": "fid"})
    (64, True)
    """
    text = json.dumps({"clip": clip_hash, "identity": identity}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def encode_entry(key: str, kind: str, arrays: Mapping[str, np.ndarray], identity: Mapping[str, Any]) -> bytes:
    """The bytes of an entry: ``MAGIC``, the payload's sha256, the payload (a deterministic uncompressed npz)."""
    header = json.dumps({"format": GT_CACHE_FORMAT, "key": key, "kind": kind, "identity": identity,
                         "arrays": sorted(arrays)}, sort_keys=True).encode()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
        items = [(_HEADER, np.frombuffer(header, np.uint8))] + [(n, arrays[n]) for n in sorted(arrays)]
        for name, arr in items:
            info = zipfile.ZipInfo(name + ".npy", date_time=_ZIP_DATE)
            info.external_attr = 0o600 << 16
            with zf.open(info, "w", force_zip64=True) as f:
                np.lib.format.write_array(f, np.ascontiguousarray(arr), allow_pickle=False)
    payload = buf.getvalue()
    return MAGIC + hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload


def decode_entry(data: bytes, key: str) -> tuple[str, dict[str, np.ndarray]]:
    """(kind, arrays) of an entry's bytes; :class:`DevilError` saying what is wrong when it does not verify."""
    if not data.startswith(MAGIC):
        raise DevilError("not a gt cache entry (bad magic)")
    digest, payload = data[len(MAGIC): len(MAGIC) + 64], data[len(MAGIC) + 65:]
    if hashlib.sha256(payload).hexdigest().encode() != digest:
        raise DevilError("payload sha256 does not match (truncated or altered)")
    try:
        with np.load(io.BytesIO(payload), allow_pickle=False) as npz:
            arrays = {n: npz[n] for n in npz.files}
        header = json.loads(arrays.pop(_HEADER).tobytes())
    except Exception as exc:  # a verified payload that still fails: a writer bug, reported the same way
        raise DevilError(f"unreadable payload ({exc})") from None
    if header.get("key") != key or header.get("format") != GT_CACHE_FORMAT or sorted(arrays) != header["arrays"]:
        raise DevilError("header does not match the entry's key")
    return str(header["kind"]), arrays


# ------------------------------------------------------------------------------------------------------ cache
def _array_parts(state: Any) -> tuple[str, dict[str, np.ndarray]]:
    """(kind, arrays) of an array or a list of arrays: the encoding of :meth:`GroundTruthCache.put` by default."""
    return Metric().prepared_to_arrays(state)


def _array_state(kind: str, arrays: dict[str, np.ndarray]) -> Any:
    """The state :func:`_array_parts` took apart."""
    return Metric().prepared_from_arrays(kind, arrays)


@dataclass
class GroundTruthCacheStats:
    """What one process did with a cache: hits, misses, corrupt entries found (and recomputed), bytes written
    and removed to keep the cap."""

    hits: int = 0
    misses: int = 0
    corrupt: int = 0
    written_bytes: int = 0
    evicted: int = 0
    problems: list[str] = field(default_factory=list)

    def add(self, other: "GroundTruthCacheStats") -> None:
        """Add the counts of ``other`` (e.g. a worker's) to these."""
        self.hits += other.hits
        self.misses += other.misses
        self.corrupt += other.corrupt
        self.written_bytes += other.written_bytes
        self.evicted += other.evicted
        self.problems += other.problems


class GroundTruthCache:
    """A folder of prepared ground truth, at most ``max_bytes`` large (see the module docstring).

    Picklable (a folder and a cap): it travels with an engine's tasks and each worker opens the same folder.

    >>> import tempfile
    >>> c = GroundTruthCache(tempfile.mkdtemp(), max_bytes=1 << 20)
    >>> c.put("k" * 64, [np.arange(3.0)], {"metric": "test"}), c.get("k" * 64)
    (True, [array([0., 1., 2.])])
    """

    def __init__(self, directory: str | os.PathLike, max_bytes: int = DEFAULT_GT_CACHE_MAX_BYTES) -> None:
        if max_bytes < 0:
            raise DevilError(f"gt cache {directory}: max_bytes must be >= 0, got {max_bytes}")
        self.directory = Path(directory).expanduser()
        if self.directory.exists() and not self.directory.is_dir():
            raise DevilError(f"gt cache {self.directory}: exists and is not a directory")
        self.max_bytes = int(max_bytes)
        self.stats = GroundTruthCacheStats()

    def __getstate__(self) -> dict:
        return {"directory": self.directory, "max_bytes": self.max_bytes}  # a worker counts its own stats

    def __setstate__(self, state: dict) -> None:
        self.directory, self.max_bytes = state["directory"], state["max_bytes"]
        self.stats = GroundTruthCacheStats()

    def __repr__(self) -> str:
        return f"GroundTruthCache({str(self.directory)!r}, max_bytes={self.max_bytes})"

    def path_of(self, key: str) -> Path:
        """The entry file of ``key`` (two-level layout: 256 sub-folders)."""
        return self.directory / key[:2] / (key + ENTRY_SUFFIX)

    def get(self, key: str, decode: Callable[[str, dict[str, np.ndarray]], Any] = _array_state) -> Any | None:
        """The stored state of ``key`` put back by ``decode(kind, arrays)`` (the metric's ``prepared_from_arrays``),
        or ``None`` (absent, or corrupt: then reported, removed and counted)."""
        path = self.path_of(key)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            self.stats.misses += 1
            return None
        try:
            kind, arrays = decode_entry(data, key)
            state = decode(kind, arrays)
        except (DevilError, ValueError, KeyError) as exc:
            problem = f"{path}: corrupt gt cache entry ({exc}); recomputed"
            print(f"devil evaluate: {problem}", file=sys.stderr)
            self.stats.corrupt += 1
            self.stats.misses += 1
            self.stats.problems.append(problem)
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            return None
        with contextlib.suppress(OSError):
            os.utime(path)  # least recently used = oldest mtime
        self.stats.hits += 1
        return state

    def put(self, key: str, state: Any, identity: Mapping[str, Any],
            encode: Callable[[Any], tuple[str, dict[str, np.ndarray]]] = _array_parts) -> bool:
        """Store ``state`` under ``key`` (atomically; an entry over the cap is not stored), taken apart by
        ``encode(state) -> (kind, arrays)`` (the metric's ``prepared_to_arrays``); returns whether it was stored."""
        kind, arrays = encode(state)
        data = encode_entry(key, kind, arrays, identity)
        if len(data) > self.max_bytes:
            return False
        atomic_write_bytes(self.path_of(key), data)
        self.stats.written_bytes += len(data)
        self.trim(self.max_bytes, keep=self.path_of(key))
        return True

    def entries(self) -> list[tuple[Path, int, int]]:
        """(path, size, mtime_ns) of every entry, oldest first."""
        out: list[tuple[Path, int, int]] = []
        if not self.directory.is_dir():
            return out
        for sub in os.scandir(self.directory):
            if not sub.is_dir():
                continue
            for e in os.scandir(sub.path):
                if e.name.endswith(ENTRY_SUFFIX) and not e.name.startswith(TMP_PREFIX):
                    with contextlib.suppress(FileNotFoundError):
                        st = e.stat()
                        out.append((Path(e.path), st.st_size, st.st_mtime_ns))
        return sorted(out, key=lambda x: (x[2], str(x[0])))

    def size_bytes(self) -> int:
        """Bytes the entries take now."""
        return sum(size for _, size, _ in self.entries())

    def remove_stale_temporaries(self, older_than_s: float = STALE_TEMPORARY_SECONDS) -> int:
        """Delete temporary files of interrupted writes older than ``older_than_s``; returns how many went."""
        if not self.directory.is_dir():
            return 0
        removed, limit = 0, time.time() - older_than_s
        for path in self.directory.glob(f"*/{TMP_PREFIX}*"):
            with contextlib.suppress(FileNotFoundError):
                if path.stat().st_mtime < limit:
                    path.unlink()
                    removed += 1
        return removed

    def trim(self, max_bytes: int, keep: Path | None = None) -> int:
        """Remove the least recently used entries until at most ``max_bytes`` remain (and stale temporaries);
        returns how many entries went."""
        self.remove_stale_temporaries()
        entries = self.entries()
        total = sum(size for _, size, _ in entries)
        removed = 0
        for path, size, _ in entries:
            if total <= max_bytes:
                break
            if path == keep:
                continue
            with contextlib.suppress(FileNotFoundError):  # another run removed it first
                path.unlink()
                removed += 1
            total -= size
        self.stats.evicted += removed
        return removed

    def summary(self) -> str:
        """One line: this process's hits/misses/corrupt, bytes written, the folder's size and cap."""
        s = self.stats
        text = (f"gt cache {self.directory}: {s.hits} hits, {s.misses} misses, {s.written_bytes / 2**20:.1f} MiB "
                f"written, {self.size_bytes() / 2**30:.2f} of {self.max_bytes / 2**30:.1f} GiB used")
        if s.corrupt:
            text += f", {s.corrupt} corrupt entries recomputed"
        if s.evicted:
            text += f", {s.evicted} entries removed to keep the cap"
        return text


def cached_prepare_clip(metrics: Mapping[str, VideoMetric], gt: np.ndarray, cache: GroundTruthCache,
                        *, others: bool = True, hole: np.ndarray | None = None) -> dict[str, object]:
    """``prepare_clip(metrics, gt, hole)`` (:mod:`devil_dataset.eval.scoring.one_pass`) through ``cache``: a metric
    that declares a stored preparation (:func:`prepare_identity`) is read or computed and stored; another metric's
    ``prepare`` runs when ``others`` (``False`` leaves it to the metric's own update, as a single-method pass does).
    ``hole`` (bool [T, H, W]) adds the hole-dependent part (``for_hole``) of each prepared state; ``None`` leaves it
    out."""
    out: dict[str, object] = {}
    keys = _ClipKeys(gt, hole)
    for name, metric in metrics.items():
        prepare = getattr(metric, "prepare", None)
        if prepare is None:
            continue
        identity = prepare_identity(metric)
        if identity is None:
            p = prepare(gt, hole) if others else None
        elif hole is not None and getattr(metric, "prepared_per_hole", False):
            p = _read_or_make(cache, metric, keys, identity, functools.partial(prepare, gt, hole), per_hole=True)
        else:
            p = _read_or_make(cache, metric, keys, identity, functools.partial(prepare, gt, None))
            if hole is not None and hasattr(p, "for_hole"):
                p = p.for_hole(hole)
        if p is not None:
            out[name] = p
    return out


class _ClipKeys:
    """The content hashes of one clip and its hole, computed on first use and kept for every metric."""

    def __init__(self, gt: np.ndarray, hole: np.ndarray | None, clip_hash: str | None = None) -> None:
        self.gt, self.hole = gt, hole
        self._clip: str | None = clip_hash
        self._hole: str | None = None

    @property
    def clip(self) -> str:
        if self._clip is None:
            self._clip = clip_content_hash(self.gt)
        return self._clip

    @property
    def hole_hash(self) -> str:
        if self._hole is None:
            assert self.hole is not None
            self._hole = clip_content_hash(self.hole)
        return self._hole


def _read_or_make(cache: GroundTruthCache, metric: Any, keys: _ClipKeys, identity: Mapping[str, Any],
                  make: Callable[[], Any], *, per_hole: bool = False) -> Any:
    """The entry of (clip, ``identity``) in ``cache``, or ``make()`` stored there (unless ``None``), taken apart and
    put back by ``metric``. ``per_hole``: the entry is the hole-keyed one (the hole's hash joins the identity) and the
    state is given the hole itself (the fast identity check of the metric's update)."""
    if per_hole:
        identity = {**identity, "hole": keys.hole_hash}
    key = prepare_key(keys.clip, identity)
    p = cache.get(key, metric.prepared_from_arrays)
    if p is None:
        p = make()
        if p is not None:
            cache.put(key, p, identity, metric.prepared_to_arrays)
    if p is not None and per_hole:
        p.hole = keys.hole
    return p


def cached_hole_prepares(metrics: Mapping[str, VideoMetric], gt: np.ndarray, cache: GroundTruthCache,
                         hole: np.ndarray, clip_state: Callable[[str], Any], *,
                         clip_hash: str | None = None) -> dict[str, object]:
    """The state under ``hole`` of each metric that stores its preparation per hole (``prepared_per_hole``) through
    ``cache``: read, or made as ``clip_state(name).for_hole(hole)`` (the clip-level state, which the caller computes
    once for all of a clip's holes) and stored. The keys are those of ``cached_prepare_clip(..., hole=hole)``, so both
    share entries. ``clip_hash``: :func:`clip_content_hash` of ``gt`` when the caller has it."""
    out: dict[str, object] = {}
    keys = _ClipKeys(gt, hole, clip_hash)
    for name, metric in metrics.items():
        identity = prepare_identity(metric)
        if identity is None or not getattr(metric, "prepared_per_hole", False):
            continue
        made = functools.partial(lambda n: clip_state(n).for_hole(hole), name)
        out[name] = _read_or_make(cache, metric, keys, identity, made, per_hole=True)
    return out


def is_hole_keyed(metric: Any) -> bool:
    """Whether ``metric``'s cache entries are made per (clip, hole): it declares ``prepared_per_hole`` and a
    stored preparation."""
    return bool(getattr(metric, "prepared_per_hole", False)) and prepare_identity(metric) is not None


def open_gt_cache(cache: GroundTruthCache | str | os.PathLike | None) -> GroundTruthCache | None:
    """A :class:`GroundTruthCache` of a folder (default cap), the cache itself, or ``None``."""
    if cache is None or isinstance(cache, GroundTruthCache):
        return cache
    return GroundTruthCache(cache)


__all__ = [
    "DEFAULT_GT_CACHE_MAX_BYTES", "GT_CACHE_ENV", "GroundTruthCache", "GroundTruthCacheStats", "cached_hole_prepares",
    "cached_prepare_clip", "clip_content_hash", "decode_entry", "default_gt_cache_dir", "encode_entry",
    "is_hole_keyed", "open_gt_cache", "prepare_identity", "prepare_key",
]
