"""benchmarks/release_metrics.py without the release: it says how to get it instead of failing obscurely."""
from __future__ import annotations

from .conftest import load_benchmark

rm = load_benchmark("release_metrics")


def test_without_the_release_it_exits_2_with_the_clone_instructions(tmp_path, capsys):
    assert rm.main([]) == 2
    err = capsys.readouterr().err
    assert "--release-repo PATH is required" in err and "MichiganCOG/devil" in err and "95a7a1e" in err
    (tmp_path / "devil").mkdir()  # a checkout whose evaluation submodule was never initialised
    assert rm.main(["--release-repo", str(tmp_path / "devil")]) == 2
    err = capsys.readouterr().err
    assert str(tmp_path / "devil") in err and "git submodule update --init" in err
