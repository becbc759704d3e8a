"""``devil weights list|download|import``."""
from __future__ import annotations

import urllib.error

import pytest

from devil_dataset.cli import main
from devil_dataset.core import weights as W
from devil_dataset.core.atomic import file_sha256


@pytest.fixture
def cli_weights_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DEVIL_WEIGHTS_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_list_shows_every_known_file(cli_weights_cache, capsys):
    assert main(["weights", "list"]) == 0
    out = capsys.readouterr().out
    assert f"cache: {cli_weights_cache}" in out
    for e in W.KNOWN_WEIGHTS.values():
        assert e.filename in out and e.url in out
    assert out.count("missing") == 4


def test_import_then_list_with_hash(cli_weights_cache, tmp_path, capsys, monkeypatch):
    import torch

    monkeypatch.setitem(W.KNOWN_WEIGHTS, "toy", W.WeightsEntry("toy", "toy.pt", "http://127.0.0.1/toy.pt", None, None,
                                                               "tests", "a test entry"))
    src = tmp_path / "toy.pt"
    torch.save({"w": torch.ones(2)}, src)
    assert main(["weights", "import", str(src)]) == 0
    assert "toy:" in capsys.readouterr().out
    assert main(["weights", "list", "--hash"]) == 0
    out = capsys.readouterr().out
    assert "cached" in out and file_sha256(src) in out and "(recorded)" in out


def test_import_malicious_pickle_as_i3d_exits_2_and_runs_nothing(cli_weights_cache, tmp_path, capsys):
    import pickle

    marker = tmp_path / "PWNED"
    src = tmp_path / "rgb_imagenet.pt"
    src.write_bytes(pickle.dumps({"w": _Payload(marker)}, protocol=2))
    assert main(["weights", "import", str(src)]) == 2
    assert "git blob id" in capsys.readouterr().err
    assert not marker.exists() and not W.available("i3d")


class _Payload:
    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def test_import_bad_file_exits_2(cli_weights_cache, tmp_path, capsys):
    src = tmp_path / "pt_inception-2015-12-05-6726825d.pth"
    src.write_bytes(b"not inception")
    assert main(["weights", "import", str(src)]) == 2
    assert "does not start with 6726825d" in capsys.readouterr().err


def test_download_offline_exits_2_naming_import(cli_weights_cache, monkeypatch, capsys):
    def offline(url, dst, progress):
        raise urllib.error.URLError("offline")

    monkeypatch.setattr(W, "_fetch", offline)
    assert main(["weights", "download", "raft"]) == 2
    err = capsys.readouterr().err
    assert "raft_large_C_T_SKHT_V2-ff5fadd5.pth" in err and "devil weights import PATH" in err


def test_unknown_name_and_missing_path(cli_weights_cache, capsys):
    assert main(["weights", "download", "vgg"]) == 2
    assert "unknown weights name" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["weights", "import", "/nonexistent/file.pt"])
    assert exc.value.code == 2
