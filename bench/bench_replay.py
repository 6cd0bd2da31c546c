"""Benchmark of the construct loop replaying a project's history: one task per commit, a scripted
agent (replay_agent.py) that applies its commit's diff with `git apply`, the project's own test
suite (`python -m pytest -q`) as the gate, a verifier that accepts. Each mode (serial, --parallel 4,
three runners at --parallel 1 on one bare remote) must end with the real last commit's tree, and
is timed against the floor measured in the same run: the same patches and suite runs in a plain
loop with a commit each (measured before and after each mode: the mean is the floor). Prints agent
runs per accepted task and per commit, and the wasted runs: all runs beyond the one BUILD and one
VERIFY each commit needs and the one spec CHECK that ends the run (failed attempts, merge conflicts,
set-aside work, the DECOMPOSE runs those lead to, and the runs of the second subtask the agent adds
to a decomposition, which needs two). Serially, it also splits the wall time into suite runs,
agent runs and the loop's own work: the floor has no agent in it, so the agents' runs (two a
commit, each a process that calls `ralph task done` or `accept`) are excess over it by design.
A mode still running after MODE_TIMEOUT_S (a runner waiting out a claim of a runner that exited)
is stopped and reported. Not a pass/fail test.

The project: this machine has no network and nothing installed has a git history with a test
suite, and ralph's own history is a poor subject (its suite takes a minute per run on two CPUs,
and a replayed `ralph` package would shadow the ralph the agents call). So the project is
"tally", a small real Python package (word counts, sentences, syllables, reading ease and a
command line) whose history of 12 commits is written out below, each commit with its tests, as
a person would have made them: later commits extend files earlier ones made, and some use
functions of others. `--deps needed` gives each task the tasks its patch needs (the last earlier
commit to touch each of its files, and the commits whose functions it uses); `--deps none`, the
default, gives none, as a history replayed task by task has none, so parallel modes show runs
wasted beside a neighbour: builds started at the same time as the one whose change they need,
which fail and are built again (not counted as attempts) once it has merged. A run on a stale
base is another thing: a build attempt started where the branch had already moved past its base
(the loop journals each attempt's base in a worktree); the issue's target is that none is.

    python bench/bench_replay.py [--commits N] [--modes serial,parallel,remote] [--deps none|needed]
                                 [--keep]   (keep the repositories and logs, to look at a run)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from bench_construct import bench_env, ralph

HERE = Path(__file__).parent
AGENT = f"{shlex.quote(sys.executable)} {shlex.quote(str(HERE / 'replay_agent.py'))}"
GATE = f"{shlex.quote(sys.executable)} -m pytest -q"
MODE_TIMEOUT_S = 300  # a wedged runner waits out its peers' claims (30 minutes): it is stopped
IDLE_S = 30
NO_PLUGINS = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
RUNNERS = 3

# The base commit: the package with its first module and test.
BASE = {
    "pyproject.toml": '[tool.pytest.ini_options]\ntestpaths = ["tests"]\naddopts = "-p no:cacheprovider"\n',
    ".gitignore": "__pycache__/\n.pytest_cache/\n",
    "tally/__init__.py": '"""tally: small statistics of English text."""\n',
    "tally/words.py": '''"""Words of a text."""

import re

WORD = re.compile(r"[A-Za-z]+")


def words(text):
    """The words of `text`, in order, lower-cased."""
    return [match.group(0).lower() for match in WORD.finditer(text)]
''',
    "tests/test_words.py": """from tally.words import words


def test_words_are_lower_cased_in_order():
    assert words("The cat, the HAT.") == ["the", "cat", "the", "hat"]


def test_no_words():
    assert words(" 1, 2 ... ") == []
""",
}


@dataclass
class Commit:
    subject: str
    changes: list[tuple]  # ("write", path, text), ("append", path, text), ("replace", path, old, new)
    uses: list[int] = field(default_factory=list)  # earlier commits whose functions it calls


HISTORY = [
    Commit(
        "Count how often each word occurs",
        [
            ("replace", "tally/words.py", "import re\n", "import re\nfrom collections import Counter\n"),
            (
                "append",
                "tally/words.py",
                '\n\ndef count(text):\n    """How often each word occurs."""\n'
                "    return Counter(words(text))\n",
            ),
            (
                "write",
                "tests/test_count.py",
                "from tally.words import count\n\n\ndef test_counts_ignore_case():\n"
                '    assert count("a b A c b a") == {"a": 3, "b": 2, "c": 1}\n',
            ),
        ],
    ),
    Commit(
        "Split a text into sentences",
        [
            (
                "write",
                "tally/sentences.py",
                '''"""Sentences of a text."""

import re

END = re.compile(r"(?<=[.!?])\\s+")


def sentences(text):
    """The sentences of `text`: split after '.', '!' or '?' followed by white space."""
    return [part.strip() for part in END.split(text.strip()) if part.strip()]
''',
            ),
            (
                "write",
                "tests/test_sentences.py",
                """from tally.sentences import sentences


def test_split_after_end_marks():
    assert sentences("One. Two!  Three?") == ["One.", "Two!", "Three?"]


def test_no_sentence():
    assert sentences("  ") == []
""",
            ),
        ],
    ),
    Commit(
        "Report the most common words",
        [
            (
                "append",
                "tally/words.py",
                '\n\ndef top(text, n=3):\n    """The `n` most common words, most common first; ties in'
                ' order of first use."""\n    return [word for word, _ in count(text).most_common(n)]\n',
            ),
            (
                "write",
                "tests/test_top.py",
                "from tally.words import top\n\n\ndef test_most_common_first():\n"
                '    assert top("b a b c a b", 2) == ["b", "a"]\n',
            ),
        ],
    ),
    Commit(
        "Estimate reading time",
        [
            (
                "write",
                "tally/timing.py",
                '''"""How long a text takes to read."""

import math

from tally.words import words

WORDS_PER_MINUTE = 200


def reading_minutes(text, speed=WORDS_PER_MINUTE):
    """Whole minutes to read `text` at `speed` words a minute."""
    return math.ceil(len(words(text)) / speed)
''',
            ),
            (
                "write",
                "tests/test_timing.py",
                """from tally.timing import reading_minutes


def test_rounds_up_to_whole_minutes():
    assert reading_minutes("word " * 200) == 1
    assert reading_minutes("word " * 201) == 2
    assert reading_minutes("") == 0
""",
            ),
        ],
    ),
    Commit(
        "Average sentence length in words",
        [
            ("replace", "tally/sentences.py", "\nEND", "\nfrom tally.words import words\n\nEND"),
            (
                "append",
                "tally/sentences.py",
                '''

def average_length(text):
    """The mean number of words per sentence (0.0 for no sentence)."""
    found = sentences(text)
    return sum(len(words(sentence)) for sentence in found) / len(found) if found else 0.0
''',
            ),
            (
                "append",
                "tests/test_sentences.py",
                """

def test_average_length():
    from tally.sentences import average_length

    assert average_length("One two. Three four five six!") == 3.0
    assert average_length("") == 0.0
""",
            ),
        ],
    ),
    Commit(
        "Leave stop words out of the top words",
        [
            (
                "replace",
                "tally/words.py",
                '''def top(text, n=3):
    """The `n` most common words, most common first; ties in order of first use."""
    return [word for word, _ in count(text).most_common(n)]
''',
                '''STOP_WORDS = frozenset({"a", "an", "and", "the", "of", "to", "in", "is", "it"})


def top(text, n=3, stop=STOP_WORDS):
    """The `n` most common words but `stop`, most common first; ties in order of first use."""
    kept = Counter({word: times for word, times in count(text).items() if word not in stop})
    return [word for word, _ in kept.most_common(n)]
''',
            ),
            ("replace", "tests/test_top.py", 'top("b a b c a b", 2)', 'top("b a b c a b", 2, stop=())'),
            (
                "append",
                "tests/test_top.py",
                '\n\ndef test_stop_words_left_out():\n    assert top("the cat and the hat and the cat", 2) =='
                ' ["cat", "hat"]\n',
            ),
        ],
    ),
    Commit(
        "Add a command line: top words and sentence length",
        [
            (
                "write",
                "tally/__main__.py",
                '''"""python -m tally FILE: a text's statistics."""

import sys

from tally.sentences import average_length
from tally.words import top


def report(text):
    """The lines `python -m tally` prints for `text`."""
    return [
        f"top words: {', '.join(top(text))}",
        f"words per sentence: {average_length(text):.1f}",
    ]


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    with open(argv[0], encoding="utf-8") as source:
        print("\\n".join(report(source.read())))


if __name__ == "__main__":
    main()
''',
            ),
            (
                "write",
                "tests/test_cli.py",
                """from tally.__main__ import main


def test_prints_the_report(tmp_path, capsys):
    text = tmp_path / "text.txt"
    text.write_text("The cat sat. The cat ran away.")
    main([str(text)])
    assert capsys.readouterr().out.splitlines() == [
        "top words: cat, sat, ran",
        "words per sentence: 3.5",
    ]
""",
            ),
        ],
        uses=[5, 6],
    ),
    Commit(
        "Count syllables",
        [
            (
                "write",
                "tally/syllables.py",
                '''"""Syllables of English words, estimated from their vowel groups."""

import re

VOWEL_GROUP = re.compile(r"[aeiouy]+")


def syllables(word):
    """An estimate: vowel groups, less a silent final 'e', at least 1."""
    word = word.lower()
    groups = len(VOWEL_GROUP.findall(word))
    if word.endswith("e") and not word.endswith("le") and groups > 1:
        groups -= 1
    return max(groups, 1)
''',
            ),
            (
                "write",
                "tests/test_syllables.py",
                """import pytest

from tally.syllables import syllables


@pytest.mark.parametrize(
    ("word", "expected"), [("cat", 1), ("table", 2), ("make", 1), ("rhythm", 1), ("banana", 3)]
)
def test_syllables(word, expected):
    assert syllables(word) == expected
""",
            ),
        ],
    ),
    Commit(
        "Flesch reading ease",
        [
            (
                "write",
                "tally/readability.py",
                '''"""Flesch reading ease: higher is easier (90-100 very easy, below 30 hard)."""

from tally.sentences import sentences
from tally.syllables import syllables
from tally.words import words


def reading_ease(text):
    """206.835 - 1.015 * words per sentence - 84.6 * syllables per word; None for no word."""
    found = words(text)
    if not found:
        return None
    per_sentence = len(found) / max(len(sentences(text)), 1)
    per_word = sum(syllables(word) for word in found) / len(found)
    return round(206.835 - 1.015 * per_sentence - 84.6 * per_word, 1)
''',
            ),
            (
                "write",
                "tests/test_readability.py",
                """from tally.readability import reading_ease


def test_short_words_are_easy():
    assert reading_ease("The cat sat.") == 119.2


def test_no_words():
    assert reading_ease("") is None
""",
            ),
        ],
        uses=[2, 8],
    ),
    Commit(
        "Print reading ease on the command line",
        [
            (
                "replace",
                "tally/__main__.py",
                "from tally.sentences import average_length\n",
                "from tally.readability import reading_ease\nfrom tally.sentences import average_length\n",
            ),
            (
                "replace",
                "tally/__main__.py",
                '        f"words per sentence: {average_length(text):.1f}",\n',
                '        f"words per sentence: {average_length(text):.1f}",\n'
                '        f"reading ease: {reading_ease(text)}",\n',
            ),
            (
                "replace",
                "tests/test_cli.py",
                '        "words per sentence: 3.5",\n',
                '        "words per sentence: 3.5",\n        "reading ease: 106.6",\n',
            ),
        ],
        uses=[9],
    ),
    Commit(
        "Keep apostrophes inside words",
        [
            (
                "replace",
                "tally/words.py",
                'WORD = re.compile(r"[A-Za-z]+")',
                'WORD = re.compile(r"[A-Za-z]+(?:\'[A-Za-z]+)*")',
            ),
            (
                "append",
                "tests/test_words.py",
                """

def test_apostrophes_stay_inside_words():
    assert words("Don't stop, it's 'quoted'.") == ["don't", "stop", "it's", "quoted"]
""",
            ),
        ],
    ),
    Commit(
        "Give the package a version",
        [
            ("append", "tally/__init__.py", '\n__version__ = "0.2.0"\n'),
            (
                "write",
                "tests/test_version.py",
                'import tally\n\n\ndef test_version():\n    assert tally.__version__ == "0.2.0"\n',
            ),
        ],
    ),
]


def git(cwd: Path, *args: str, env: dict | None = None) -> str:
    done = subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True, env=env)
    if done.returncode != 0:
        sys.exit(f"git {' '.join(args)} failed in {cwd}: {done.stderr.strip()}")
    return done.stdout


def new_repo(path: Path, user: str = "bench") -> Path:
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.name", user)
    git(path, "config", "user.email", "bench@ralph.invalid")
    return path


def apply_change(root: Path, change: tuple) -> None:
    kind, path = change[0], root / change[1]
    if kind == "write":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(change[2])
    elif kind == "append":
        path.write_text(path.read_text() + change[2])
    else:
        old, new = change[2], change[3]
        text = path.read_text()
        if text.count(old) != 1:
            sys.exit(f"history: {change[1]} holds {old!r} {text.count(old)} times")
        path.write_text(text.replace(old, new))


@dataclass
class History:
    real: Path  # the repository with the real history
    base: str  # the commit the replay starts from
    commits: list[str]
    subjects: list[str]
    patches: Path  # NN.patch
    deps: dict[int, list[int]]  # commit number -> the commits its patch needs


def make_history(folder: Path, count: int) -> History:
    """The real history: the base (with `ralph init` and a spec), then `count` commits (the floor
    checks that each passes the suite), and each one's diff as a patch."""
    real = new_repo(folder / "real")
    for path, text in BASE.items():
        (real / path).parent.mkdir(parents=True, exist_ok=True)
        (real / path).write_text(text)
    (real / "specs").mkdir()
    (real / "specs" / "replay.md").write_text("# Replay\n\nThe history of tally, one task per commit.\n")
    ralph(real, "init")
    git(real, "add", "-A")
    git(real, "commit", "-qm", "Start tally: split a text into words")
    base = git(real, "rev-parse", "HEAD").strip()
    patches = folder / "patches"
    patches.mkdir()
    commits, last_touch, deps = [], {}, {}
    for number, commit in enumerate(HISTORY[:count], start=1):
        for change in commit.changes:
            apply_change(real, change)
        git(real, "add", "-A")
        git(real, "commit", "-qm", commit.subject)
        commits.append(git(real, "rev-parse", "HEAD").strip())
        (patches / f"{number:02d}.patch").write_text(git(real, "diff", "--binary", "HEAD~1", "HEAD"))
        touched = git(real, "diff", "--name-only", "HEAD~1", "HEAD").split()
        needs = {last_touch[path] for path in touched if path in last_touch} | set(commit.uses)
        deps[number] = sorted(needs)
        last_touch.update(dict.fromkeys(touched, number))
    # Compiles pytest into the bench's empty byte-code cache before anything is timed.
    subprocess.run(shlex.split(GATE), cwd=real, capture_output=True, env=bench_env(**NO_PLUGINS), check=False)
    return History(real, base, commits, [commit.subject for commit in HISTORY[:count]], patches, deps)


def tree_without_plan(repo: Path, rev: str) -> str:
    """The tree of `rev` less plan.jsonl (which holds the run's records, not the project)."""
    listing = [line for line in git(repo, "ls-tree", rev).splitlines() if not line.endswith("\tplan.jsonl")]
    command = ["git", "-C", str(repo), "mktree"]
    return subprocess.run(
        command, input="\n".join(listing) + "\n", capture_output=True, text=True, check=True
    ).stdout.strip()


def bare_origin(folder: Path, history: History) -> Path:
    origin = folder / "origin.git"
    git(folder, "init", "-q", "--bare", str(origin))
    git(history.real, "push", "-q", str(origin), f"{history.base}:refs/heads/main")
    git(origin, "symbolic-ref", "HEAD", "refs/heads/main")
    return origin


def clone(origin: Path, path: Path, user: str) -> Path:
    git(origin.parent, "clone", "-q", str(origin), str(path))
    git(path, "config", "user.name", user)
    git(path, "config", "user.email", "bench@ralph.invalid")
    ralph(path, "init")  # the merge driver's config lives in .git/config, which a clone lacks
    return path


@dataclass
class Floor:
    wall: float
    suites: float  # of which the suite runs
    tree: str


def floor(folder: Path, history: History) -> Floor:
    """The same patches and suite runs in a plain loop, a commit each: wall time and final tree."""
    root = clone(bare_origin(folder, history), folder / "floor", "floor")
    env = replay_env(history)
    started = time.perf_counter()
    suites = 0.0
    for number in range(1, len(history.commits) + 1):
        subprocess.run(["git", "apply", str(history.patches / f"{number:02d}.patch")], cwd=root, check=True)
        suite_started = time.perf_counter()
        suite = subprocess.run(shlex.split(GATE), cwd=root, capture_output=True, text=True, env=env)
        suites += time.perf_counter() - suite_started
        if suite.returncode != 0:  # the history above is wrong
            sys.exit(f"the suite fails at commit {number}:\n{suite.stdout[-2000:]}")
        subprocess.run(["git", "add", "-A"], cwd=root, check=True)
        subprocess.run(["git", "commit", "-qm", f"commit {number}"], cwd=root, check=True)
    return Floor(time.perf_counter() - started, suites, tree_without_plan(root, "HEAD"))


def add_tasks(root: Path, history: History, deps: str) -> None:
    tasks = []
    for number, subject in enumerate(history.subjects, start=1):
        task = {"id": f"t-replay{number:02d}", "name": subject}
        if deps == "needed" and history.deps[number]:
            task["deps"] = [f"t-replay{n:02d}" for n in history.deps[number]]
        tasks.append(task)
    added = ralph(root, "task", "add", json.dumps(tasks))
    if added.returncode != 0:
        sys.exit(f"task add failed: {added.stderr}")


@dataclass
class Outcome:
    wall: float
    tree: str
    exits: list[int]
    events: list[dict]
    accepted: list[str]  # the ids of the tasks accepted
    done: list[str]  # the ids of the tasks built but not (yet) accepted
    notes: list[str]  # the last lines of each construct that failed
    reached_s: float | None  # when the branch first held the real tree, from the start (in seconds)


def replay_env(history: History) -> dict[str, str]:
    """The floor's and the loop's: the venv's pytest plugins (golden files, hypothesis, xdist) are
    ralph's, not tally's, and would only slow each suite run."""
    commits = {
        f"{n:02d}": {"subject": subject, "patch": (history.patches / f"{n:02d}.patch").read_text()}
        for n, subject in enumerate(history.subjects, start=1)
    }
    return bench_env(BENCH_REPLAY=json.dumps(commits), **NO_PLUGINS)


def run_mode(folder: Path, history: History, mode: str, deps: str) -> Outcome:
    origin = bare_origin(folder, history)
    seed = clone(origin, folder / "seed", "seed")
    add_tasks(seed, history, deps)
    git(seed, "push", "-q", "origin", "HEAD:main")
    runners = RUNNERS if mode == "remote" else 1
    clones = [clone(origin, folder / f"runner{n}", f"runner {n}") for n in range(runners)]
    flags = ["--agent-cmd", AGENT, "--gate", GATE, "--max-iterations", "40"]
    flags += ["--parallel", "4" if mode == "parallel" else "1"]
    outputs = [folder / f"runner{n}.out" for n in range(runners)]
    handles = [output.open("w") for output in outputs]
    started, started_at = time.perf_counter(), time.time()
    runs = [
        subprocess.Popen(
            [sys.executable, "-m", "ralph", "-C", str(root), "construct", "specs/replay.md", *flags]
            + (["--remote", "origin", "--runner", f"runner-{n}"] if mode == "remote" else []),
            env=replay_env(history),
            stdout=handle,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        for n, (root, handle) in enumerate(zip(clones, handles, strict=True))
    ]
    stopped = wait_all(runs, clones)
    wall = time.perf_counter() - started
    for handle in handles:
        handle.close()
    ended = [note(run, output, stopped) for run, output in zip(runs, outputs, strict=True)]
    final_repo, final_rev = (origin, "main") if mode == "remote" else (clones[0], "HEAD")
    events = [event for root in clones for event in journal(root)]
    records = [json.loads(line) for line in git(final_repo, "show", f"{final_rev}:plan.jsonl").splitlines()]
    accepted = [record["id"] for record in records if record.get("t") == "accept"]
    done = [record["id"] for record in records if record.get("t") == "task" and record.get("s") == "d"]
    tree = tree_without_plan(final_repo, final_rev)
    reached = reached_after(final_repo, final_rev, tree_without_plan(history.real, history.commits[-1]))
    return Outcome(
        wall,
        tree,
        [code for code, _ in ended],
        events,
        accepted,
        done,
        [note for _, note in ended if note],
        None if reached is None else reached - started_at,
    )


def reached_after(repo: Path, rev: str, real_tree: str) -> int | None:
    """The commit time of the first commit of `rev` with the real tree: when the work was all in,
    whatever the runners did after."""
    for line in git(repo, "log", "--reverse", "--format=%H %ct", rev).splitlines():
        commit, when = line.split()
        if tree_without_plan(repo, commit) == real_tree:
            return int(when)
    return None


LABELS = {
    "serial": "serial (--parallel 1)",
    "parallel": "--parallel 4",
    "remote": f"{RUNNERS} runners at --parallel 1, one bare remote",
}


def wait_all(runs: list[subprocess.Popen], clones: list[Path]) -> str:
    """Waits for every run; returns why the runs still going were stopped, if they were: after
    MODE_TIMEOUT_S, or once a runner has failed and the others' journals have not grown for
    IDLE_S (they wait out the failed runner's claims, 30 minutes)."""
    started = last_change = time.perf_counter()
    sizes: list[int] = []
    while any(run.poll() is None for run in runs):
        time.sleep(0.02)  # the wall time is taken when the last run is seen ended: keep that close
        now = time.perf_counter()
        grown = [journal_size(root) for root in clones]
        if grown != sizes:
            sizes, last_change = grown, now
        if now - started > MODE_TIMEOUT_S:
            why = f"still running after {MODE_TIMEOUT_S} s"
        elif any(run.returncode for run in runs if run.poll() is not None) and now - last_change > IDLE_S:
            why = f"idle for {IDLE_S} s after another runner failed"
        else:
            continue
        for run in runs:
            if run.poll() is None:
                os.killpg(run.pid, signal.SIGTERM)
                run.wait()
        return why
    return ""


def journal_size(root: Path) -> int:
    path = root / "build" / "ralph-logs" / "events.jsonl"
    return path.stat().st_size if path.exists() else 0


def note(run: subprocess.Popen, output: Path, stopped: str) -> tuple[int, str]:
    """Its exit code and, when it failed, a note with its last lines."""
    if run.returncode == 0:
        return 0, ""
    why = (
        f" ({stopped}: stopped)"
        if stopped and run.returncode in (128 + signal.SIGTERM, -signal.SIGTERM)
        else ""
    )
    tail = "\n      ".join(line[:200] for line in output.read_text(errors="replace").splitlines()[-4:])
    return run.returncode, f"a construct exited {run.returncode}{why}; its last lines:\n      {tail}"


def journal(root: Path) -> list[dict]:
    path = root / "build" / "ralph-logs" / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def report(mode: str, outcome: Outcome, floors: list[Floor], real_tree: str, commits: int) -> None:
    """Every commit needs one BUILD and one VERIFY run, and the spec one CHECK that finds nothing
    missing (the construct spec ends a run COMPLETE only after it); every other run is wasted:
    failed or unmerged builds, the DECOMPOSE runs they led to, the runs of the subtasks a
    decomposition adds only to have two, checks that were stopped."""
    runs = Counter(e["stage"] for e in outcome.events if e["event"] == "agent_end")
    total = sum(runs.values())
    # One BUILD and one VERIFY per commit were kept: each accepted task's, and a built task's BUILD.
    built = sum(1 for task_id in outcome.accepted + outcome.done if not task_id.endswith("-check"))
    verified = sum(1 for task_id in outcome.accepted if not task_id.endswith("-check"))
    checked = sum(1 for e in outcome.events if e["event"] == "spec_checked")
    wasted = total - built - verified - checked
    failed = Counter(e.get("verdict", "?") for e in outcome.events if e["event"] == "build_failed")
    gates = sum(1 for e in outcome.events if e["event"] == "gate_end")
    kills = sum(1 for e in outcome.events if e["event"] == "task_killed")
    not_merged = sum(1 for e in outcome.events if e["event"] == "build_not_merged")
    beside = sum(1 for e in outcome.events if e["event"] == "build_stale_base")  # uncounted, rebuilt
    # A run on a stale base: a build attempt that started where the branch had already moved past.
    stale = sum(1 for e in outcome.events if e["event"] == "build_attempt" and e.get("behind"))
    same = outcome.tree == real_tree
    floor_s = sum(f.wall for f in floors) / len(floors)
    ratio = outcome.wall / floor_s
    exits = ",".join(str(code) for code in outcome.exits)
    print(
        f"{LABELS[mode]}: wall {outcome.wall:.2f} s, floor {floor_s:.2f} s"
        f" ({' and '.join(f'{f.wall:.2f}' for f in floors)} before and after): {ratio:.2f}x, exit {exits}"
    )
    print(
        f"  final tree {'equals' if same else 'DIFFERS from'} the real last commit's ({outcome.tree[:12]});"
        f" {len(outcome.accepted)} tasks accepted and {len(outcome.done)} done,"
        f" {built} of them building one of the {commits} commits"
    )
    if outcome.reached_s is not None and outcome.exits != [0] * len(outcome.exits):
        print(f"  the real tree was in after {outcome.reached_s:.0f} s (commit times: whole seconds)")
    for note in outcome.notes:
        print(f"  {note}")
    stages = ", ".join(f"{stage} {n}" for stage, n in sorted(runs.items()))
    per_task = total / len(outcome.accepted) if outcome.accepted else float("nan")
    per_commit = total / commits
    print(
        f"  agent runs {total} ({stages}): {per_task:.2f} per accepted task,"
        f" {per_commit:.2f} per commit (ideal 2, and one CHECK)"
    )
    verdicts = ", ".join(f"{verdict} {n}" for verdict, n in sorted(failed.items())) or "none"
    print(
        f"  wasted runs {wasted} (beyond one BUILD and one VERIFY per commit and one passing CHECK):"
        f" failed builds {sum(failed.values())} ({verdicts}),"
        f" builds that failed beside a neighbour whose change they needed {beside} (built again once it"
        f" merged), builds started on a stale base {stale},"
        f" builds not merged {not_merged}, tasks killed {kills}, DECOMPOSE runs {runs['DECOMPOSE']}"
    )
    print(f"  suite runs {gates} (the floor: {commits}), {gates - commits} extra")
    if mode == "serial":
        _where_the_time_went(outcome, floors, commits)
    fast = "met" if ratio <= 1.15 else "NOT met"
    print(
        "  targets: no run wasted on a stale base: "
        + ("met" if not stale else "NOT met")
        + (f"; serial wall within 1.15x of the floor: {fast}" if mode == "serial" else "")
    )


def _where_the_time_went(outcome: Outcome, floors: list[Floor], commits: int) -> None:
    """One run at a time, the wall time splits into the suite runs, the agent runs (the scripted
    agent's process and the `ralph task done` or `accept` it calls: a plain loop that ran an agent
    would pay the first part too) and the rest, which is the loop's own work."""
    suites = sum(e["duration_s"] for e in outcome.events if e["event"] == "gate_end")
    agents = sum(e["duration_s"] for e in outcome.events if e["event"] == "agent_end")
    own = outcome.wall - suites - agents
    floor_suites = sum(f.suites for f in floors) / len(floors)
    floor_rest = sum(f.wall - f.suites for f in floors) / len(floors)
    print(
        f"  time: suite runs {suites:.2f} s (the floor's {floor_suites:.2f} s), agent runs {agents:.2f} s,"
        f" the loop's own {own:.2f} s ({own / commits * 1000:.0f} ms a commit; the floor's git apply"
        f" and commit {floor_rest / commits * 1000:.0f} ms a commit)"
    )
    # What the loop adds is about the same per commit whatever the suite costs (the suite runs
    # once a commit in both): the ratio falls as a suite run takes longer. Computed, not measured.
    excess = (outcome.wall - sum(f.wall for f in floors) / len(floors)) / commits
    suite_run = floor_suites / commits
    print(
        f"  the loop adds {excess * 1000:.0f} ms a commit over the floor: within 1.15x of it where a"
        f" suite run takes {max(0.0, excess / 0.15 - floor_rest / commits):.1f} s or more"
        f" (this subject's takes {suite_run:.2f} s)"
    )


@contextlib.contextmanager
def scratch_folder(prefix: str, parent: str | None, keep: bool) -> Iterator[str]:
    if keep:
        yield tempfile.mkdtemp(prefix=prefix, dir=parent)
    else:
        with tempfile.TemporaryDirectory(prefix=prefix, dir=parent) as folder:
            yield folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=len(HISTORY), help=f"1 to {len(HISTORY)}")
    parser.add_argument("--modes", default="serial,parallel,remote")
    parser.add_argument("--deps", choices=("none", "needed"), default="none")
    parser.add_argument("--keep", action="store_true", help="keep the repositories and print where")
    args = parser.parse_args()
    modes = [mode for mode in args.modes.split(",") if mode]
    if not 1 <= args.commits <= len(HISTORY) or set(modes) - {"serial", "parallel", "remote"}:
        parser.error(f"--commits is 1 to {len(HISTORY)}; --modes is a list of serial, parallel, remote")
    ralph(Path.cwd(), "--version")  # fill the bytecode cache before anything is timed
    with scratch_folder("ralph-bench-replay-", None, args.keep) as folder:
        if args.keep:
            print(f"repositories kept in {folder}")
        history = make_history(Path(folder), args.commits)
        real_tree = tree_without_plan(history.real, history.commits[-1])
        needs = sum(1 for n in history.deps.values() if n)
        print(
            f"replay of {args.commits} commits of tally ({needs} of them build on an earlier one),"
            f" gate `pytest -q`, deps {args.deps}; the floor (git apply + suite + commit per commit, in a"
            " plain loop) is measured before and after each mode, the machine's load being what it is:"
        )
        floors = [floor_once(folder, history, real_tree, args.keep)]
        for mode in modes:
            with scratch_folder(f"{mode}-", folder, args.keep) as scratch:
                outcome = run_mode(Path(scratch), history, mode, args.deps)
            floors.append(floor_once(folder, history, real_tree, args.keep))
            report(mode, outcome, floors[-2:], real_tree, args.commits)


def floor_once(folder: str, history: History, real_tree: str, keep: bool) -> Floor:
    with scratch_folder("floor-", folder, keep) as scratch:
        measured = floor(Path(scratch), history)
    if measured.tree != real_tree:
        sys.exit(f"the floor's tree {measured.tree} is not the real one {real_tree}")
    return measured


if __name__ == "__main__":
    main()
