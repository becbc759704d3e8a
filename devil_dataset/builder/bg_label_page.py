"""``devil label bg-scene-motion CLIPS --serve``: a local page for hand-labelling background scene motion.

The release's labels were made by hand (running water covering at least 40% of every frame, paper supplementary
A.2). This serves, on 127.0.0.1 only and a random port, a page that plays each clip in turn and records ``high`` /
``low`` / ``unsure`` (keys h / l / u, or buttons; n/p move without answering). After every answer the labels CSV is
rewritten atomically in the format ``devil label import-bg-labels`` reads (``clip_id,label`` rows; unsure answers
are ``# unsure,<clip id>`` comment lines, which that command skips). Restarting on the same CSV resumes at the
first unanswered clip. Nothing leaves the machine: the page has no external resources.

    >>> labels_csv_text({"b": "low", "a": "high", "c": "unsure"})
    'clip_id,label\\na,high\\nb,low\\n# unsure,c\\n'
"""
from __future__ import annotations

import json
import threading
from contextlib import contextmanager
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator, Sequence

from ..core.atomic import atomic_write_text
from ..core.errors import DevilError
from .labels import read_bg_labels_csv

ANSWERS = ("high", "low", "unsure")
UNSURE_PREFIX = "# unsure,"
VIDEO_TYPES = {".mp4": "video/mp4", ".webm": "video/webm", ".ogv": "video/ogg", ".mov": "video/mp4"}


def labels_csv_text(labels: dict[str, str]) -> str:
    """The CSV of ``labels`` (high/low rows sorted by clip id, then unsure comment lines)."""
    rows = ["clip_id,label"] + [f"{c},{v}" for c, v in sorted(labels.items()) if v != "unsure"]
    rows += [f"{UNSURE_PREFIX}{c}" for c, v in sorted(labels.items()) if v == "unsure"]
    return "\n".join(rows) + "\n"


def read_labels_csv(path: str | Path) -> dict[str, str]:
    """Answers so far from a CSV this page wrote (high/low rows and unsure comments); {} when it does not exist."""
    path = Path(path)
    if not path.exists():
        return {}
    out = dict(read_bg_labels_csv(path))
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith(UNSURE_PREFIX):
            out.setdefault(line[len(UNSURE_PREFIX):].strip(), "unsure")
    return out


class LabelSession:
    """Clips, answers and the CSV they are saved to (thread-safe)."""

    def __init__(self, clips: Sequence[str | Path], labels_csv: str | Path) -> None:
        self.clips = [Path(c) for c in clips]
        for c in self.clips:
            if not c.is_file():
                raise DevilError(f"{c}: no such video file")
            if c.suffix.lower() not in VIDEO_TYPES:
                raise DevilError(f"{c}: not a video file the browser can play ({', '.join(VIDEO_TYPES)})")
        self.ids = [c.stem for c in self.clips]
        if len(set(self.ids)) != len(self.ids):
            raise DevilError("two clips have the same clip id (file name without extension)")
        self.csv = Path(labels_csv)
        self.labels = read_labels_csv(self.csv)
        self.lock = threading.Lock()

    def state(self) -> dict:
        return {"clips": self.ids, "labels": {c: self.labels[c] for c in self.ids if c in self.labels}}

    def answer(self, clip_id: str, label: str) -> dict:
        if clip_id not in self.ids or label not in ANSWERS:
            raise DevilError(f"unknown clip {clip_id!r} or label {label!r}")
        with self.lock:
            self.labels[clip_id] = label
            atomic_write_text(self.csv, labels_csv_text(self.labels))
            return self.state()


PAGE = """<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Background scene motion labels</title>
<style>body{font-family:sans-serif;margin:1.5em}video{max-width:90vw;max-height:60vh;background:#000}
button{font-size:1.1em;margin:4px}#done{color:green;font-weight:bold}</style></head><body>
<h1>Background scene motion</h1>
<p><b>high</b>: running water (or similar scene motion) covers at least 40% of every frame; <b>low</b>: a static
background; else <b>unsure</b>. Keys: <kbd>h</kbd> high, <kbd>l</kbd> low, <kbd>u</kbd> unsure, <kbd>n</kbd>/<kbd>p</kbd>
next/previous.</p>
<div id="progress"></div><div><b id="clip"></b> <span id="current"></span></div>
<video id="video" muted autoplay loop playsinline></video>
<div><button data-label="high">high (h)</button><button data-label="low">low (l)</button>
<button data-label="unsure">unsure (u)</button><button id="prev">previous (p)</button><button id="next">next (n)</button></div>
<div id="done"></div>
<script>
var S = null, i = 0, failed = "";
function show(){
  var n = S.clips.length, done = Object.keys(S.labels).length;
  document.getElementById("progress").textContent = done + " / " + n + " labelled";
  document.getElementById("done").textContent = failed || (done === n ? "All clips labelled." : "");
  var id = S.clips[i]; document.getElementById("clip").textContent = (i + 1) + ". " + id;
  document.getElementById("current").textContent = S.labels[id] ? "(" + S.labels[id] + ")" : "";
  var v = document.getElementById("video"), src = "clip/" + i;
  if (v.getAttribute("src") !== src) { v.setAttribute("src", src); v.play().catch(function(){}); }
}
function firstOpen(){ for (var k = 0; k < S.clips.length; k++) if (!S.labels[S.clips[k]]) return k; return S.clips.length - 1; }
var saving = Promise.resolve();
function answer(label){
  // record and advance at once, then post in order: a key pressed while an answer is in flight labels the next clip
  var id = S.clips[i]; S.labels[id] = label; if (i < S.clips.length - 1) i++; show();
  saving = saving.then(function(){
    return fetch("label", {method: "POST", headers: {"Content-Type": "application/json"},
                           body: JSON.stringify({clip: id, label: label})})
      .then(function(r){ if (!r.ok) throw new Error("HTTP " + r.status); });
  }).catch(function(err){
    failed = "Not saved (" + id + ": " + err.message + "); reload the page."; show();
  });
}
document.querySelectorAll("button[data-label]").forEach(function(b){
  b.addEventListener("click", function(){ answer(b.dataset.label); }); });
document.getElementById("next").addEventListener("click", function(){ i = Math.min(S.clips.length - 1, i + 1); show(); });
document.getElementById("prev").addEventListener("click", function(){ i = Math.max(0, i - 1); show(); });
document.addEventListener("keydown", function(e){
  if (!S) return; var k = e.key.toLowerCase();
  if (k === "h") answer("high"); else if (k === "l") answer("low"); else if (k === "u") answer("unsure");
  else if (k === "n") document.getElementById("next").click(); else if (k === "p") document.getElementById("prev").click();
});
fetch("state").then(function(r){ return r.json(); }).then(function(s){ S = s; i = firstOpen(); show(); });
</script></body></html>
"""  # noqa: E501  (the page as served, byte for byte: a few HTML/JS lines are longer than the code's)


def make_server(session: LabelSession, port: int = 0) -> ThreadingHTTPServer:
    """An HTTP server on 127.0.0.1 (``port`` 0: a random free port) serving the page, the clips and the answers."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:  # quiet
            pass

        def _send(self, body: bytes, ctype: str, status: int = 200, extra: dict | None = None) -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            for k, v in (extra or {}).items():
                self.send_header(k, v)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def do_GET(self) -> None:
            path = self.path.split("?")[0]
            if path in ("/", "/index.html"):
                return self._send(PAGE.encode(), "text/html; charset=utf-8")
            if path == "/state":
                return self._send(json.dumps(session.state()).encode(), "application/json")
            if path.startswith("/clip/") and path[6:].isdigit() and int(path[6:]) < len(session.clips):
                clip = session.clips[int(path[6:])]
                data = clip.read_bytes()
                ctype = VIDEO_TYPES[clip.suffix.lower()]
                rng = self.headers.get("Range", "")
                if rng.startswith("bytes="):
                    a, _, b = rng[6:].partition("-")
                    start = int(a or 0)
                    end = min(int(b) if b else len(data) - 1, len(data) - 1)
                    return self._send(data[start:end + 1], ctype, HTTPStatus.PARTIAL_CONTENT,
                                      {"Content-Range": f"bytes {start}-{end}/{len(data)}", "Accept-Ranges": "bytes"})
                return self._send(data, ctype, extra={"Accept-Ranges": "bytes"})
            self._send(b"not found", "text/plain", HTTPStatus.NOT_FOUND)

        do_HEAD = do_GET

        def do_POST(self) -> None:
            if self.path != "/label":
                return self._send(b"not found", "text/plain", HTTPStatus.NOT_FOUND)
            try:
                body = json.loads(self.rfile.read(min(int(self.headers.get("Content-Length", 0)), 65536)))
                state = session.answer(str(body["clip"]), str(body["label"]))
            except (ValueError, KeyError, TypeError, DevilError) as exc:
                return self._send(str(exc).encode(), "text/plain", HTTPStatus.BAD_REQUEST)
            self._send(json.dumps(state).encode(), "application/json")

    return ThreadingHTTPServer(("127.0.0.1", port), Handler)


@contextmanager
def serve_in_thread(session: LabelSession) -> Iterator[str]:
    """Serve :func:`make_server` from a daemon thread for the ``with`` block, which gets the page's URL; the server is
    shut down and its socket closed when the block ends, however it ends."""
    server = make_server(session)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
