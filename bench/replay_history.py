"""What bench_replay.py replays: a project's real history, one commit per task. A subject module
(replay_tally.py, replay_releases.py) writes its history into a repository through `Recorder`,
which commits each step, keeps its diff as a patch and works out which earlier commits it needs
(the last earlier commit to touch each of its files, and any the subject names)."""

from __future__ import annotations

import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from bench_construct import bench_env, ralph

GATE = f"{shlex.quote(sys.executable)} -m pytest -q"
# The venv's pytest plugins (golden files, hypothesis, xdist) are ralph's, not the subject's, and
# would only slow each suite run (the floor's and the loop's alike).
NO_PLUGINS = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}


@dataclass
class History:
    name: str  # what the report calls it: "12 commits of tally"
    real: Path  # the repository with the real history
    base: str  # the commit the replay starts from
    patches: Path  # NN.patch, one a commit
    commits: list[str] = field(default_factory=list)
    subjects: list[str] = field(default_factory=list)
    deps: dict[int, list[int]] = field(default_factory=dict)  # commit number -> the commits it needs


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


class Recorder:
    """Builds a History: start() commits the base (the subject's first state, a spec and
    `ralph init`); each step() commits the work tree as the subject left it."""

    def __init__(self, real: Path, patches: Path):
        self.real, self.patches = real, patches
        self.last_touch: dict[str, int] = {}
        self.history: History | None = None

    def start(self, name: str, subject: str, spec: str) -> None:
        (self.real / "specs").mkdir(exist_ok=True)
        (self.real / "specs" / "replay.md").write_text(spec)
        ralph(self.real, "init")
        git(self.real, "add", "-A")
        git(self.real, "commit", "-qm", subject)
        self.history = History(
            name, self.real, git(self.real, "rev-parse", "HEAD").strip(), patches=self.patches
        )

    def step(self, subject: str, uses: list[int] | tuple[int, ...] = ()) -> None:
        history = self.history
        assert history is not None, "start() first"
        number = len(history.commits) + 1
        git(self.real, "add", "-A")
        git(self.real, "commit", "-qm", subject)
        history.commits.append(git(self.real, "rev-parse", "HEAD").strip())
        history.subjects.append(subject)
        diff = git(self.real, "diff", "--binary", "HEAD~1", "HEAD")
        (self.patches / f"{number:02d}.patch").write_text(diff)
        touched = git(self.real, "diff", "--name-only", "HEAD~1", "HEAD").split()
        needs = {self.last_touch[path] for path in touched if path in self.last_touch} | set(uses)
        history.deps[number] = sorted(needs)
        self.last_touch.update(dict.fromkeys(touched, number))

    def done(self) -> History:
        assert self.history is not None, "start() first"
        # Compiles pytest (and the subject) into the bench's byte-code cache before anything is timed.
        env = bench_env(**NO_PLUGINS)
        subprocess.run(shlex.split(GATE), cwd=self.real, capture_output=True, env=env, check=False)
        return self.history
