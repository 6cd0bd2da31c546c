"""Secrets planted in a construct run (the run's environment, a .env file, agents' output, a gate's
output, a reject reason, a note, an issue, a question) reach none of what ralph keeps or shows: git
history (every object), the journal, the console, hook payloads, `ralph log`, the HTML report and
the agents' transcripts. The agents are tests/loop/fake_agent.py behind a script that leaks."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

from tests.support.construct import FAKE_AGENT, add_tasks, construct, in_process
from tests.support.gitrepo import git
from tests.support.hooks import APPEND, config_set, script

ENV_TOKEN = "envtok-4c1f9a7e2b3d"  # DEPLOY_TOKEN: only its name says it is a secret
ENV_DSN_PASSWORD = "dsnpass-61QvXk"  # inside ORDERS_DSN
DOTENV_PASSWORD = "dotenv-Pa55-word-771"  # DB_PASSWORD in .env
DOTENV_VALUE = "zq9XvB27mKpL44nRtY"  # APP_CONFIG in .env: only the file says it is a secret
URL_PASSWORD = "urlpass-Xq7Rz2"
GITHUB_TOKEN = "ghp_" + "k3Jd9sLq2Wm8Xn4Rb7Tc1Vy6Zp0Ha5Ge3Uf"
STRIPE_KEY = "sk_live_" + "51HqLmN8oPq2RsT4uVw6XyZ0"
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJyYWxwaC10ZXN0In0.Qm9HZ3VzU2lnbmF0dXJlVmFsdWU5OTk"
LONG_TOKEN = "hf_" + "Aq1Bw2Ce3Dr4Ft5Gy6Hu7Ji8Ko9Lp0ZxCvBnMaSdFgHjKlQwErTyUiOpZx"  # cut across by the excerpt
SECRETS = {
    "environment token": ENV_TOKEN,
    "environment DSN password": ENV_DSN_PASSWORD,
    ".env password": DOTENV_PASSWORD,
    ".env value": DOTENV_VALUE,
    "URL password": URL_PASSWORD,
    "GitHub token": GITHUB_TOKEN,
    "Stripe key": STRIPE_KEY,
    "JWT": JWT,
    "long token": LONG_TOKEN,
}
# The last characters of each: what an excerpt cut before redaction would keep of a secret.
TAILS = {f"{what} (tail)": secret[-12:] for what, secret in SECRETS.items()}

# Before each run of the fake agent: BUILD of a [leak-build] task prints the environment's and the
# .env file's secrets and a password URL, then fails (1st attempt: half its work, no `task done`;
# 2nd: work the gate prints with a long token where the excerpt is cut); VERIFY of a [leak-verify]
# task rejects it once quoting a token and a Stripe key, adding a task with a JWT in its notes;
# BUILD of a [leak-ask] task adds an issue and asks a question, both with the JWT.
LEAKY_AGENT = """import json, os, pathlib, sys
sys.path.insert(0, os.environ["AGENT_KIT_DIR"])
from agent_kit import ralph
state = pathlib.Path(os.environ["FAKE_AGENT_STATE"])
state.mkdir(parents=True, exist_ok=True)
stage, task_id = os.environ["RALPH_STAGE"], os.environ.get("RALPH_TASK_ID")
name = json.loads(ralph("task", "show", task_id))["name"] if task_id else ""
def count(what):
    path = state / ("leaky-" + what)
    n = int(path.read_text()) + 1 if path.exists() else 1
    path.write_text(str(n))
    return n
if stage == "BUILD" and "[leak-build]" in name:
    attempt = count("build-" + task_id)
    if attempt == 1:  # part of the work first: a failed attempt, not an agent that did nothing
        pathlib.Path("work").mkdir(exist_ok=True)
        pathlib.Path("work", task_id + ".txt").write_text("ok, half of it\\n")
        print("connecting to https://deploy:__URL_PASSWORD__@git.example.com/app.git", flush=True)
        print("DEPLOY_TOKEN is", os.environ["DEPLOY_TOKEN"], "DSN", os.environ["ORDERS_DSN"], flush=True)
        print("the database password is __DOTENV_PASSWORD__; app config:", "__DOTENV_VALUE__", flush=True)
        sys.exit(1)
    if attempt == 2:
        pathlib.Path("work").mkdir(exist_ok=True)
        filler = "".join(f"filler line {n:02d} " + "." * 58 + "\\n" for n in range(20))  # 20 x 74 chars
        pathlib.Path("work", task_id + ".txt").write_text("FAIL\\nkey __LONG_TOKEN__\\n" + filler)
        ralph("task", "done")
        sys.exit(0)
if stage == "VERIFY" and "[leak-verify]" in name and count("verify-" + task_id) == 1:
    ralph("task", "reject", "the login leaks __GITHUB_TOKEN__ and __STRIPE_KEY__ into its page")
    ralph("task", "add", json.dumps({"name": "Rotate the keys", "notes": "the session was __JWT__"}))
    sys.exit(0)
if stage == "BUILD" and "[leak-ask]" in name:
    ralph("issue", "add", "the API answers with __JWT__ in its error")
    ralph("ask", "Is __JWT__ the staging token?")
    sys.exit(0)
import runpy  # the fake agent in this process: no second Python start-up
runpy.run_path(__FAKE__, run_name="__main__")
"""
# Prints each failing work file whole (the fake agent's gate prints only their names).
LEAKY_GATE = """import pathlib, sys
bad = [p for p in pathlib.Path("work").glob("*.txt") if p.read_text().startswith("FAIL")]
for path in bad:
    print(path.read_text(), end="")
sys.exit(1 if bad else 0)
"""


def leaky_agent(tmp_path: Path) -> str:
    code = LEAKY_AGENT.replace("__FAKE__", repr(str(FAKE_AGENT)))
    for name, value in {
        "__URL_PASSWORD__": URL_PASSWORD,
        "__DOTENV_VALUE__": DOTENV_VALUE,
        "__DOTENV_PASSWORD__": DOTENV_PASSWORD,
        "__LONG_TOKEN__": LONG_TOKEN,
        "__GITHUB_TOKEN__": GITHUB_TOKEN,
        "__STRIPE_KEY__": STRIPE_KEY,
        "__JWT__": JWT,
    }.items():
        code = code.replace(name, value)
    return f"{shlex.quote(sys.executable)} {shlex.quote(script(tmp_path, 'leaky_agent.py', code))}"


def count_each(text: str) -> dict[str, int]:
    return {what: text.count(secret) for what, secret in {**SECRETS, **TAILS}.items()}


def everything_in_git(root: Path) -> str:
    """`git log -p --all` and every object in the repository, reachable or not."""
    objects = subprocess.run(
        ["git", "cat-file", "--batch-all-objects", "--batch"], cwd=root, capture_output=True, check=True
    ).stdout
    return git(root, "log", "-p", "--all") + objects.decode("utf-8", "replace")


def test_no_planted_secret_reaches_history_journal_console_hooks_log_or_report(project, tmp_path):  # noqa: F811
    (project / ".gitignore").write_text((project / ".gitignore").read_text() + ".env\n")
    dotenv = f"DB_PASSWORD={DOTENV_PASSWORD}\nAPP_CONFIG={DOTENV_VALUE}\nNODE_ENV=production\n"
    (project / ".env").write_text(dotenv)
    (project / "leaky_gate.py").write_text(LEAKY_GATE)
    git(project, "add", ".gitignore", "leaky_gate.py")
    git(project, "commit", "-qm", "a gate that prints failing work whole")
    received = tmp_path / "hook-payloads.jsonl"
    hook = [sys.executable, script(tmp_path, "append.py", APPEND), str(received)]
    config_set(project, "hooks", {"any": hook})
    add_tasks(project, "Alpha [leak-build]", "Beta [leak-verify]", "Gamma [leak-ask]")
    env = {"DEPLOY_TOKEN": ENV_TOKEN, "ORDERS_DSN": f"mysql://orders:{ENV_DSN_PASSWORD}@orders.db/orders"}
    gate = f"{shlex.quote(sys.executable)} leaky_gate.py"
    flags = ("--max-attempts", "3", "--gate", gate, "--parallel", "1")  # every failure counted: serial
    done = construct(project, *flags, agent=leaky_agent(tmp_path), env=env)
    assert done.returncode == 9, done.stdout + done.stderr  # WAITING: Gamma's question is not answered

    logs = project / "build" / "ralph-logs"
    history = everything_in_git(project)
    # The secrets did go through the run: the failures, the rejection, the note, issue and question.
    assert "Rotate the keys" in history and "staging token?" in history and "attempt 2 failed" in history
    log_run = in_process(["-C", str(project), "log"], dict(os.environ))
    log_json = in_process(["-C", str(project), "log", "--json"], dict(os.environ))
    assert len([json.loads(line) for line in log_json.stdout.splitlines()]) > 10  # still JSON, line by line
    report = tmp_path / "report.html"
    assert in_process(["-C", str(project), "report", "-o", str(report)], dict(os.environ)).returncode == 0
    places = {
        "git history": history,
        "events.jsonl": (logs / "events.jsonl").read_text(),
        "console": done.stdout + done.stderr,
        "hook payloads": received.read_text(),
        "ralph log": log_run.stdout + log_run.stderr + log_json.stdout,
        "ralph report": report.read_text(),
        "transcripts": "".join(path.read_text() for path in logs.glob("*.transcript.md")),
    }
    found = {place: {what: n for what, n in count_each(text).items() if n} for place, text in places.items()}
    assert found == {place: {} for place in places}, "\n".join(f"{place}: {n}" for place, n in found.items())
    # The raw logs are the agents' own output streams, git-ignored, kept whole (docs/agent-contract.md).
    raw = "".join(path.read_text() for path in logs.glob("*-build-*.log"))
    assert ENV_TOKEN in raw and DOTENV_VALUE in raw
