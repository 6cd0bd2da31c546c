"""Which review aspects run and with what text (ralph/loop/runs/aspects.py): ralph's five, the
repository's own files beside or over them, a list of names, none."""

from __future__ import annotations

from ralph.loop.runs.aspects import DEFAULT_ASPECTS, chosen


def _files(**texts: str):
    files = {f".ralph/review/{name}.md": text.encode() for name, text in texts.items()}
    files[".ralph/review/drafts/later.md"] = b"a file in a folder of its own: no aspect"
    return (lambda: sorted(files)), files.get


def test_true_runs_ralph_s_five_and_the_repository_s_own_a_file_replacing_ralph_s_text():
    listed, read = _files(docs="our docs rules", licences="every file has the header")

    found, problems = chosen(True, listed, read)

    assert [a.name for a in found] == [*DEFAULT_ASPECTS, "licences"] and problems == []
    by_name = {a.name: a for a in found}
    assert by_name["docs"].text == "our docs rules" and by_name["docs"].source == ".ralph/review/docs.md"
    assert by_name["goal"].source == "ralph" and "spec" in by_name["goal"].text


def test_false_runs_none_and_a_list_runs_those_named_an_unknown_one_said_in_one_line():
    listed, read = _files(licences="header")

    assert chosen(False, listed, read) == ([], [])
    found, problems = chosen(("licences", "tests", "nosuch", "../etc"), listed, read)

    assert [a.name for a in found] == ["licences", "tests"]
    assert problems == [
        "review aspect 'nosuch': no .ralph/review/nosuch.md and none of ralph's",
        "review aspect '../etc': no .ralph/review/../etc.md and none of ralph's",
    ]
