"""A scripted drafting agent for `ralph spec draft` tests, as $DRAFT_AGENT says:

- "ask" (default): the demo agent's draft (it asks once, then drafts with the answer), and the demo
  agent in every stage of the loop;
- "escape": a draft whose title holds terminal escape sequences;
- "unchecked": a draft whose one requirement says no way to verify it (what `ralph spec check` refuses);
- "file": writes a code file beside its draft (what a fenced run cannot);
- "task": adds a task to the plan beside its draft;
- "link": leaves a link to a file outside the draft in the draft's place;
- "nothing": ends without a draft or a question;
- "hang": asks a question, starts a child, writes both pids to $DRAFT_PIDS, and waits to be stopped."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

RESULT = {
    "type": "result",
    "subtype": "success",
    "is_error": False,
    "usage": {"input_tokens": 1, "output_tokens": 1},
}


def main() -> int:
    mode = os.environ.get("DRAFT_AGENT", "ask")
    if mode == "ask" or os.environ["RALPH_STAGE"] != "DRAFT":  # the loop's stages: the demo agent's
        from ralph.demo.agent import main as demo

        return demo()
    draft = Path(os.environ["RALPH_DRAFT_FILE"])
    if mode == "escape":
        draft.write_text("# Title \x1b]0;owned\x07 \x1b[2J\n\n## Goal\n\nG.\n", encoding="utf-8")
    elif mode == "unchecked":
        draft.write_text("# Farewell\n\n## Requirements\n\n- [ ] farewell() says goodbye\n", encoding="utf-8")
    elif mode == "file":
        draft.write_text("# A spec\n", encoding="utf-8")
        Path("code.py").write_text("print('built before approval')\n", encoding="utf-8")
    elif mode == "task":
        import shlex
        import subprocess

        draft.write_text("# A spec\n", encoding="utf-8")
        command = [*shlex.split(os.environ["RALPH_BIN"]), "task", "add", json.dumps({"name": "Build it now"})]
        subprocess.run(command, check=True, capture_output=True)
    elif mode == "hang":
        import shlex
        import subprocess
        import time

        subprocess.run(
            [*shlex.split(os.environ["RALPH_BIN"]), "ask", "Which one?"], check=True, capture_output=True
        )
        child = subprocess.Popen(["sleep", "600"])
        Path(os.environ["DRAFT_PIDS"]).write_text(f"{os.getpid()} {child.pid}\n")
        time.sleep(600)
    elif mode == "link":
        draft.symlink_to(Path(os.environ["RALPH_ROOT"]) / "secret.txt")
    print(json.dumps(RESULT), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
