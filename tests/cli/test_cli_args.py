"""Options shared by several commands come from one adder in cli/_args.py: the same flags, help and defaults."""
from __future__ import annotations

import argparse

import pytest


def _parsers() -> dict[str, argparse.ArgumentParser]:
    from devil_dataset.cli import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def _action(parser: argparse.ArgumentParser, flag: str) -> argparse.Action:
    return next(a for a in parser._actions if flag in a.option_strings)


def _same(a: argparse.Action, b: argparse.Action) -> bool:
    return all(getattr(a, k) == getattr(b, k) for k in ("dest", "default", "type", "choices", "nargs", "const",
                                                         "metavar", "help"))


def test_external_method_options_are_shared_by_inpaint_and_benchmark():
    p = _parsers()
    for flag in ("--hole-pixels", "--timeout"):
        assert _same(_action(p["inpaint"], flag), _action(p["benchmark"], flag)), flag
    inpaint, bench = _action(p["inpaint"], "--size-divisor"), _action(p["benchmark"], "--size-divisor")
    assert (inpaint.type, inpaint.default, inpaint.metavar) == (bench.type, bench.default, bench.metavar)
    assert bench.help == "external methods: " + inpaint.help  # benchmark pads external methods only
    args = p["inpaint"].parse_args(["--method", "telea", "--out", "o", "--size-divisor", "8", "--timeout", "5"])
    assert (args.size_divisor, args.hole_pixels, args.timeout) == (8, "zero", 5)
    with pytest.raises(SystemExit):
        p["benchmark"].parse_args(["--dataset", "org/devil", "--out", "o", "--hole-pixels", "white"])


def test_ci_option_is_the_same_on_report_demo_and_benchmark():
    p = _parsers()
    report = _action(p["report"], "--ci")
    for command in ("demo", "benchmark"):
        assert _same(_action(p[command], "--ci"), report), command
    assert p["benchmark"].parse_args(["--dataset", "org/devil", "--out", "o", "--ci"]).ci == "interval"
    assert p["demo"].parse_args(["--out", "o", "--ci", "se"]).ci == "se"


def test_set_level_ci_option_states_its_measured_cost(capsys):
    from devil_dataset.cli._args import SET_LEVEL_CI_COST

    p = _parsers()
    first = _action(p["evaluate"], "--set-level-ci")
    assert first.default is False and SET_LEVEL_CI_COST in first.help and "AMD EPYC" in first.help
    for command in ("benchmark", "demo"):
        assert _same(_action(p[command], "--set-level-ci"), first), command
    assert "MiB" in SET_LEVEL_CI_COST and "CPU s" in SET_LEVEL_CI_COST
    assert p["demo"].parse_args(["--out", "o", "--set-level-ci"]).set_level_ci is True


def test_evaluate_and_demo_pass_set_level_ci_on(monkeypatch, tmp_path):
    """The flag becomes EvalOptions(set_level_ci=True) (evaluate) and run_demo(set_level_ci=True) (demo)."""
    import devil_dataset.demo as demo_module
    import devil_dataset.eval.protocols.devil.run as evaluate_module
    from devil_dataset.cli import main

    seen: dict = {}

    def fake_directory(gt_dir, pred_dir, metrics, options, **kwargs):
        seen["options"] = options
        return {"method": "m", "slice": None, "num_videos": 0, "summary": {}, "clipped": {}}

    monkeypatch.setattr(evaluate_module, "evaluate_directory", fake_directory)
    assert main(["evaluate", "--gt-dir", str(tmp_path), "--pred-dir", str(tmp_path), "--set-level-ci"]) == 0
    assert seen["options"].set_level_ci is True
    assert main(["evaluate", "--gt-dir", str(tmp_path), "--pred-dir", str(tmp_path)]) == 0
    assert seen["options"].set_level_ci is False

    class _Result:
        results_files = {("m", "s"): tmp_path}

    def fake_demo(out, **kwargs):
        seen["demo"] = kwargs
        return _Result()

    monkeypatch.setattr(demo_module, "run_demo", fake_demo)
    assert main(["demo", "--out", str(tmp_path / "d"), "--set-level-ci", "--ci", "se"]) == 0
    assert (seen["demo"]["set_level_ci"], seen["demo"]["ci"]) == (True, "se")
