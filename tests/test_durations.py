"""Durations as people write them: milliseconds, or a number with a unit; anything else is refused."""

from __future__ import annotations

import pytest

from ralph.durations import parse_duration
from ralph.errors import InvalidInput


@pytest.mark.parametrize(
    ("text", "seconds"), [("300000", 300), ("90s", 90), ("5m", 300), ("1.5h", 5400), ("250ms", 0.25)]
)
def test_durations_take_the_specs_milliseconds_or_a_unit(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "0", "-5s", "5 minutes", "s"])
def test_bad_durations_are_refused(text):
    with pytest.raises(InvalidInput, match="invalid duration"):
        parse_duration(text)
