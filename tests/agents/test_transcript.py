"""The readable transcript beside each agent log, made from the adapters' events, for the
recorded streams of all four CLIs and for a plain-text `command` agent."""

from __future__ import annotations

from pathlib import Path

import pytest

from ralph.agents import make_adapter
from ralph.agents.transcript import Transcript, last_actions, transcript_path

STREAMS = Path(__file__).parents[1] / "data" / "streams"


def transcribe(tmp_path: Path, name: str, lines: list[str]) -> str:
    adapter = make_adapter(name, ["agent"] if name == "command" else None)
    path = transcript_path(tmp_path / "ralph-1-build-t-abc123.log")
    transcript = Transcript(path, "BUILD t-abc123")
    for line in lines:
        transcript.add(line, adapter.parse_line(line))
    transcript.close()
    return path.read_text()


# Each recorded stream: what the model wrote, its tool call (name and short arguments) and the
# call's result, as the transcript must show them.
CALL = "-> Bash: ralph task done t-abc123"
DONE = "   | done t-abc123: Add login"
CASES = [
    ("claude", "claude.jsonl", "Looking at the task.", CALL, DONE),
    ("command", "claude.jsonl", "Looking at the task.", CALL, DONE),
    ("codex", "codex.jsonl", "Marked the task done.", "-> shell: bash -lc 'ralph task done t-abc123'", DONE),
    (
        "opencode",
        "opencode-real.jsonl",
        "Done.",
        "-> bash: ralph task done t-fh533y",
        "   | done t-fh533y: Parse input",
    ),
    (
        "gemini",
        "gemini-real.jsonl",
        "Done.",
        "-> run_shell_command: ralph task done t-xwpzcv",
        "   | done t-xwpzcv: Parse input",
    ),
]


@pytest.mark.parametrize(("name", "stream", "text", "call", "result"), CASES)
def test_each_cli_stream_reads_as_text_tool_calls_and_results(tmp_path, name, stream, text, call, result):
    shown = transcribe(tmp_path, name, (STREAMS / stream).read_text().splitlines())
    lines = shown.splitlines()
    assert lines[0] == "# BUILD t-abc123" and text in lines and call in lines
    assert lines[lines.index(call) + 1] == result  # the result right below its call
    assert '{"type"' not in shown  # no raw JSON
    assert shown.count("[session ") == 1  # opencode repeats its session on every line


def test_a_failed_run_says_why(tmp_path):
    shown = transcribe(tmp_path, "codex", (STREAMS / "codex-failed.jsonl").read_text().splitlines())
    assert "! error:" in shown and "= ERROR: turn.failed" in shown


def test_plain_text_agents_are_kept_as_written_and_long_results_trimmed(tmp_path):
    long_output = "\n".join(f"line {n}" for n in range(50))
    import json

    call = {
        "type": "assistant",
        "message": {"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": "a.py"}}]},
    }
    result = {
        "type": "user",
        "message": {"content": [{"type": "tool_result", "content": [{"type": "text", "text": long_output}]}]},
    }
    shown = transcribe(
        tmp_path,
        "command",
        ["building t-abc123", json.dumps(call), json.dumps(result), '{"type": "unknown"}'],
    )
    lines = shown.splitlines()
    assert lines[1] == "building t-abc123" and "-> Read: a.py" in lines
    assert "   | line 5" in lines and "   | line 6" not in lines and "   | ... (44 more lines)" in lines
    assert "unknown" not in shown  # a JSON event no adapter reads is not noise in the transcript
    assert last_actions(transcript_path(tmp_path / "ralph-1-build-t-abc123.log"), 2) == [
        "building t-abc123",
        "-> Read: a.py",
    ]
