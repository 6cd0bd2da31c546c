"""ralph.failures.gist: a recorded failure said in one line, the line that explains it kept."""

from __future__ import annotations

from ralph.failures import gist

PYTEST = """`make verify` exited 2:
...
    def test_login():
>       assert render_form() == "<form>"
E       AssertionError: assert '' == '<form>'
tests/test_login.py:4: AssertionError
(full output: build/ralph-logs/g.log)"""


def test_a_gate_failure_is_what_failed_and_its_first_error():
    assert gist(PYTEST) == "`make verify` exited 2: E AssertionError: assert '' == '<form>'"


def test_without_an_error_line_a_heading_takes_the_last_line_and_a_sentence_stands_alone():
    assert gist("`make verify` exited 2:\nstep 1\n3 checks did not pass\n(full output: g.log)") == (
        "`make verify` exited 2: 3 checks did not pass"
    )
    # the agent's own last words explain nothing
    assert gist('the agent ended (exit 3) without running `ralph task done`.\n{"type": "result"}') == (
        "the agent ended (exit 3) without running `ralph task done`."
    )


def test_a_long_command_is_shortened_in_its_middle_before_the_error_is_cut():
    command = "`/home/me/project/.venv/bin/python -m pytest -p no:cacheprovider -q tests/unit` exited 1:"
    said = gist(f"{command}\nE   assert 0 == 4", 80)
    assert len(said) <= 80 and said.endswith("` exited 1: E assert 0 == 4") and "..." in said
    assert said.startswith("`/home/me/project/")
    assert gist("") == "" and gist("\n\n(full output: g.log)") == ""
