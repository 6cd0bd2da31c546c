"""`ralph log`: a real history made through the real CLI (and the loop's own plan changes, through
the same Plan methods the loop calls), read back as a timeline. Goldens for what people read, a
schema check for --json."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import signal
import subprocess
from pathlib import Path

import pytest
from pytest_golden.plugin import GoldenTestFixture

from ralph.plan.records import Verdict
from ralph.store.transaction import transaction
from tests.support.cli import Ralph
from tests.support.gitrepo import git, isolate_git
from tests.support.present import present


class Clock:
    """Pins the dates of every commit, one minute apart, so times in the log are the same each run."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch):
        self.monkeypatch, self.minute = monkeypatch, 0

    def tick(self) -> None:
        self.minute += 1
        stamp = f"2026-01-02T10:{self.minute:02d}:00+00:00"
        self.monkeypatch.setenv("GIT_AUTHOR_DATE", stamp)
        self.monkeypatch.setenv("GIT_COMMITTER_DATE", stamp)


# A failed gate as the loop records it: the lines its gate picked, and where the whole output is.
GATE_FAILURE = """`make verify` exited 2:
...
    def test_login():
>       assert render_form() == "<form>"
E       AssertionError: assert '' == '<form>'
tests/test_login.py:4: AssertionError
FAILED tests/test_login.py::test_login - AssertionError: assert '' == '<form>'
========================= 1 failed, 12 passed in 0.21s =========================
make: *** [Makefile:2: verify] Error 1
(full output: build/ralph-logs/ralph-20260102-101100-gate-t-login.log)"""
NO_CHANGES = "no_changes: the agent marked the task done but changed no file."


def build_history(root: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every kind of event, each in a commit of its own; returns the issue's generated id."""
    ralph, clock = Ralph(root), Clock(monkeypatch)

    def step(*args: str) -> str:
        clock.tick()
        return ralph(*args).stdout

    clock.tick()
    ralph("init")
    step("task", "add", '{"id": "t-login", "name": "Add login form", "accept": "the form renders"}')
    step("task", "add", "--name", "Remember me", "--deps", "t-login")
    remember = json.loads(ralph("query", "tasks").stdout.splitlines()[1])["id"]
    step("task", "add", '[{"id": "t-split", "name": "Big job"}, {"id": "t-gone", "name": "Not needed"}]')
    issue = step("issue", "add", "Is the cookie HttpOnly?").split()[1].rstrip(":")
    # Runners sharing a git remote: a claim, taken over once stale, released; an issue's claim.
    for record in (
        lambda plan: plan.claim("t-split", "runner-a", "2026-01-02T10:06:00+00:00"),
        lambda plan: plan.claim("t-split", "runner-b", "2026-01-02T11:00:00+00:00"),
        lambda plan: plan.release("t-split", "runner-b"),
        lambda plan: plan.claim(issue, "runner-a", "2026-01-02T11:01:00+00:00"),
        lambda plan: plan.release(issue, "runner-a"),
    ):
        clock.tick()
        with transaction(root) as change:
            record(change.plan)
            change.message = "ralph: claim"
    # The loop's own changes to a task: a failed build, one through the gate, its commit.
    for record in (
        lambda plan: plan.record_build_failure("t-login", Verdict.GATE_FAILED, GATE_FAILURE, 1200, 0.01),
        lambda plan: plan.record_build_failure("t-login", Verdict.NO_CHANGES, NO_CHANGES, 300, 0.002),
        lambda plan: plan.record_build("t-login", ["app/login.py"], 3400, 0.02),
        lambda plan: plan.record_build_commit("t-login", "0123456789abcdef0123456789abcdef01234567"),
    ):
        clock.tick()
        with transaction(root) as change:
            record(change.plan)
            change.message = "ralph(build): t-login"
    step("task", "done", "t-login")
    step("task", "reject", "t-login", "the form\x1b[31m does not render\nsee the screenshot")
    step("task", "done", "t-login")
    step("task", "accept", "t-login")
    step("task", "reject", "t-split", "BUILD timed out", "--kill-reason", "timeout")
    step(
        "task",
        "add",
        '[{"id": "t-part-a", "name": "Part A", "parent": "t-split"}, {"id": "t-part-b", '
        '"name": "Part B", "parent": "t-split"}]',
    )
    step("task", "delete", "t-split")
    step("task", "delete", "t-gone")
    step("issue", "resolve", issue)
    # A person's edit, committed with git: a field changed and a task renamed.
    clock.tick()
    plan = (root / "plan.jsonl").read_text()
    plan = plan.replace('"name": "Remember me"', '"name": "Remember me", "priority": "high"')
    plan = plan.replace('"name": "Part B"', '"name": "Part B, smaller"')
    (root / "plan.jsonl").write_text(plan)
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Hand Editor")
    git(root, "commit", "-qam", "make remember-me urgent")
    monkeypatch.delenv("GIT_AUTHOR_NAME")
    assert remember
    return issue


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Built once for the module (some 20 commits through the CLI): the tests only read it."""
    root = tmp_path_factory.mktemp("history") / "repo"
    root.mkdir()
    with pytest.MonkeyPatch.context() as monkeypatch:
        isolate_git(monkeypatch, tmp_path_factory.mktemp("gitconfig"))
        git(root, "init", "-q")
        (root / "README").write_text("a project\n")
        build_history(root, monkeypatch)
    return root


def normalize(root: Path, text: str) -> str:
    """Commits as c1, c2, ... in history order; generated ids as <i1>, <t1>."""
    for number, sha in enumerate(git(root, "rev-list", "--reverse", "HEAD").split(), start=1):
        text = (
            text.replace(sha, f"<c{number}>")
            .replace(sha[:12], f"<c{number}>")
            .replace(sha[:7], f"<c{number}>")
        )
    found: dict[str, str] = {}
    for match in re.finditer(r"\b([ti])-[0-9a-z]{6}\b", text):
        found.setdefault(
            match.group(), f"<{match.group(1)}{sum(1 for v in found.values() if v[1] == match.group(1)) + 1}>"
        )
    return re.sub(r"\b[ti]-[0-9a-z]{6}\b", lambda m: found[m.group()], text)


@pytest.mark.golden_test("golden/log/*.yml")
def test_log_output(golden: GoldenTestFixture, history: Path):
    results = []
    for args in golden["runs"]:
        done = Ralph(history)(*args, code=None)
        results.append(
            {
                "args": args,
                "exit_code": done.exit_code,
                "stdout": normalize(history, done.stdout),
                "stderr": normalize(history, done.stderr),
            }
        )
    assert results == golden.out["results"]


def test_labels_each_event_by_what_the_records_show(history: Path):
    events = [json.loads(line) for line in Ralph(history)("log", "--json").stdout.splitlines()]
    said = {(event["event"], event["id"]) for event in events}
    assert {("accepted", "t-login"), ("deleted", "t-gone"), ("decomposed", "t-split")} <= said
    assert ("accepted", "t-gone") not in said and ("deleted", "t-login") not in said
    assert ("deleted", "t-split") not in said
    decomposed = next(event for event in events if event["event"] == "decomposed")
    assert decomposed["into"] == ["t-part-a", "t-part-b"]
    killed = next(event for event in events if event["event"] == "killed")
    assert (killed["id"], killed["kill_reason"], killed["reason"]) == (
        "t-split",
        "timeout",
        "BUILD timed out",
    )
    rejected = next(event for event in events if event["event"] == "rejected")
    assert rejected["reason"] == "the form\x1b[31m does not render\nsee the screenshot"
    assert [event["event"] for event in events if event["id"] and event["id"].startswith("i-")] == [
        "added",
        "claimed",
        "released",
        "resolved",
    ]
    split = [(e["event"], e.get("runner"), e.get("was_claimed_by")) for e in events if e["id"] == "t-split"]
    assert split[1:4] == [
        ("claimed", "runner-a", None),
        ("taken over", "runner-b", "runner-a"),
        ("released", "runner-b", None),
    ]


def test_json_events_follow_their_schema_and_name_real_commits(history: Path):
    lines = Ralph(history)("log", "--json").stdout.splitlines()
    commits = {
        sha: (author, when, subject)
        for sha, author, when, subject in (
            line.split("\0") for line in git(history, "log", "--format=%H%x00%an%x00%aI%x00%s").splitlines()
        )
    }
    required = {"commit": str, "time": str, "author": str, "subject": str, "by_hand": bool, "event": str}
    for line in lines:
        event = json.loads(line)
        for key, kind in required.items():
            assert isinstance(event[key], kind), (key, event)
        assert event["id"] is None or re.fullmatch(r"[ti]-[0-9a-z][0-9a-z_-]*", event["id"]), event
        assert commits[event["commit"]] == (event["author"], event["time"], event["subject"])
        assert event["by_hand"] == (event["author"] == "Hand Editor")


def test_a_tasks_story_sums_its_attempts(history: Path):
    lines = Ralph(history)("log", "--task", "t-login", "--json").stdout.splitlines()
    story = json.loads(lines[-1])
    assert story["event"] == "story" and story["now"] == "accepted"
    assert [(a["attempt"], a["verdict"], a["passed"], a["tokens"]) for a in story["attempts"]] == [
        (1, "gate_failed", False, 1200),
        (2, "no_changes", False, 300),
        (3, "built", True, 3400),
    ]
    assert story["attempts"][0]["gate_failure"] == GATE_FAILURE
    assert (story["tokens"], story["cost_usd"], story["rejections"]) == (4900, 0.032, 1)
    assert (story["failed_attempts"], story["gate_failures"]) == (2, 1)  # no changes is no gate failure
    assert story["build_commit"] == "0123456789abcdef0123456789abcdef01234567"
    assert story["files"] == ["app/login.py"]
    assert all(json.loads(line)["id"] == "t-login" for line in lines)


def test_since_a_revision_or_a_date_shows_only_later_commits_judged_against_the_whole_history(history: Path):
    ralph = Ralph(history)
    base = git(history, "rev-list", "-n1", "HEAD~4").strip()
    events = [json.loads(line) for line in ralph("log", "--since", base, "--json").stdout.splitlines()]
    assert [event["event"] for event in events] == ["decomposed", "deleted", "resolved", "changed", "changed"]
    assert base not in {event["commit"] for event in events}
    dated = ralph("log", "--since", "2026-01-02T10:23:00+00:00", "--json").stdout.splitlines()
    assert [json.loads(line)["event"] for line in dated] == ["resolved", "changed", "changed"]


def test_errors_are_one_line(history: Path, tmp_path: Path):
    done = Ralph(history)("log", "--task", "t-nowhere", code=1)
    assert done.stderr == "ralph: task t-nowhere does not appear in plan.jsonl's history\n"
    done = Ralph(history)("log", "--since", "banana\x1b", code=2)
    assert done.stderr == (
        "ralph: --since banana\\x1b: neither a revision nor a date git can read"
        " (try 2026-01-31 or '2 weeks ago')\n"
    )
    assert Ralph(history)("log", "--since", "now").stdout == ""
    done = Ralph(tmp_path)("log", code=1)
    assert done.stderr.startswith("ralph: not inside a git repository") and done.stderr.count("\n") == 1


def test_a_repository_without_commits_has_an_empty_log(tmp_path: Path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    assert Ralph(tmp_path)("log").stdout == ""


def test_report_is_one_self_contained_page_with_a_point_per_plan_commit(history: Path, tmp_path: Path):
    """The page's structure; the test after it loads the page in a real (headless) Chromium."""
    from html.parser import HTMLParser

    target = tmp_path / "report.html"
    assert Ralph(history)("report", "-o", str(target)).stdout == f"wrote {target}\n"
    page = target.read_text(encoding="utf-8")
    commits = len(git(history, "rev-list", "HEAD", "--", "plan.jsonl").split())

    class Page(HTMLParser):
        tags: list[tuple[str, dict]] = []

        def handle_starttag(self, tag, attrs):
            self.tags.append((tag, dict(attrs)))

    parser = Page()
    parser.feed(page)
    names = {tag for tag, _ in parser.tags}
    assert "script" not in names and "img" not in names and "link" not in names  # nothing to fetch
    assert not [
        attrs
        for _, attrs in parser.tags
        if any("http" in (v or "") for k, v in attrs.items() if k != "xmlns")
    ]
    series = {
        attrs["data-series"]: attrs["points"].split() for tag, attrs in parser.tags if tag == "polyline"
    }
    assert set(series) == {"pending", "done", "accepted", "blocked"}
    assert all(len(points) == commits for points in series.values())
    row = present(re.search(r'<tr><td class="id" data-label="id">t-login</td>.*?</tr>', page)).group()
    cells = dict(re.findall(r'data-label="([^"]+)">([^<]*)</td>', row))
    assert cells == {
        "id": "t-login",
        "name": "Add login form",
        "type": "feature",  # it has none: it is built as a feature
        "now": "accepted",
        "attempts": "3",
        "failed": "gate failed, no changes, rejected by VERIFY",
        "cycle time": "16m 00s",  # created 10:02, accepted 10:18
        "build tokens": "4,900",
        "build cost (USD)": "0.0320",
    }
    # why attempts failed: each with its verdict and the line that says why
    assert (
        '<td data-label="what">attempt 1: gate failed</td><td data-label="why">`make verify` exited 2:'
        " E AssertionError: assert &#x27;&#x27; == &#x27;&lt;form&gt;&#x27;</td>" in page
    )
    assert '<td data-label="what">attempt 2: no changes</td><td data-label="why">the agent marked' in page
    assert (
        '<td data-label="what">rejected by VERIFY</td>'
        '<td data-label="why">the form\\x1b[31m does not render | see the screenshot</td>'
    ) in page
    assert "3 build attempts, 2 failed (67%): gate failed 1, no changes 1; VERIFY rejections: 1." in page
    # read on a phone: the page is as wide as the screen, the chart scales, and tables turn into
    # labelled cards below 40rem instead of scrolling sideways
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in page
    assert "svg { display: block; width: 100%" in page and "@media (max-width: 40rem)" in page
    svg = next(attrs for tag, attrs in parser.tags if tag == "svg")
    assert svg["viewbox"] == "0 0 480 280" and "width" not in svg
    texts = re.findall(r"<text[^>]*>([^<]+)</text>", page)
    assert "tasks" in texts and f"plan.jsonl commits, oldest to newest ({commits})" in texts  # axis titles
    assert "pending (now 3)" in page  # the legend says where each line ends: Remember me, Part A, B


def test_report_and_log_say_unknown_for_a_cost_nobody_reported(ralph: Ralph, tmp_path: Path):
    """A build whose agent reported no cost, for a model with no price, costs "unknown", not 0;
    the state record's per-stage totals are shown the same way."""
    ralph("task", "add", '{"id": "t-free", "name": "Free?"}')
    for record in (  # one commit each, as the loop makes them
        lambda plan: plan.record_build_failure(
            "t-free", Verdict.GATE_FAILED, "`make verify` exited 1:\n1 failed", 500, None
        ),
        lambda plan: plan.record_build("t-free", ["a.py"], 700, 0.25),
        lambda plan: plan.add_spending(
            {"BUILD": {"runs": 2, "tokens": 1200, "cost_usd": 0.25, "unknown_runs": 1}}
        ),
        lambda plan: plan.add_spending(
            {"VERIFY": {"runs": 1, "tokens": 90, "cost_usd": 0.0, "unknown_runs": 1}}
        ),
    ):
        with transaction(ralph.root) as change:
            record(change.plan)
            change.message = "ralph(build): t-free"
    target = tmp_path / "report.html"
    ralph("report", "-o", str(target))
    page = target.read_text(encoding="utf-8")
    assert '<td class="n" data-label="build cost (USD)">0.2500 + 1 unknown</td>' in page  # the task
    assert '<td data-label="stage">VERIFY</td><td class="n" data-label="runs">1</td>' in page
    assert '<td class="n" data-label="cost (USD)">unknown</td></tr>' in page  # VERIFY's
    # in all: BUILD's and VERIFY's runs, the cost of two of them unknown
    assert "Spent in all:</b> 1,290 tokens, cost $0.2500 + 2 unknown, in 3 agent runs" in page
    assert '<th data-label="stage">all stages</th><td class="n" data-label="runs">3</td>' in page
    story = ralph("log", "--task", "t-free").stdout
    assert "attempt 1: gate failed, 500 tokens, cost unknown" in story
    assert "attempt 2: passed the gate, 700 tokens, $0.2500" in story


def test_log_and_report_put_a_scoped_tasks_scope_beside_the_files_its_build_changed(ralph: Ralph):
    """A scoped task and one without a scope, each built (one commit each, as the loop makes them)
    and accepted: `ralph log --task` (text and --json) and the HTML report put the scope beside the
    files its build changed; the task without a scope has none. (The run's final report:
    test_stages_in_process.py's
    test_loop_the_report_puts_a_scoped_tasks_scope_beside_the_files_its_build_changed.)"""
    ralph("task", "add", '{"id": "t-scoped", "name": "Scoped", "scope": ["work/**", "docs/"]}')
    ralph("task", "add", '{"id": "t-free", "name": "Free"}')
    for task_id in ("t-scoped", "t-free"):
        with transaction(ralph.root) as change:
            change.plan.record_build(task_id, [f"work/{task_id}.txt"], 100, None)
            change.message = f"ralph(build): {task_id}"
        with transaction(ralph.root) as change:
            change.plan.done(task_id)
            change.plan.accept(task_id)
            change.message = f"ralph(verify): {task_id} accepted"

    assert ralph("log", "--task", "t-scoped").stdout.splitlines()[-4:] == [
        "  scope: work/**, docs/",
        "    planned and touched: work/t-scoped.txt",
        "    planned and untouched: docs/",
        "    touched and unplanned: -",
    ]
    story = json.loads(ralph("log", "--task", "t-scoped", "--json").stdout.splitlines()[-1])
    assert story["coverage"] == {
        "scope": ["work/**", "docs/"],
        "touched": ["work/t-scoped.txt"],
        "untouched": ["docs/"],
        "unplanned": [],
    }
    assert "coverage" not in json.loads(ralph("log", "--task", "t-free", "--json").stdout.splitlines()[-1])
    section = ralph("report").stdout.split("<h2>Scope and files</h2>", 1)[1]
    assert (
        '<td data-label="task">t-scoped</td><td data-label="scope">work/**, docs/</td>'
        '<td data-label="planned and touched">work/t-scoped.txt</td>'
        '<td data-label="planned and untouched">docs/</td><td data-label="touched and unplanned">-</td>'
    ) in section
    assert '<th data-label="task">in all (1 tasks)</th>' in section and "t-free" not in section


def test_report_shows_what_each_review_aspect_found_and_what_became_of_it(ralph: Ralph, tmp_path: Path):
    """The review's findings, added as REVIEW adds them (marked with their aspect), then one built and
    accepted, one issue resolved, one task left: the page says each aspect's findings and where each
    is now; a person's own task is no finding."""
    from ralph.loop.stages.review import _add_found

    ralph("task", "add", '{"id": "t-own", "name": "A person\'s own task"}')
    found = {
        "docs": [{"t": "task", "id": "t-readme", "name": "Write the README"}],
        "bugs-and-security": [{"t": "issue", "id": "i-leak", "text": "The token is logged"}],
        "tests": [{"t": "task", "id": "t-edge", "name": "Test the empty name"}],
    }
    with transaction(ralph.root) as change:
        for aspect, records in found.items():
            assert _add_found(change.plan, aspect, records) == [records[0]["id"]]
        change.message = "ralph(review): specs/app.md: round 1: 3 found"
    ralph("task", "done", "t-readme")
    ralph("task", "accept", "t-readme")
    ralph("issue", "resolve", "i-leak")
    target = tmp_path / "report.html"
    ralph("report", "-o", str(target))
    section = target.read_text(encoding="utf-8").split("<h2>Review by aspect</h2>", 1)[1]
    rows = [
        [html.unescape(cell) for cell in re.findall(r"<td[^>]*>([^<]*)</td>", row)]
        for row in re.findall(r"<tr>(.*?)</tr>", section.split("<tbody>", 1)[1])
    ]
    assert sorted(rows) == [  # in the order the history has them: one commit's in any order
        ["bugs-and-security", "i-leak", "The token is logged", "issue resolved"],
        ["docs", "t-readme", "Write the README", "accepted"],
        ["tests", "t-edge", "Test the empty name", "pending"],
    ]


def test_log_names_the_aspect_that_found_an_item(ralph: Ralph):
    from ralph.loop.stages.review import _add_found

    with transaction(ralph.root) as change:  # as REVIEW takes what two aspects found
        _add_found(change.plan, "docs", [{"t": "task", "id": "t-readme", "name": "Write the README"}])
        _add_found(change.plan, "bugs-and-security", [{"t": "issue", "id": "i-leak", "text": "A leak"}])
        change.message = "ralph(review): specs/app.md: round 1: 2 found"
    ralph("task", "add", '{"id": "t-own", "name": "A person\'s own task"}')

    story = ralph("log").stdout.splitlines()

    (readme,) = [line for line in story if "t-readme  created" in line]
    assert readme.endswith("created: Write the README (found by the docs review)")
    (leak,) = [line for line in story if "i-leak  " in line]
    assert leak.endswith("(found by the bugs-and-security review)")
    (own,) = [line for line in story if "t-own  created" in line]
    assert "found by" not in own  # a person's own task is no finding


def test_report_shows_each_tasks_type_as_the_plan_last_had_it(ralph: Ralph, tmp_path: Path):
    typed = [{"id": "t-fix", "name": "Fix login", "type": "bugfix"}, {"id": "t-new", "name": "New"}]
    ralph("task", "add", json.dumps(typed))
    plan = ralph.root / "plan.jsonl"  # a person retypes t-new by hand
    plan.write_text(plan.read_text().replace('"name": "New"', '"name": "New", "type": "docs"'))
    git(ralph.root, "commit", "-qam", "t-new is docs")
    target = tmp_path / "report.html"
    ralph("report", "-o", str(target))
    rows = re.findall(r'data-label="id">(t-[a-z]+)</td>.*?data-label="type">([^<]*)</td>', target.read_text())
    assert sorted(rows) == [("t-fix", "bugfix"), ("t-new", "docs")]


def test_report_says_when_no_review_aspect_found_anything(ralph: Ralph, tmp_path: Path):
    ralph("task", "add", '{"id": "t-new", "name": "New"}')
    target = tmp_path / "report.html"
    ralph("report", "-o", str(target))
    assert "<h2>Review by aspect</h2>\n<p>no review aspect found anything</p>" in target.read_text()


def test_report_says_not_recorded_when_no_run_spent_anything_never_zero(ralph: Ralph, tmp_path: Path):
    ralph("task", "add", '{"id": "t-new", "name": "New"}')
    target = tmp_path / "report.html"
    ralph("report", "-o", str(target))
    page = target.read_text(encoding="utf-8")
    assert "Spent in all:</b> 0 tokens, cost not recorded, in 0 agent runs" in page
    assert "$0.0000" not in page and "no build attempt yet" in page


def test_report_axis_ticks_are_whole_even_steps_and_times_read_at_their_scale():
    from ralph.usecases.report import _duration, nice_ticks

    assert [nice_ticks(most) for most in (0, 3, 7, 12, 23, 140)] == [
        [0, 1],
        [0, 1, 2, 3],
        [0, 2, 4, 6, 8],
        [0, 5, 10, 15],
        [0, 5, 10, 15, 20, 25],
        [0, 50, 100, 150],
    ]
    assert [_duration(s) for s in (None, 4.4, 61, 3599, 4000, 2 * 86400 + 3 * 3600)] == [
        "-",
        "4s",
        "1m 01s",
        "59m 59s",
        "1h 06m",
        "2d 3h",
    ]


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def headless(*args: str, timeout_s: float = 90) -> subprocess.CompletedProcess:
    """Chromium, headless, in a session of its own: on a time-out its whole process group goes."""
    assert CHROMIUM, "the tests that run Chromium skip without it"
    argv = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--enable-logging=stderr",
        "--v=0",
        *args,
    ]
    child = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        out, err = child.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        child.communicate()
        raise
    return subprocess.CompletedProcess(argv, child.returncode, out, err)


@pytest.mark.slow  # six Chromium start-ups
@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (Debian: apt-get install chromium)")
def test_report_in_headless_chromium_loads_draws_every_commit_and_is_not_blank(history: Path, tmp_path: Path):
    page = tmp_path / "report.html"
    Ralph(history)("report", "-o", str(page))
    commits = len(git(history, "rev-list", "HEAD", "--", "plan.jsonl").split())
    dom = headless("--dump-dom", page.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert "CONSOLE" not in dom.stderr, dom.stderr  # no error, no failed load: nothing to fetch
    drawn = re.findall(r'<polyline[^>]*data-series="(\w+)"[^>]*points="([^"]*)"', dom.stdout)
    assert {name for name, _ in drawn} == {"pending", "done", "accepted", "blocked"}
    assert all(len(points.split()) == commits for _, points in drawn)
    for width in (375, 1280):  # a phone, a desktop
        shot = tmp_path / f"report-{width}.png"
        done = headless(f"--screenshot={shot}", f"--window-size={width},900", page.as_uri())
        assert done.returncode == 0 and shot.exists(), done.stderr[-2000:]
        assert len(set(png_pixels(shot.read_bytes()))) > 20  # text and lines in several colours
        layout = measured(page, width)
        assert layout["scroll"] <= layout["view"], layout  # nothing runs off the side
        assert layout["id_lines"] and set(layout["id_lines"]) == {1}, layout  # no id wraps
        # the phone's layout (labelled cards below 40rem) at the narrowest width --dump-dom lays
        # out (500 px: headless Chromium's least window width; the screenshot is 375 px wide)
        assert (layout["view"] < 640) == (width == 375), layout


# Appended to a copy of the page (which has no script of its own): how the laid-out page
# measures, written into the DOM for --dump-dom to carry out.
MEASURE = """<script>
const lines = [...document.querySelectorAll("td.id")].map(cell => {
  const range = document.createRange(); range.selectNodeContents(cell);
  return new Set([...range.getClientRects()].map(rect => Math.round(rect.top))).size;
});
document.body.dataset.layout = JSON.stringify(
  {scroll: document.documentElement.scrollWidth, view: innerWidth, id_lines: lines});
</script>"""


def measured(page: Path, width: int) -> dict:
    probe = page.with_name(f"measure-{width}.html")
    probe.write_text(
        page.read_text(encoding="utf-8").replace("</body>", MEASURE + "</body>"), encoding="utf-8"
    )
    dom = headless("--dump-dom", f"--window-size={width},900", probe.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    found = re.search(r'data-layout="([^"]*)"', dom.stdout)
    assert found, dom.stdout[-2000:]
    return json.loads(html.unescape(found.group(1)))


def png_pixels(data: bytes) -> bytes:
    """The decompressed image bytes of a PNG (filter bytes included: enough to tell blank)."""
    import struct
    import zlib

    position, idat = 8, b""
    while position < len(data):
        (length,) = struct.unpack(">I", data[position : position + 4])
        kind = data[position + 4 : position + 8]
        if kind == b"IDAT":
            idat += data[position + 8 : position + 8 + length]
        position += 12 + length
    return zlib.decompress(idat)


def test_a_merge_shows_as_what_it_changed_on_the_branch_merged_into(ralph: Ralph):
    root = ralph.root
    ralph("task", "add", '{"id": "t-main", "name": "On main"}')
    git(root, "checkout", "-qb", "side")
    ralph("task", "add", '{"id": "t-side", "name": "On the side"}')
    ralph("task", "done", "t-side")
    git(root, "checkout", "-q", "main")
    ralph("task", "done", "t-main")
    git(root, "merge", "-q", "--no-ff", "-m", "Merge side", "side")
    merge = git(root, "rev-parse", "HEAD").strip()
    events = [json.loads(line) for line in ralph("log", "--json").stdout.splitlines()]
    said = [(event["event"], event["id"], event["commit"] == merge) for event in events]
    # The side branch's task arrives with the merge, already done: one event, "created".
    assert said == [("created", "t-main", False), ("done", "t-main", False), ("created", "t-side", True)]
    # A person ran `git merge`, but nobody edited the record by hand: it was made on the branch.
    side = next(e for e in events if e["id"] == "t-side")
    assert (side["by_hand"], side["merged"]) == (False, True)
    assert ralph("log").stdout.splitlines()[-1].endswith("t-side  created: On the side  [merged]")


def test_log_and_report_redact_a_secret_a_history_from_before_redaction_holds(repo: Path, tmp_path: Path):
    stripe = "sk_live_51HqLmN8oPq2RsT4uVw6XyZ0"
    plan = repo / "plan.jsonl"
    task = {"t": "task", "id": "t-leak01", "name": f"Pay with {stripe}", "s": "p"}
    plan.write_text(plan.read_text() + json.dumps(task) + "\n")
    git(repo, "commit", "-qam", "a hand edit, committed by an older ralph or a person")
    ralph = Ralph(repo)
    shown = ralph("log", "--task", "t-leak01").stdout + ralph("log", "--json").stdout
    ralph("report", "-o", str(tmp_path / "report.html"))
    assert "Pay with [redacted]" in shown and "Pay with [redacted]" in (tmp_path / "report.html").read_text()
    assert stripe not in shown and stripe not in (tmp_path / "report.html").read_text()


def test_report_to_an_empty_file_name_is_a_usage_error_in_one_line(history: Path):
    done = Ralph(history)("report", "-o", "", code=2)
    assert done.stdout == "" and len(done.stderr.splitlines()) == 1, done.stderr
    assert "empty file name" in done.stderr
