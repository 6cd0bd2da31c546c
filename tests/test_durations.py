"""Durations as people write them: milliseconds, or a number with a unit; anything else is refused."""

from __future__ import annotations

import pytest

from ralph.durations import parse_duration, spoken
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


@pytest.mark.parametrize(
    ("seconds", "said"),
    [(-3, "0s"), (45, "45s"), (119, "119s"), (720, "12 min"), (3 * 3600, "3 h"), (4 * 86400, "4 days")],
)
def test_an_age_is_spoken_in_the_largest_whole_unit_that_reads_well(seconds, said):
    assert spoken(seconds) == said
