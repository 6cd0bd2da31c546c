"""DECOMPOSE's own pieces; the stage through the real loop is in test_construct.py and
test_stage_runs.py."""

from __future__ import annotations

from pathlib import Path


def test_kill_log_sample_reads_only_head_and_tail(tmp_path):
    from ralph.loop.stage_decompose import log_sample

    log = tmp_path / "big.log"
    log.write_text("".join(f"line {n}\n" for n in range(100_000)))
    head, tail = log_sample(log)
    assert head.splitlines()[0] == "line 0" and len(head.splitlines()) == 50
    assert tail.splitlines()[-1] == "line 99999" and len(tail.splitlines()) == 100
    assert log_sample(Path(tmp_path / "missing.log")) == ("(no log)", "(no log)")
