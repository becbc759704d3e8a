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
