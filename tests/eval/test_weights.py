"""Weights cache: env var, import with verification, recorded hashes, offline download errors."""
from __future__ import annotations

import urllib.error

import pytest

from devil_dataset.errors import DevilError, WeightsMissingError
from devil_dataset.eval import weights as W


@pytest.fixture
def weights_cache(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("DEVIL_WEIGHTS_DIR", str(cache))
    return cache


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


def test_missing_weights_error_names_file_and_commands(weights_cache):
    assert not W.available("inception")
    with pytest.raises(WeightsMissingError) as info:
        W.weights_path("inception")
    msg = str(info.value)
    assert "pt_inception-2015-12-05-6726825d.pth" in msg
    assert "devil weights import PATH" in msg and "devil weights download inception" in msg
    assert str(weights_cache) in msg


def test_import_unhashed_file_records_hash(weights_cache, tmp_path):
    src = tmp_path / "rgb_imagenet.pt"
    src.write_bytes(b"i3d weights")
    dst = W.import_weights(src)
    assert dst == weights_cache / "rgb_imagenet.pt" and dst.read_bytes() == b"i3d weights"
    assert W.available("i3d") and W.weights_path("i3d") == dst
    info = W.weights_info("i3d")
    assert info["sha256"] == W.file_sha256(src) and info["verified"] == "recorded"
    dst.write_bytes(b"tampered")  # a changed file no longer matches the recorded hash
    assert W.weights_info("i3d")["verified"] == "mismatch"


def test_import_rejects_wrong_hash_prefix(weights_cache, tmp_path):
    src = tmp_path / "alexnet-owt-7be5be79.pth"
    src.write_bytes(b"not alexnet")
    with pytest.raises(DevilError, match="does not start with 7be5be79"):
        W.import_weights(src)
    assert not W.available("alexnet")
    assert not any(weights_cache.glob("*.pth")) if weights_cache.exists() else True


def test_import_needs_a_name_for_unknown_files(weights_cache, tmp_path):
    src = tmp_path / "mystery.bin"
    src.write_bytes(b"???")
    with pytest.raises(DevilError, match="--name"):
        W.import_weights(src)
    assert W.import_weights(src, name="i3d").name == "rgb_imagenet.pt"
    with pytest.raises(DevilError, match="unknown weights name"):
        W.import_weights(src, name="vgg")


def test_download_offline_raises_missing_with_import_command(weights_cache, monkeypatch):
    def offline(url, dst, progress):
        raise urllib.error.URLError("network is unreachable")

    monkeypatch.setattr(W, "_fetch", offline)
    with pytest.raises(WeightsMissingError, match=r"rgb_imagenet\.pt: could not be downloaded.*devil weights import PATH"):
        W.download("i3d")
    assert not W.available("i3d")
    assert not list(weights_cache.glob(".tmp-*")) if weights_cache.exists() else True


def test_download_verifies_and_records(weights_cache, monkeypatch):
    fetched = []

    def fake(url, dst, progress):
        fetched.append(url)
        dst.write_bytes(b"payload")

    monkeypatch.setattr(W, "_fetch", fake)
    path = W.download("i3d")
    assert path.read_bytes() == b"payload" and fetched == [W.KNOWN_WEIGHTS["i3d"].url]
    assert W.weights_info("i3d")["verified"] == "recorded"
    W.download("i3d")  # cached: no second fetch
    assert len(fetched) == 1
    with pytest.raises(DevilError, match="does not start with ff5fadd5"):
        W.download("raft")  # the fake payload cannot match the hash prefix in the file name
    assert not W.available("raft")


def test_check_sha256_modes():
    assert W.check_sha256("raft", "ff5fadd5" + "1" * 56) == "prefix"
    assert W.check_sha256("i3d", "0" * 64) == "unknown"
    with pytest.raises(DevilError):
        W.check_sha256("inception", "0" * 64)
