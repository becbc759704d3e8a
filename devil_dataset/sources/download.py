"""Download the DEVIL source videos (``devil sources download``): yt-dlp by default, the Flickr API when keyed.

- **yt-dlp** (default): each video page ``{base}/photos/-/{video_id}/`` is handed to yt-dlp, whose Flickr
  extractor needs no API key (the user part of the address is not used by Flickr for a video id).
- **Flickr API** (when ``FLICKR_API_KEY`` is set in the environment; ``FLICKR_API_SECRET`` is read only to keep it
  out of every message): ``flickr.photos.getInfo`` gives the owner and secret, and the release's address
  ``{base}/photos/{owner}/{video_id}/play/1080p/{secret}`` is downloaded by yt-dlp's generic (direct-file)
  extractor. Keys are never written to disk, logs or results and are redacted from error messages.

``base`` is ``https://www.flickr.com`` (API: ``https://api.flickr.com``) unless ``base_url=`` or the environment
variable ``DEVIL_SOURCES_BASE_URL`` names another server (the tests start one on 127.0.0.1); the same code runs.

Robustness: ``jobs`` videos at a time; transient errors (5xx, resets, truncated transfers) are retried with
exponential backoff, resuming yt-dlp's ``.part`` file with an HTTP range request; a finished file is probed and
moved into place atomically (complete or absent). Gone videos (404, private, not 1920x1080) are recorded with
their reason and the run goes on. ``OUT/sources-manifest.json`` records per video: file, size, sha256, resolution,
frame count, fps, owner, or the reason it is missing. A re-run skips what is already complete.

    >>> redact("key=abc123&x=1", ["abc123"])
    'key=***&x=1'
"""
from __future__ import annotations

import json
import os
import re
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Sequence

from ..core.atomic import atomic_write_text, file_sha256
from ..core.errors import DevilError
from ..core.progress import progress_bar
from ..core.video_io import probe_video
from .catalog import RELEASE_RESOLUTION, SourceCatalog, load_catalog

MANIFEST_NAME = "sources-manifest.json"
MANIFEST_FORMAT = "devil-sources/1"
PARTIAL_DIRNAME = ".partial"  # yt-dlp's resumable .part files live here until a download is complete
REJECTED_DIRNAME = "rejected"  # complete downloads that fail the release's 1920x1080 filter (kept, not used)
BASE_URL_ENV = "DEVIL_SOURCES_BASE_URL"
API_KEY_ENV = "FLICKR_API_KEY"
API_SECRET_ENV = "FLICKR_API_SECRET"
DEFAULT_BASE_URL = "https://www.flickr.com"
DEFAULT_API_URL = "https://api.flickr.com/services/rest/"
# The release's download address (devil-sources.json `download_url_format_in_release`), relative to the base.
PLAY_PATH = "/photos/{user}/{video_id}/play/1080p/{secret}"
PAGE_PATH = "/photos/-/{video_id}/"
# yt-dlp format choice: the 1920x1080 rendition when the extractor lists sizes, else the best single file.
YTDLP_FORMAT = "b[width=1920][height=1080]/b[height=1080]/b"
DEFAULT_JOBS = 4
DEFAULT_RETRIES = 4
DEFAULT_BACKOFF_S = 2.0  # first wait; doubles per attempt
MAX_BACKOFF_S = 60.0
SOCKET_TIMEOUT_S = 30.0
# HTTP statuses that mean "gone for good" (not retried).
GONE_STATUSES = {400: "bad request", 401: "private (login required)", 403: "private or forbidden",
                 404: "not found", 410: "gone"}
_GONE_TEXT = re.compile(r"not found|private|permission denied|unavailable|removed|deleted|unsupported url",
                        re.IGNORECASE)


class GoneError(Exception):
    """A video that cannot be obtained (not retried); the message is the reason."""


class TransientError(Exception):
    """A failure worth retrying (5xx, connection reset, truncated transfer)."""


def redact(text: str, secrets: Iterable[str | None]) -> str:
    """``text`` with every non-empty secret replaced by ``***``."""
    for s in secrets:
        if s:
            text = text.replace(s, "***")
            quoted = urllib.parse.quote(s, safe="")
            if quoted != s:
                text = text.replace(quoted, "***")
    return text


@dataclass
class SourceRecord:
    """One video of the source list in the manifest: ``status`` is ``ok``, ``missing`` or ``rejected``."""

    video_id: str
    status: str
    user: str | None = None
    file: str | None = None
    size: int | None = None
    sha256: str | None = None
    width: int | None = None
    height: int | None = None
    frame_count: int | None = None
    fps: float | None = None
    fps_fraction: str | None = None
    reason: str | None = None
    backend: str | None = None
    attempts: int = 0


@dataclass
class DownloadResult:
    """What :func:`download_sources` did: per-video records (release order) and the manifest path."""

    out_dir: Path
    records: list[SourceRecord] = field(default_factory=list)
    listed: int = 0

    @property
    def obtained(self) -> list[SourceRecord]:
        return [r for r in self.records if r.status == "ok"]

    @property
    def missing(self) -> list[SourceRecord]:
        return [r for r in self.records if r.status != "ok"]

    def table(self) -> str:
        """The final table: one line per video that was not obtained, then the totals."""
        lines = [f"{'video id':12s} {'user':16s} {'status':9s} detail"]
        for r in self.records:
            size_mb = r.size / 1e6 if r.size is not None else float("nan")  # an obtained video has its size
            detail = (f"{r.width}x{r.height} {r.frame_count} frames {r.fps:.3f} fps {size_mb:.1f} MB"
                      if r.status == "ok" else r.reason or "")
            lines.append(f"{r.video_id:12s} {(r.user or '?'):16s} {r.status:9s} {detail}")
        lines.append(f"obtained {len(self.obtained)} of {self.listed} listed videos; "
                     f"{len(self.missing)} not obtained; manifest: {self.out_dir / MANIFEST_NAME}")
        return "\n".join(lines)


def read_sources_manifest(out_dir: str | os.PathLike) -> dict[str, SourceRecord]:
    """The records of ``OUT/sources-manifest.json`` by video id (empty when there is none).

    >>> import tempfile
    >>> read_sources_manifest(tempfile.mkdtemp())
    {}
    """
    path = Path(out_dir) / MANIFEST_NAME
    if not path.is_file():
        return {}
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        names = set(SourceRecord.__dataclass_fields__)
        return {vid: SourceRecord(**{k: v for k, v in rec.items() if k in names}) for vid, rec in doc["videos"].items()}
    except (ValueError, KeyError, TypeError) as exc:
        raise DevilError(f"{path}: not a sources manifest ({exc})") from None


def _write_manifest(out: Path, catalog: SourceCatalog, records: dict[str, SourceRecord]) -> None:
    order = {v: i for i, v in enumerate(catalog.video_ids)}
    doc = {
        "format": MANIFEST_FORMAT,
        "source_list": catalog.provenance,
        "videos": {vid: asdict(records[vid]) for vid in sorted(records, key=lambda v: (order.get(v, 1 << 30), v))},
    }
    atomic_write_text(out / MANIFEST_NAME, json.dumps(doc, indent=1) + "\n")


def _status_of(exc: BaseException) -> int | None:
    """The HTTP status behind a yt-dlp / urllib error, when there is one."""
    seen = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        status = getattr(cur, "status", None) or getattr(cur, "code", None)
        if isinstance(status, int) and 100 <= status < 600:
            return status
        nxt = getattr(cur, "cause", None) or getattr(cur, "exc_info", (None, None))[1] or cur.__cause__
        cur = nxt if isinstance(nxt, BaseException) else None
    return None


def _classify(exc: BaseException, text: str) -> Exception:
    status = _status_of(exc)
    if status is None:
        m = re.search(r"HTTP Error (\d{3})", text)
        status = int(m.group(1)) if m else None
    if status in GONE_STATUSES:
        return GoneError(f"{GONE_STATUSES[status]} (HTTP {status})")
    if status is not None and status >= 500:
        return TransientError(f"server error (HTTP {status})")
    if status is None and _GONE_TEXT.search(text) and "giving up" not in text.lower():
        return GoneError(text)
    return TransientError(text)


class _QuietLogger:
    """yt-dlp logger that keeps the last error line (redacted) instead of printing."""

    def __init__(self, secrets: Sequence[str]):
        self.secrets, self.last = secrets, ""

    def debug(self, msg: str) -> None:
        pass

    def info(self, msg: str) -> None:
        pass

    def warning(self, msg: str) -> None:
        pass

    def error(self, msg: str) -> None:
        self.last = redact(str(msg), self.secrets)


@dataclass
class _Settings:
    out: Path
    base_url: str
    api_url: str
    api_key: str | None
    api_secret: str | None
    retries: int
    backoff_s: float
    socket_timeout_s: float

    @property
    def secrets(self) -> list[str]:
        return [s for s in (self.api_key, self.api_secret) if s]

    @property
    def backend(self) -> str:
        return "flickr-api" if self.api_key else "yt-dlp"


def _flickr_get_info(video_id: str, s: _Settings) -> tuple[str, str]:
    """(owner nsid, secret) of a video from ``flickr.photos.getInfo``, as the release asked for them."""
    query = urllib.parse.urlencode({"method": "flickr.photos.getInfo", "api_key": s.api_key, "photo_id": video_id,
                                    "format": "json", "nojsoncallback": 1})
    try:
        with urllib.request.urlopen(f"{s.api_url}?{query}", timeout=s.socket_timeout_s) as resp:
            doc = json.loads(resp.read().decode("utf-8"))
    except urllib.error.HTTPError as exc:
        raise _classify(exc, redact(str(exc), s.secrets)) from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise TransientError(f"Flickr API: {redact(str(exc), s.secrets)}") from None
    if doc.get("stat") != "ok":
        code, message = doc.get("code"), redact(str(doc.get("message", "")), s.secrets)
        # Flickr API error codes: 1 = photo not found, 2 = permission denied (private); 105 = service unavailable
        if code in (1, 2):
            raise GoneError(f"Flickr API: {message} (code {code})")
        if code == 105:
            raise TransientError(f"Flickr API: {message} (code {code})")
        raise GoneError(f"Flickr API: {message} (code {code})")
    photo = doc.get("photo", {})
    if photo.get("media") not in (None, "video"):
        raise GoneError(f"Flickr API: {video_id} is a {photo.get('media')}, not a video")
    try:
        return str(photo["owner"]["nsid"]), str(photo["secret"])
    except (KeyError, TypeError):
        raise GoneError("Flickr API: getInfo answer without owner/secret") from None


def _ytdlp_fetch(url: str, video_id: str, partial: Path, s: _Settings, *, force_generic: bool) -> tuple[Path, dict]:
    """One yt-dlp attempt; resumes ``partial/<id>.<ext>.part``. Returns the finished file and yt-dlp's info."""
    try:
        import yt_dlp
    except ImportError:  # pragma: no cover - depends on the install
        raise DevilError("downloading sources needs yt-dlp: pip install 'devil-dataset[sources]'") from None
    logger = _QuietLogger(s.secrets)
    opts = {
        "outtmpl": str(partial / f"{video_id}.%(ext)s"),
        "format": YTDLP_FORMAT,
        "logger": logger,
        "quiet": True,
        "no_warnings": True,
        "noprogress": True,
        "noplaylist": True,
        "continuedl": True,
        "retries": 0,  # retries are ours (bounded, with backoff); the .part file is resumed on the next attempt
        "extractor_retries": 0,
        "socket_timeout": s.socket_timeout_s,
        "force_generic_extractor": force_generic,
        "cachedir": False,
        "color": {"stderr": "never", "stdout": "never"},
    }
    try:
        with yt_dlp.YoutubeDL(opts) as ydl:
            info = ydl.extract_info(url, download=True)
            downloads = info.get("requested_downloads") or [{}]
            path = Path(downloads[0].get("filepath") or ydl.prepare_filename(info))
    except yt_dlp.utils.DownloadError as exc:
        text = redact(logger.last or str(exc), s.secrets)
        text = re.sub(r"^ERROR:\s*", "", text)
        raise _classify(exc, text) from None
    if not path.is_file():
        raise TransientError(f"yt-dlp reported success but {path.name} is not there")
    return path, info


def _probe(path: Path) -> dict:
    info = probe_video(path)
    frames = info.frame_count or _count_frames(path)
    return {"size": path.stat().st_size, "sha256": file_sha256(path), "width": info.width, "height": info.height,
            "frame_count": frames, "fps": float(info.fps),
            "fps_fraction": f"{info.fps.numerator}/{info.fps.denominator}"}


def _count_frames(path: Path) -> int:
    import av

    with av.open(str(path)) as c:
        return sum(1 for p in c.demux(c.streams.video[0]) if p.size)


def _file_name(user: str | None, video_id: str, ext: str) -> str:
    """``<user>-<video id>.<ext>`` (the prefix of the release's clip names) or ``<video id>.<ext>``."""
    return f"{user}-{video_id}.{ext}" if user else f"{video_id}.{ext}"


def _download_one(video_id: str, s: _Settings, sleep: Callable[[float], None]) -> SourceRecord:
    partial = s.out / PARTIAL_DIRNAME
    attempts, last = 0, ""
    for attempt in range(s.retries + 1):
        attempts = attempt + 1
        try:
            user = None
            if s.api_key:
                user, secret = _flickr_get_info(video_id, s)
                url = s.base_url + PLAY_PATH.format(user=user, video_id=video_id, secret=secret)
                path, info = _ytdlp_fetch(url, video_id, partial, s, force_generic=True)
            else:
                url = s.base_url + PAGE_PATH.format(video_id=video_id)
                path, info = _ytdlp_fetch(url, video_id, partial, s, force_generic=False)
                user = info.get("uploader_id") or None
            try:
                facts = _probe(path)
            except DevilError as exc:
                path.unlink(missing_ok=True)  # a complete transfer that is not a video: fetch it again
                raise TransientError(f"downloaded file is not a readable video ({exc})") from None
            ext = path.suffix.lstrip(".") or "mp4"
            name = _file_name(user, video_id, ext)
            if (facts["width"], facts["height"]) != RELEASE_RESOLUTION:
                (s.out / REJECTED_DIRNAME).mkdir(exist_ok=True)
                os.replace(path, s.out / REJECTED_DIRNAME / name)
                return SourceRecord(video_id, "rejected", user=user, file=f"{REJECTED_DIRNAME}/{name}",
                                    reason=f"not 1920x1080 ({facts['width']}x{facts['height']})", backend=s.backend,
                                    attempts=attempts, **{k: v for k, v in facts.items()})
            os.replace(path, s.out / name)  # atomic completion: the final name appears only when complete
            return SourceRecord(video_id, "ok", user=user, file=name, backend=s.backend, attempts=attempts, **facts)
        except GoneError as exc:
            return SourceRecord(video_id, "missing", reason=redact(str(exc), s.secrets), backend=s.backend,
                                attempts=attempts)
        except TransientError as exc:
            last = redact(str(exc), s.secrets)
            if attempt < s.retries:
                sleep(min(s.backoff_s * 2**attempt, MAX_BACKOFF_S))
    return SourceRecord(video_id, "missing", reason=f"failed after {attempts} attempts: {last}", backend=s.backend,
                        attempts=attempts)


def _complete(rec: SourceRecord | None, out: Path) -> bool:
    if rec is None or rec.status not in ("ok", "rejected") or not rec.file:
        return False
    p = out / rec.file
    return p.is_file() and p.stat().st_size == rec.size


def download_sources(
    out_dir: str | os.PathLike,
    *,
    video_ids: Sequence[str] | None = None,
    jobs: int = DEFAULT_JOBS,
    retries: int = DEFAULT_RETRIES,
    backoff_s: float = DEFAULT_BACKOFF_S,
    base_url: str | None = None,
    socket_timeout_s: float = SOCKET_TIMEOUT_S,
    progress: bool = True,
    sleep: Callable[[float], None] = time.sleep,
) -> DownloadResult:
    """Download the release's source videos (or ``video_ids`` of them) into ``out_dir``; resumable.

    Example:
        >>> result = download_sources("devil-sources", jobs=4)  # doctest: +SKIP
        >>> print(result.table())  # doctest: +SKIP
    """
    catalog = load_catalog()
    ids = list(video_ids) if video_ids else list(catalog.video_ids)
    unknown = [v for v in ids if v not in set(catalog.video_ids)]
    if unknown:
        raise DevilError(f"not in the DEVIL source list: {', '.join(unknown)}")
    if jobs < 1 or retries < 0:
        raise DevilError("jobs must be >= 1 and retries >= 0")
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise DevilError(f"{out}: exists and is not a directory")
    (out / PARTIAL_DIRNAME).mkdir(parents=True, exist_ok=True)
    base = (base_url or os.environ.get(BASE_URL_ENV) or DEFAULT_BASE_URL).rstrip("/")
    api_url = (base + "/services/rest/") if (base_url or os.environ.get(BASE_URL_ENV)) else DEFAULT_API_URL
    s = _Settings(out, base, api_url, os.environ.get(API_KEY_ENV) or None, os.environ.get(API_SECRET_ENV) or None,
                  retries, backoff_s, socket_timeout_s)

    records = read_sources_manifest(out)
    todo = [v for v in ids if not _complete(records.get(v), out)]
    lock = threading.Lock()

    with progress_bar(total=len(ids), desc="sources", unit="video", enabled=progress) as bar, \
            ThreadPoolExecutor(max_workers=jobs) as pool:
        bar.update(len(ids) - len(todo))  # already downloaded
        futures = {pool.submit(_download_one, v, s, sleep): v for v in todo}
        for fut in as_completed(futures):
            rec = fut.result()
            with lock:
                records[rec.video_id] = rec
                _write_manifest(out, catalog, records)
            bar.set_postfix_str(f"{rec.video_id} {rec.status}")
            bar.update(1)
    if not todo:
        _write_manifest(out, catalog, records)
    return DownloadResult(out, [records[v] for v in ids], listed=len(ids))
