"""How a commit subject names the records a command changed: one by its id and name on one short
line, several by their count and first ids."""

from __future__ import annotations

from ralph.usecases.names import SUBJECT_TEXT, named


def test_one_record_is_named_by_its_id_and_its_name_on_one_line():
    assert named([{"id": "t-abc123", "name": "Parse\n  the   input"}]) == "t-abc123 Parse the input"
    assert named([{"id": "i-def456", "text": "The build breaks"}], key="text") == "i-def456 The build breaks"
    assert named([{"id": "t-abc123"}]) == "t-abc123"  # no name: no trailing space


def test_a_long_name_is_cut_so_the_subject_stays_one_screen_line():
    subject = named([{"id": "t-abc123", "name": "word " * 40}])
    name = subject.removeprefix("t-abc123 ")
    assert len(name) == SUBJECT_TEXT and name.endswith("...")
    assert name[:-3] == ("word " * 40)[: SUBJECT_TEXT - 3]


def test_several_records_are_counted_and_at_most_eight_ids_listed():
    records = [{"id": f"t-{n:06d}", "name": "x"} for n in range(3)]
    assert named(records) == "3 (t-000000, t-000001, t-000002)"
    many = [{"id": f"t-{n:06d}"} for n in range(10)]
    assert named(many) == "10 (" + ", ".join(f"t-{n:06d}" for n in range(8)) + ", ...)"
