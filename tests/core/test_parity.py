"""The one parity switch: a mode left at None takes parity's value, an explicit mode wins, unknown names are named."""
from __future__ import annotations

import pytest

from devil_dataset.core.errors import DevilError, UnknownNameError
from devil_dataset.core.parity import PARITIES, mode_choices, resolve_modes

TABLE = {"release": {"a_mode": "release", "b_mode": "wrap"}, "corrected": {"a_mode": "standard", "b_mode": "true"}}


@pytest.mark.parametrize("parity, given, resolved", [
    ("release", {"a_mode": None, "b_mode": None}, {"a_mode": "release", "b_mode": "wrap"}),
    ("corrected", {"a_mode": None, "b_mode": None}, {"a_mode": "standard", "b_mode": "true"}),
    ("corrected", {"a_mode": "release", "b_mode": None}, {"a_mode": "release", "b_mode": "true"}),
    ("release", {"b_mode": "true"}, {"b_mode": "true"}),
])
def test_none_takes_the_parity_value_and_an_explicit_mode_wins(parity, given, resolved):
    assert resolve_modes(parity, given, TABLE) == resolved


def test_mode_choices_follow_the_parities():
    assert PARITIES == ("release", "corrected")
    assert mode_choices(TABLE, "a_mode") == ("release", "standard")
    assert mode_choices({"release": {"m": "x"}, "corrected": {"m": "x"}}, "m") == ("x",)


def test_unknown_parity_and_mode_are_devil_errors_naming_the_field():
    with pytest.raises(UnknownNameError, match="^parity: unknown parity 'Release'; valid: release, corrected$"):
        resolve_modes("Release", {"a_mode": None}, TABLE)
    with pytest.raises(DevilError, match="^b_mode: unknown b mode 'standard'; valid: wrap, true"):
        resolve_modes("release", {"b_mode": "standard"}, TABLE)
