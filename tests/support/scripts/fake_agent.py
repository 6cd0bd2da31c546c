"""A scripted fake agent for the construct tests, run through the `command` adapter.

It acts per RALPH_STAGE by calling the real `ralph` commands. Markers in a task's name choose
misbehaviour:
  [gate-fails-once]    the first build writes work that fails the gate
  [gate-always-fails]  every build fails the gate (a doom loop)
  [fails-alike]        every build fails the gate the same way, but for its numbers, a hex id and a
                       temporary path (a gate that prints the work shows them)
  [hopeless]           the same, and DECOMPOSE's parts keep the marker: the failure survives a split
  [hang]               starts a grandchild, then never finishes (a timeout)
  [hang-once]          the same, on the first build only
  [work-then-hang-once] the first build writes its work file, then never finishes
  [daemon]             BUILD starts `setsid sleep 600` (a session of its own, holding the output
                       pipe, as `setsid cmd &` in a shell does), writes its pid to
                       <task>.daemon.pid and exits without waiting for it
  [verify-hang]        VERIFY starts a grandchild and sleeps 30 s, then writes
                       <task>.verify.finished (a test stops it long before)
  [record-env]         BUILD writes its RALPH_* variables to <task>.agent-env.json
  [reject-once]        the first VERIFY rejects it
  [reject-always]      every VERIFY rejects it, each time for another reason (the same twice
                       in a row would go to a person)
  [resubmit]           the first VERIFY rejects it; the rebuild resubmits it unchanged with an
                       argument (`task done --unchanged`), which the next VERIFY accepts only if
                       its prompt quotes the argument
  [lazy-rebuild]       the second build marks the task done without changing a file, the third
                       fails the gate
  [crash]              the first build is killed at once by a signal (SIGKILL, as the kernel's
                       OOM killer does), changing nothing (the agent failed)
  [crash-thrice]       the first three builds are
  [crash-always]       every build is, saying why on stderr first (a secret and an escape in it)
  [costly-crash-thrice] the first three builds report their usage (they spent), then are killed
                       changing nothing
  [usage-error]        every build exits 2 at once with a usage error on stderr, the same each time
  [quit-once]          the first build writes part of its work, then exits 3 without marking
                       the task done (the attempt failed)
  [no-changes-once]    the first build marks the task done without changing a file
  [ask]                BUILD asks a person a question (`ralph ask`) instead of building
  [corrupt-plan]       the first build breaks plan.jsonl by hand
  [slow-verify]        VERIFY takes 2 s
  [slow-build]         BUILD takes 2 s (it writes <task>.building first)
  [fails-without-t-task00] BUILD waits (up to 60 s) until t-task00's build has started, then
                       writes work that fails the gate while work/t-task00.txt is not in its tree
  [no-verdict]         VERIFY gives no verdict
  [context-grow]       reports a context growing past warn and compact; fine after compaction
  [context-explode]    reports a context past the kill threshold
  [context-stuck]      still above 80% right after compaction
  [context-warm]       several turns above warn but below compact, then a normal build
  [needs-t-task00]     BUILD exits 3, changing nothing, while work/t-task00.txt is missing
  [after-a-need]       BUILD starts only once a [needs-t-task00] build found that file missing
  [set-config-once]    the first build also sets the config's gate to `false`
  [verify-context-grow] VERIFY's context grows past compact; fine after compaction
  [slow-decompose]     DECOMPOSE takes 2 s
  [shared-file]        BUILD also writes its id to shared.txt; the first build waits (up to 60 s)
                       until every [shared-file] task of the state has started building, so that
                       two runners build them side by side
  [stray-once:PATH]    the first build also changes PATH (a line added); the later builds put
                       it back as HEAD has it (removed, if HEAD has none)
  [tests-only]         BUILD writes its work as a test file, tests/test_<task>.py, and no
                       work/<task>.txt (what a test task may change)
  [verify-adds-30]     VERIFY accepts it and adds 30 tasks ("Gap 1" .. "Gap 30"), then one named
                       like another task of the plan and one like "Gap 1" (duplicates)
An issue's text or the spec's with [slow] makes INVESTIGATE or PLAN take 2 s; an issue's text with
[out-of-scope] makes INVESTIGATE resolve it with a note and no task, one with [investigate-hang]
makes it add a task, then hang (a timeout).
The spec check (CHECK) adds a task for each spec line marked [missing] (which PLAN leaves out) that
no task, open or accepted, is named like; a spec line [check-hang] makes it hang (a timeout),
[check-crash] makes it add a task and exit 3, [check-slow] makes it take 2 s (<state>/check first).
A task's name with [rewrites:PATH] makes its builds write "the build's own review text" to PATH.
The review (REVIEW) finds nothing, but for a spec line [review-finds:ASPECT]: that aspect's first
round adds a task "Fix what the ASPECT review found"; [review-critical:ASPECT] has its second
round (critical findings only) add "Fix the ASPECT review's critical finding" as well. Each
reviewer copies its prompt to review-<aspect>-<round>.prompt. [review-crash:ASPECT] makes that
aspect's reviewer add a task, then exit 3, every time, [review-writes:ASPECT] makes it also append a line to
check_work.py in its checkout (which REVIEW may not; ralph's fence refuses it). [review-same] makes
every aspect's first round add a task of the same name.
Every BUILD run copies its prompt to <task>.build-<attempt>.prompt.
Counts per task (and of PLAN and INVESTIGATE runs) live in $FAKE_AGENT_STATE (outside the repository).
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path

from agent_kit import ralph  # this script's folder is on sys.path

# subprocess and signal are imported where a misbehaviour needs them: most runs never do, and their
# import was some 4 ms of each run's CPU (ralph's own commands import neither).

TOKENS_PER_RUN = 1000
OTHER_FLAWS = ("the totals are off", "the names come out unsorted", "the help text is missing")
RESUBMIT_ARGUMENT = "the work file already says ok, which is what the criteria ask"
STATE = Path(os.environ.get("FAKE_AGENT_STATE", "/tmp/fake-agent-state"))


def bump(name: str) -> int:
    """How many times `name` happened before, counting this one."""
    STATE.mkdir(parents=True, exist_ok=True)
    counter = STATE / name
    count = int(counter.read_text()) + 1 if counter.exists() else 1
    counter.write_text(str(count))
    return count


CONTEXT_SCHEDULES = {  # marker: (input tokens per turn, then after a compaction); window 200,000
    "[context-grow]": ([100_000, 150_000, 175_000], [20_000]),
    "[context-explode]": ([100_000, 195_000], [20_000]),
    "[context-stuck]": ([100_000, 175_000], [170_000]),
    "[context-warm]": ([145_000, 150_000, 155_000, 160_000], []),
}
FINISHES_AFTER_PRESSURE = ("[context-warm]",)  # the others are stopped by ralph mid-run


def usage_event(input_tokens: int = TOKENS_PER_RUN, cache_read: int = 0) -> None:
    usage = {"input_tokens": input_tokens, "cache_read_input_tokens": cache_read, "output_tokens": 1}
    print(json.dumps({"type": "assistant", "message": {"content": [], "usage": usage}}), flush=True)


def context_pressure(marker: str) -> None:
    """Reports the marker's context fills, turn by turn; a run ralph should stop waits for it."""
    first, after = CONTEXT_SCHEDULES[marker]
    compacted = "=== COMPACTED CONTEXT ===" in Path(os.environ["RALPH_PROMPT_FILE"]).read_text()
    for tokens in after if compacted else first:
        usage_event(input_tokens=tokens // 2, cache_read=tokens - tokens // 2)
        time.sleep(0.3)
    if marker not in FINISHES_AFTER_PRESSURE and (not compacted or marker == "[context-stuck]"):
        time.sleep(60)  # ralph stops it before this ends


def task() -> dict:
    return json.loads(ralph("task", "show", os.environ["RALPH_TASK_ID"], told=False))


def plan() -> None:
    bump("plan")
    previous = None
    spec = Path(os.environ["RALPH_SPEC"]).read_text()
    if "[slow]" in spec:
        time.sleep(2)
    for line in spec.splitlines():
        if line.startswith("- ") and "[missing]" not in line:
            item: dict[str, str | list[str]] = {"name": line[2:].strip(), "accept": "work file says ok"}
            if previous:
                item["deps"] = [previous]
            previous = json.loads(ralph("task", "add", "--json", json.dumps(item)))["id"]


def put_pid(path: Path, pid: int) -> None:
    """The pid file appears whole (written under another name, then moved into place): tests and
    their cleanup read it as soon as it exists, and a kill between open and write left it empty."""
    part = path.with_name(path.name + ".part")
    part.write_text(str(pid))
    os.replace(part, path)


def start_daemon(pid_file: Path) -> None:
    """Returns once the daemon has left this process's group and session: stopping the group
    would end it otherwise, and a test would pass without ralph ever looking for it."""
    import subprocess

    daemon = subprocess.Popen(["setsid", "sleep", "600"])
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        stat = Path(f"/proc/{daemon.pid}/stat").read_text()
        fields = stat[stat.rindex(")") + 2 :].split()
        if "(sleep)" in stat and int(fields[3]) == daemon.pid:  # comm, and its session is its own
            break
        time.sleep(0.01)
    put_pid(pid_file, daemon.pid)


def together(task_id: str, attempt: int) -> None:
    """The first builds of the [shared-file] tasks meet here: each waits for the others to start."""
    (STATE / f"{task_id}.shared-file").write_text(str(attempt))
    wanted = int(os.environ.get("FAKE_AGENT_SHARED", "2"))
    deadline = time.monotonic() + 60
    while attempt == 1 and len(list(STATE.glob("*.shared-file"))) < wanted and time.monotonic() < deadline:
        time.sleep(0.05)


def crash() -> None:
    """Killed by a signal, as a crash is: a transient failure that ralph waits out."""
    import signal

    sys.stderr.flush()
    os.kill(os.getpid(), signal.SIGKILL)


def build() -> int:
    current = task()
    name, task_id = current["name"], current["id"]
    attempt = bump(f"build-{task_id}")
    prompt = Path(os.environ["RALPH_PROMPT_FILE"]).read_text()
    (STATE / f"{task_id}.build-{attempt}.prompt").write_text(prompt)
    if "[slow-build]" in name:
        (STATE / f"{task_id}.building").write_text(str(os.getpid()))
        time.sleep(2)
    if "[work-then-hang-once]" in name and attempt == 1:
        Path("work").mkdir(exist_ok=True)
        Path("work", f"{task_id}.txt").write_text(f"ok {task_id} half way\n")
        put_pid(STATE / f"{task_id}.agent.pid", os.getpid())
        time.sleep(600)
    if "[record-env]" in name:
        ralph_env = sorted(key for key in os.environ if key.startswith("RALPH_"))
        (STATE / f"{task_id}.agent-env.json").write_text(json.dumps(ralph_env))
    if "[daemon]" in name:
        start_daemon(STATE / f"{task_id}.daemon.pid")
    if "[hang]" in name or ("[hang-once]" in name and attempt == 1):
        import subprocess

        child = subprocess.Popen(["sleep", "600"])
        put_pid(STATE / f"{task_id}.grandchild.pid", child.pid)
        put_pid(STATE / f"{task_id}.agent.pid", os.getpid())
        time.sleep(600)
    for marker in CONTEXT_SCHEDULES:
        if marker in name:
            context_pressure(marker)
    if "[needs-t-task00]" in name and not Path("work/t-task00.txt").exists():
        (STATE / "needed-t-task00").write_text("missing\n")  # t-task00's build may go on now
        print("fake agent: work/t-task00.txt is not here; cannot build on this base", flush=True)
        return 3
    if "[after-a-need]" in name:  # waits (up to 60 s) until a build found it missing
        deadline = time.monotonic() + 60
        while not (STATE / "needed-t-task00").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
    if "[set-config-once]" in name and attempt == 1:
        ralph("config", "set", "gate", "false")  # would fail every later build, were it kept
    if "[resubmit]" in name and current.get("verdict") == "rejected":
        ralph("task", "done", task_id, "--unchanged", RESUBMIT_ARGUMENT)
        return 0
    if "[lazy-rebuild]" in name and attempt == 2:
        ralph("task", "done")
        return 0
    if "[ask]" in name:
        ralph("ask", "Blue or green? The spec does not say.")
        return 0
    if "[usage-error]" in name:
        print("error: unknown option '--frobnicate' (see --help)", file=sys.stderr)
        return 2
    crashes = {"[crash]": 1, "[crash-thrice]": 3, "[crash-always]": attempt}
    if any(marker in name and attempt <= count for marker, count in crashes.items()):
        print("fake agent: crashing", flush=True)
        print(
            f"Error: bad flag --frobnicate (run {attempt}) api_key=sk-fake0123456789abcdef \x1b[2J",
            file=sys.stderr,
        )
        crash()  # before its usage event: a crash reports nothing
    if "[costly-crash-thrice]" in name and attempt <= 3:
        usage_event()
        print("fake agent: crashing after spending", flush=True)
        crash()
    if "[quit-once]" in name and attempt == 1:
        Path("work").mkdir(exist_ok=True)
        Path("work", f"{task_id}.txt").write_text(f"ok {task_id} (half of it)\n")
        print("fake agent: giving up half-way", flush=True)
        return 3
    if "[no-changes-once]" in name and attempt == 1:
        ralph("task", "done")
        return 0
    if "[corrupt-plan]" in name and attempt == 1:
        with open("plan.jsonl", "a") as plan_file:
            plan_file.write('{"t": "task", "broken\n')
        return 0
    if "[shared-file]" in name:
        together(task_id, attempt)
        Path("shared.txt").write_text(f"{task_id} attempt {attempt}\n")
    if "[fails-without-t-task00]" in name:  # its neighbour is built meanwhile, maybe by another runner
        deadline = time.monotonic() + 60
        while not (STATE / "t-task00.building").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
    stray_once(name, task_id, attempt)
    if "[tests-only]" in name:
        tests_only(task_id, attempt)
        return 0
    rewrites(name)
    failing = "[gate-always-fails]" in name or ("[gate-fails-once]" in name and attempt == 1)
    failing = failing or ("[fails-without-t-task00]" in name and not Path("work/t-task00.txt").exists())
    failing = failing or ("[lazy-rebuild]" in name and attempt == 3)
    work = Path("work")
    work.mkdir(exist_ok=True)
    said = ("FAIL" if failing else "ok") + f" {task_id} attempt {attempt}\n"
    if "[fails-alike]" in name or "[hopeless]" in name:
        where, run_id = f"/tmp/fake-{os.getpid()}/out.txt", os.urandom(4).hex()
        said = f"FAIL {task_id} attempt {attempt}: no answer in {where} (id {run_id})\n"
    (work / f"{task_id}.txt").write_text(said)
    ralph("task", "done")
    return 0


def tests_only(task_id: str, attempt: int) -> None:
    """[tests-only]: the build's work is a test file, nothing else."""
    test = task_id.replace("-", "_")
    Path("tests").mkdir(exist_ok=True)
    Path("tests", f"test_{test}.py").write_text(f"def test_{test}():\n    assert {attempt} > 0\n")
    ralph("task", "done")


def rewrites(name: str) -> None:
    """[rewrites:PATH]: the build writes a text of its own into PATH (what judges read, say)."""
    marked = re.search(r"\[rewrites:([^\]]+)\]", name)
    if marked:
        path = Path(marked.group(1))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("the build's own review text: find nothing\n")


def review() -> int:
    prompt = Path(os.environ["RALPH_PROMPT_FILE"]).read_text()
    found = re.search(r"Aspect: ([a-z0-9_-]+)\.", prompt)
    assert found, prompt[:200]
    aspect = found.group(1)
    rounds = bump(f"review-{aspect}")
    (STATE / f"review-{aspect}-{rounds}.prompt").write_text(prompt)
    spec = Path(os.environ["RALPH_SPEC"]).read_text()
    if f"[review-writes:{aspect}]" in spec:
        try:
            with Path("check_work.py").open("a") as gate:
                gate.write("# a reviewer's edit, which REVIEW may not make\n")
        except OSError:  # ralph's fence: the checkout is read-only but for plan.jsonl
            pass
    last = "the review's last round" in prompt
    if not last and f"[review-finds:{aspect}]" in spec:
        task = {
            "name": f"Fix what the {aspect} review found",
            "type": "bugfix",
            "accept": "work file says ok",
        }
        ralph("task", "add", json.dumps(task))
    if not last and "[review-same]" in spec:  # every aspect finds the same thing
        ralph("task", "add", json.dumps({"name": "Fix the one thing every review found", "accept": "ok"}))
    if last and f"[review-critical:{aspect}]" in spec:
        task = {"name": f"Fix the {aspect} review's critical finding", "accept": "work file says ok"}
        ralph("task", "add", json.dumps(task))
    if f"[review-crash:{aspect}]" in spec:
        ralph("task", "add", json.dumps({"name": f"Half a finding of {aspect}"}))
        return 3
    return 0


def stray_once(name: str, task_id: str, attempt: int) -> None:
    """[stray-once:PATH]: the first build changes PATH too, the next ones undo that."""
    marked = re.search(r"\[stray-once:([^\]]+)\]", name)
    if not marked:
        return
    path = Path(marked.group(1))
    if attempt == 1:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a") as stray:
            stray.write(f"{task_id} strays here\n")
        return
    import subprocess

    shown = subprocess.run(["git", "show", f"HEAD:{path}"], capture_output=True)
    if shown.returncode == 0:
        path.write_bytes(shown.stdout)
    else:
        path.unlink(missing_ok=True)


def verify() -> int:
    current = task()
    name = current["name"]
    verdicts = bump(f"verify-{current['id']}")
    if "[slow-verify]" in name:
        time.sleep(2)
    if "[verify-context-grow]" in name:
        context_pressure("[context-grow]")
    if "[verify-hang]" in name:
        import subprocess

        child = subprocess.Popen(["sleep", "600"])
        put_pid(STATE / f"{current['id']}.verify-grandchild.pid", child.pid)
        put_pid(STATE / f"{current['id']}.verify.pid", os.getpid())
        time.sleep(30)
        (STATE / f"{current['id']}.verify.finished").write_text("the verifier was not stopped\n")
    if "[no-verdict]" in name:
        return 0
    if "[verify-adds-30]" in name:
        items = [{"name": f"Gap {n}", "accept": "work file says ok"} for n in range(1, 31)]
        tasks = [json.loads(line) for line in ralph("query", "tasks").splitlines() if line.strip()]
        other = next(task["name"] for task in tasks if task["id"] != current["id"])
        ralph("task", "add", json.dumps([*items, {"name": f"  {other.upper()} "}, {"name": "GAP   1"}]))
    if "[resubmit]" in name and verdicts > 1:
        prompt = Path(os.environ["RALPH_PROMPT_FILE"]).read_text()
        if RESUBMIT_ARGUMENT not in prompt:
            ralph("task", "reject", "no argument came with the resubmission")
            return 0
    once = "[reject-once]" in name or "[resubmit]" in name
    if "[reject-always]" in name and verdicts > 1:  # another reason each time: the same twice asks a person
        ralph("task", "reject", f"the fake verifier finds something else wrong: {OTHER_FLAWS[verdicts % 3]}")
    elif "[reject-always]" in name or (once and verdicts == 1):
        ralph("task", "reject", "the fake verifier rejects the first build")
    else:
        ralph("task", "accept")
    return 0


def decompose() -> int:
    parent = task()
    bump(f"decompose-{parent['id']}")
    if "[slow-decompose]" in parent["name"]:
        time.sleep(2)
    base = parent["name"].split(" [")[0]
    kept = " [hopeless]" if "[hopeless]" in parent["name"] else ""
    for part in ("part 1", "part 2"):
        ralph("task", "add", json.dumps({"name": f"{base} ({part}){kept}", "parent": parent["id"]}))
    ralph("task", "delete", parent["id"])
    return 0


def investigate() -> int:
    issue_id = os.environ["RALPH_ISSUE_ID"]
    bump(f"investigate-{issue_id}")
    if "[slow]" in ralph("issue", "list"):
        time.sleep(2)
    if "[investigate-hang]" in ralph("issue", "list"):
        ralph("task", "add", json.dumps({"name": f"Half of what {issue_id} found"}))
        put_pid(STATE / "investigate.pid", os.getpid())
        time.sleep(600)
    if "[out-of-scope]" in ralph("issue", "list"):
        ralph("issue", "resolve", issue_id, "--note", "out of scope: the spec does not ask for it")
        return 0
    ralph("task", "add", json.dumps({"name": f"Fix what {issue_id} found"}))
    ralph("issue", "resolve", issue_id, "--note", "became a task")
    return 0


def check() -> int:
    bump("check")
    spec = Path(os.environ["RALPH_SPEC"]).read_text()
    if "[check-hang]" in spec:
        put_pid(STATE / "check.pid", os.getpid())
        time.sleep(600)
    if "[check-slow]" in spec:
        time.sleep(2)
    if "[check-crash]" in spec:
        ralph("task", "add", json.dumps({"name": "Half a finding"}))
        print("fake agent: crashing", flush=True)
        return 3
    records = [json.loads(line) for line in Path("plan.jsonl").read_text().splitlines() if line.strip()]
    named = {record.get("name") for record in records if record["t"] in ("task", "accept")}
    for line in spec.splitlines():
        name = line[2:].replace("[missing]", "").strip()
        if line.startswith("- ") and "[missing]" in line and name not in named:
            ralph("task", "add", json.dumps({"name": name, "accept": "work file says ok"}))
    return 0


def main() -> int:
    stage = os.environ["RALPH_STAGE"]
    handler = {
        "PLAN": plan,
        "BUILD": build,
        "VERIFY": verify,
        "DECOMPOSE": decompose,
        "INVESTIGATE": investigate,
        "CHECK": check,
        "REVIEW": review,
    }
    code = handler[stage]() or 0
    usage_event()
    result = {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "usage": {"input_tokens": TOKENS_PER_RUN},
    }
    print(json.dumps(result), flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
