"""The `devil` entry point: every subcommand has --help with an example; bad input exits 2."""
import argparse

import pytest

from devil_dataset.cli import build_parser, main


def _subcommands(parser):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            yield from action.choices.items()


def test_every_command_has_help_with_example():
    parser = build_parser()
    commands = dict(_subcommands(parser))
    assert commands, "no subcommand registered"
    for name, sub in commands.items():
        nested = dict(_subcommands(sub))
        for full, p in ([(name, sub)] if not nested else [(f"{name} {k}", v) for k, v in nested.items()]):
            text = p.format_help()
            assert "devil " in (p.epilog or ""), f"`devil {full}` --help has no example in its epilog"
            assert p.description or p.format_usage(), full
            assert "usage:" in text


def test_version_and_unknown_command(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    with pytest.raises(SystemExit) as exc:
        main(["no-such-command"])
    assert exc.value.code == 2


def test_help_texts_show_single_percent_signs():
    """argparse %-formats argument help but prints descriptions and epilogs as written: a "%%" there shows."""
    def walk(prefix, parser):
        yield prefix, parser
        for name, sub in _subcommands(parser):
            yield from walk(f"{prefix} {name}", sub)

    shown = {name: parser.format_help() for name, parser in walk("devil", build_parser())}
    assert len(shown) > 20
    assert [name for name, text in shown.items() if "%%" in text] == []
    assert "16% rank tails" in shown["devil label rank"]


@pytest.mark.parametrize("args, message", [
    (["inpaint", "--method", "telae", "--inputs", ".", "--out", "preds"],
     "--method: unknown method 'telae'; did you mean 'telea'?"),
    (["demo", "--out", "demo", "--methods", "aligned-cpy"], "--methods: unknown method 'aligned-cpy'; did you mean "
     "'aligned-copy'?"),
    (["demo", "--out", "demo", "--slices", "fg_motion_hi"], "did you mean 'fg_motion_high'"),
    (["masks", "render", "--preset", "fgs-h_fgm-l_fgd-x", "--out", "m"], "did you mean 'fgs-h_fgm-l_fgd-l'"),
])
def test_typos_in_names_get_did_you_mean(tmp_path, monkeypatch, capsys, args, message):
    monkeypatch.chdir(tmp_path)
    assert main(args) == 2
    assert message in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []  # refused before anything is written
