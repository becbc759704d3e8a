"""A mistyped relative dataset path is not taken for a Hub repo id (no network call, "no such
folder", how to name a Hub dataset, exit 2); with the Hub offline an ORG/NAME that is not cached says so."""
from __future__ import annotations

import pytest

from devil_dataset.cli import main
from devil_dataset.core.errors import DevilError
from devil_dataset.data import load as load_module


@pytest.fixture
def no_hub(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the Hub was asked")

    monkeypatch.setattr(load_module, "fetch_slice", refuse)


@pytest.mark.parametrize("command", [
    ["evaluate", "--config", "all", "--predictions", "."],
    ["benchmark", "--method", "telea", "--out", "bench-out"],
    ["inpaint", "--config", "all", "--method", "telea", "--out", "inpaint-out"],
])
def test_mistyped_relative_path_exits_2_without_asking_the_hub(command, tmp_path, monkeypatch, capsys, no_hub):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "demo-out" / "dataset").mkdir(parents=True)
    assert main([command[0], "--dataset", "demo-out/datset", *command[1:]]) == 2
    err = capsys.readouterr().err
    assert "demo-out/datset: no such folder (demo-out/ exists, holding dataset; a typo?)" in err
    assert "a Hub dataset is named by its repo id ORG/NAME" in err


def test_offline_hub_says_no_such_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    with pytest.raises(DevilError, match="your-org/devil: no such folder, and the Hub is offline"):
        load_module.local_dataset_dir("your-org/devil", "all")
