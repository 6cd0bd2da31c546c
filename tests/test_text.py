"""ralph.text: how text from users, agents and files is shown."""

from __future__ import annotations

import json

from ralph.text import json_text, printable, shown_path, terminal_text


def test_printable_escapes_control_characters_and_keeps_the_rest():
    assert printable("plain café") == "plain café"
    assert printable("two\nlines\t\x1b[2J") == "two\\nlines\\t\\x1b[2J"


def test_terminal_text_keeps_lines_and_tabs_and_escapes_every_other_control():
    said = "a title\x1b]0;pwned\x07\tcleared\x1b[2J\r\nclipboard\x1b]52;c;eA==\x07 csi\x9b31m del\x7f"
    shown = (
        "a title\\x1b]0;pwned\\x07\tcleared\\x1b[2J\\r\nclipboard\\x1b]52;c;eA==\\x07 csi\\x9b31m del\\x7f"
    )
    assert terminal_text(said) == shown
    assert terminal_text("plain café\n") == "plain café\n"


def test_a_path_that_is_not_utf8_shows_its_bytes_as_escapes():
    named_by_git = b"caf\xe9/na\xefve.txt".decode("utf-8", "surrogateescape")
    assert shown_path(named_by_git) == "caf\\xe9/na\\xefve.txt"
    assert shown_path("café.txt") == "café.txt"  # UTF-8 stays as it is


def test_json_text_keeps_non_ascii_and_escapes_only_what_utf8_cannot_carry():
    assert json_text({"name": "café"}) == '{"name": "café"}'
    lone = {"files": [b"caf\xe9".decode("utf-8", "surrogateescape")]}
    text = json_text(lone)
    text.encode("utf-8")  # writable as UTF-8
    assert json.loads(text) == lone


def test_joined_lines_makes_one_line_of_several_without_blank_ones():
    from ralph.text import joined_lines

    assert (
        joined_lines("the total is missing\n\n  see report.txt  \n")
        == "the total is missing | see report.txt"
    )
    assert joined_lines("one line") == "one line" and joined_lines("") == ""
