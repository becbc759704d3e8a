"""A Flickr stand-in on 127.0.0.1: serves generated videos (with HTTP ranges) and fake ``flickr.photos.getInfo``.

Per-video behaviours (``server.behaviour[video_id]``): ``"503-once"`` (the first request gets 503),
``"404"``, ``"truncate"`` (every response that starts at byte 0 sends half the body and closes), ``"stall"``
(sends half the body, then waits until ``server.release`` is set), ``"private"`` (the API says permission denied).
"""
from __future__ import annotations

import json
import re
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

from devil_dataset.core.video_io import write_video
from devil_dataset.sources.catalog import load_catalog

USER = "122995322@N02"  # one of the release's whitelisted users
SECRET = "f00dcafe"


def make_video(path: Path, *, frames: int = 3, size=(1920, 1080), noise: bool = False, seed: int = 0) -> Path:
    """A tiny real video: ``frames`` frames at ``size`` (noise frames make a file of a few MB)."""
    w, h = size
    rng = np.random.default_rng(seed)
    if noise:
        video = rng.integers(0, 256, (frames, h, w, 3), dtype=np.uint8)
    else:
        video = np.zeros((frames, h, w, 3), np.uint8)
        for t in range(frames):
            video[t, :, : (t + 1) * w // (frames + 1)] = (40 * t + seed * 7) % 256
    return write_video(path, video, fps=25)


class FakeFlickr:
    def __init__(self, files: dict[str, bytes]):
        self.files = files
        self.user = USER
        self.behaviour: dict[str, str] = {}
        self.requests: list[tuple[str, str | None]] = []  # (path, Range header)
        self.counts: dict[str, int] = {}
        self.release = threading.Event()
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # keep test output clean
                pass

            def handle(self):  # clients that are killed or hang up mid-transfer are part of the tests
                try:
                    super().handle()
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def do_GET(self):
                with server.lock:
                    server.requests.append((self.path, self.headers.get("Range")))
                try:
                    server.handle(self)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def _send(self, h, status: int, body: bytes, ctype: str = "application/json", headers=None, limit=None):
        h.send_response(status)
        h.send_header("Content-Type", ctype)
        h.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            h.send_header(k, v)
        if limit is not None:
            h.send_header("Connection", "close")
        h.end_headers()
        h.wfile.write(body if limit is None else body[:limit])
        h.wfile.flush()
        if limit is not None:
            h.close_connection = True

    def handle(self, h):
        url = urllib.parse.urlparse(h.path)
        if url.path == "/services/rest/":
            q = urllib.parse.parse_qs(url.query)
            vid = q["photo_id"][0]
            key = q.get("api_key", [""])[0]
            if self.behaviour.get(vid) == "private":
                doc = {"stat": "fail", "code": 2, "message": f"Permission denied (api_key {key})"}
            elif vid not in self.files and self.behaviour.get(vid) != "404":
                doc = {"stat": "fail", "code": 1, "message": f'Photo "{vid}" not found (invalid ID)'}
            else:
                doc = {"stat": "ok", "photo": {"id": vid, "secret": SECRET, "media": "video",
                                                "owner": {"nsid": USER}}}
            return self._send(h, 200, json.dumps(doc).encode())
        m = re.match(r"^/photos/[^/]+/(\d+)(?:/play/1080p/\w+)?/?$", url.path)
        if not m:
            return self._send(h, 404, b"no route")
        vid = m.group(1)
        with self.lock:
            self.counts[vid] = self.counts.get(vid, 0) + 1
            count = self.counts[vid]
        mode = self.behaviour.get(vid)
        if mode == "404" or vid not in self.files:
            return self._send(h, 404, b"not found", "text/plain")
        if mode == "503-once" and count == 1:
            return self._send(h, 503, b"busy", "text/plain")
        data = self.files[vid]
        rng = h.headers.get("Range")
        start = 0
        if rng:
            start = int(re.match(r"bytes=(\d+)-", rng).group(1))
        body = data[start:]
        headers = {"Accept-Ranges": "bytes"}
        status = 200
        if start:
            status = 206
            headers["Content-Range"] = f"bytes {start}-{len(data) - 1}/{len(data)}"
        if mode == "truncate" and start == 0:
            return self._send(h, status, body, "video/mp4", headers, limit=len(body) // 2)
        if mode == "stall" and start == 0:
            h.send_response(status)
            h.send_header("Content-Type", "video/mp4")
            h.send_header("Content-Length", str(len(body)))
            for k, v in headers.items():
                h.send_header(k, v)
            h.end_headers()
            h.wfile.write(body[: len(body) // 2])
            h.wfile.flush()
            self.release.wait(20)
            h.close_connection = True
            return
        return self._send(h, status, body, "video/mp4", headers)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)


@pytest.fixture(scope="session")
def source_videos(tmp_path_factory):
    """Generated videos served under the first release ids: 1080p ones, one 1280x720 and one larger 1080p file."""
    d = tmp_path_factory.mktemp("served")
    ids = load_catalog().video_ids
    files = {}
    for i, vid in enumerate(ids[:4]):
        files[vid] = make_video(d / f"{vid}.mp4", frames=3, seed=i).read_bytes()
    files[ids[4]] = make_video(d / f"{ids[4]}.mp4", frames=3, size=(1280, 720)).read_bytes()
    files[ids[5]] = make_video(d / f"{ids[5]}.mp4", frames=2, noise=True).read_bytes()
    return files


@pytest.fixture
def flickr(source_videos, monkeypatch):
    monkeypatch.delenv("FLICKR_API_KEY", raising=False)
    monkeypatch.delenv("FLICKR_API_SECRET", raising=False)
    monkeypatch.delenv("DEVIL_SOURCES_BASE_URL", raising=False)
    with FakeFlickr(dict(source_videos)) as server:
        yield server
