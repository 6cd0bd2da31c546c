"""`present`: a value a test knows is there, out of an Optional (None fails the test there)."""

from __future__ import annotations

from typing import TypeVar

T = TypeVar("T")


def present(value: T | None) -> T:
    assert value is not None, "expected a value, got None"
    return value
