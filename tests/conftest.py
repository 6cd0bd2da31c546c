"""Shared fixtures: every test runs in its own temporary git repository with a pinned identity.
The helpers they use, and that test modules import, are in tests/support/."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from tests.support.cli import Ralph
from tests.support.construct import stop_ralph_server
from tests.support.gitrepo import Shared, git, isolate_git, refreshed, slimmed

# Hypothesis profiles. `verify` (the default; `make verify`) is derandomized: each property test
# draws the same examples on every run, so the gate gives the same answer twice on one commit.
# `e2e` (`make e2e`, `pytest --hypothesis-profile=e2e`) draws new random examples each run and
# keeps failures in .hypothesis/ to replay them first next time. Tests that pin max_examples keep
# their count in both; the long property runs are separate tests marked slow.
settings.register_profile(
    "verify",
    derandomize=True,
    database=None,
    print_blob=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "e2e",
    derandomize=False,
    max_examples=1000,
    print_blob=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("verify")  # --hypothesis-profile (applied after this file loads) overrides it


def pytest_configure(config: pytest.Config) -> None:
    # The tests start thousands of `python -m ralph` processes. Where the environment forbids
    # writing bytecode (PYTHONDONTWRITEBYTECODE), each would compile ralph from source again: give
    # them a shared cache outside the tree instead, as an installed ralph has.
    if os.environ.pop("PYTHONDONTWRITEBYTECODE", None):
        import tempfile

        os.environ.setdefault("PYTHONPYCACHEPREFIX", str(Path(tempfile.gettempdir()) / "ralph-tests-pycache"))


# The longest tests (each several seconds of one CPU) start first. Workers take tests in this order
# as they come free, so one of them left for the end (the demo came last, by its name) ran on alone
# after the others had finished: the suite's wall time was the rest plus that one.
RUN_FIRST = (
    "tests/test_demo.py",
    "tests/usecases/test_properties.py::test_commands_keep_every_line_they_do_not_change",
    "tests/usecases/test_properties.py::test_task_add_never_crashes",
    "tests/plan/test_models_schema.py::test_validator_agrees_with_pydantic",
    "tests/loop/test_construct.py",
    "tests/loop/test_loop_safety.py",
    "tests/loop/test_questions.py",
    "tests/loop/test_stage_runs.py",
    "tests/plan/test_merge.py",
    "tests/loop/test_failure_reasons.py",
    "tests/loop/test_secrets.py",
    "tests/loop/observe/test_live.py",
    "tests/loop/test_terminal_escapes.py",
    "tests/loop/test_plan_reads.py",
    "tests/loop/process/test_sandbox.py",
    "tests/loop/test_stops.py",
    "tests/loop/test_unknown_changes.py",
)


# Tests that spend most of their time waiting (a time limit to run out, a retry's pause, a hook
# that hangs): one next to another left both CPUs idle for seconds at a time. They are spread out
# among the CPU-bound tests of RUN_FIRST instead, the longest waits first.
WAITING = (
    "tests/loop/process/test_hooks.py::test_a_failing_hanging_or_missing_hook_is_journalled_and_the_run_completes",
    "tests/loop/test_many_machines.py::test_two_runners_on_a_spec_with_no_tasks_plan_it_once",
    "tests/loop/test_many_machines.py::test_two_runners_on_one_issue_investigate_it_once",
    "tests/loop/test_many_machines.py::test_two_runners_decompose_a_killed_task_once",
    "tests/loop/process/test_supervisor.py::test_output_reaches_the_log_while_the_child_still_runs",
    "tests/loop/stages/test_build_parallel.py::test_tasks_with_overlapping_scopes_are_not_built_at_the_same_time",
    "tests/loop/test_construct.py::test_timeout_kills_agent_and_grandchild_then_decomposes",
    "tests/loop/test_stage_runs.py::test_a_hanging_investigator_is_stopped_recorded_told_and_parked_at_the_limit",
    "tests/loop/test_construct.py::test_parallel_verify_overlaps_and_the_loop_ends",
    "tests/loop/test_stage_runs.py::test_a_verifier_stopped_at_the_limit_sets_the_task_aside_and_the_rest_goes_on",
    "tests/loop/test_stage_runs.py::test_a_stopped_plan_run_keeps_nothing_says_why_and_a_finished_one_clears_it",
    "tests/loop/process/test_supervisor.py::test_a_timeout_stops_the_child_and_its_grandchild",
    "tests/loop/observe/test_watch.py::test_status_and_watch_follow_a_running_construct_to_its_end",
    "tests/loop/test_construct.py::test_a_rate_limit_is_waited_out_and_is_not_an_attempt",
    "tests/store/test_user_safety.py::test_a_stale_index_lock_changes_nothing_and_says_so",
    "tests/loop/test_construct.py::test_context_warning_is_given_once_per_run",
    "tests/loop/test_construct.py::test_context_pressure_warns_then_compacts_and_the_task_continues",
    "tests/loop/process/test_gate.py::test_a_gate_that_runs_too_long_fails_as_timed_out",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item, order: tuple[str, ...]) -> int:
        ranks = (i for i, prefix in enumerate(order) if item.nodeid.startswith(prefix))
        return next(ranks, len(order))

    # Sorted and spread the same way in every worker, as xdist requires.
    waits = {item.nodeid: rank(item, WAITING) for item in items}
    waiting = sorted(
        (item for item in items if waits[item.nodeid] < len(WAITING)), key=lambda i: waits[i.nodeid]
    )
    firsts = {item.nodeid: rank(item, RUN_FIRST) for item in items if waits[item.nodeid] == len(WAITING)}
    others = sorted((item for item in items if item.nodeid in firsts), key=lambda i: firsts[i.nodeid])
    every = max(1, sum(r < len(RUN_FIRST) for r in firsts.values()) // max(1, len(waiting)))
    spread: list[pytest.Item] = []
    for index, item in enumerate(others):
        if index % every == 0 and waiting:
            spread.append(waiting.pop(0))
        spread.append(item)
    items[:] = spread + waiting


def pytest_collection_finish(session: pytest.Session) -> None:
    """What collection built (pytest's nodes, the test modules and what they import) lives to the
    end of the run: frozen, the garbage collector's passes stop walking it. Measured with
    gc.callbacks in `make test`: 4.0 CPU-s in the collector over the five workers, 2.2 frozen."""
    import gc

    gc.collect()
    gc.freeze()


# Modules whose tests share a fixture made once per module (their repository takes some 20 commands
# to build, and the tests only read it or copy it): run in one worker, it is built once, not once in
# each of the five (tests/cli/test_log.py's history was 550 git runs and 1.5 CPU-s of the suite).
# The checks of the layout and of the map of the code share what they parsed of each module
# (tests/test_layout.py's summary, tests/support/architecture.py's docstrings): in one worker,
# ralph/ is parsed once for them all, not once per test (4 CPU-s of the suite, now 1).
ONE_WORKER_MODULES = (
    "tests/cli/test_log.py",
    "tests/cli/test_json_output.py",
    "tests/test_layout.py",
    "tests/test_architecture.py",
)


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist, which a plain `pytest` may run without
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """With pytest-xdist's --dist loadgroup: tests go to whichever worker is free, except the tests
    of the real agent CLIs (tests/e2e/), which run one after another in one worker. They share the
    CLIs installed in .e2e-cache/, and some look for leftover processes of a CLI, which another
    test's run of that CLI would be. The tests of each of ONE_WORKER_MODULES go to one worker too.
    (xdist's own xdist_group marks do not group anything with pytest 9.2:
    pytest-dev/pytest-xdist#1386.)"""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling  # type: ignore[import-untyped]  # pytest-xdist has no types

    class AgentCliTestsTogether(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            if nodeid.startswith("tests/e2e/"):
                return "tests/e2e"
            module = nodeid.split("::", 1)[0]
            return module if module in ONE_WORKER_MODULES else nodeid

    return AgentCliTestsTogether(config, log)


def pytest_sessionfinish(session: pytest.Session) -> None:
    stop_ralph_server()  # waited for, so that its CPU time counts in what `time make test` measures


@pytest.fixture(autouse=True)
def _isolated_git(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test reads the developer's git config or writes outside its temp directories."""
    isolate_git(monkeypatch, tmp_path_factory.mktemp("gitconfig"))


@pytest.fixture(autouse=True)
def _no_assertion_pass_hook(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """pytest-golden implements pytest_assertion_pass, so pytest formats the operands of every
    passing assert in rewritten modules: Hypothesis (a pytest plugin, so rewritten) asserts
    thousands of times per example, and property tests ran 10-20 times slower. pytest-golden uses
    the hook only to record where to write new values (--update-goldens): only then is it on."""
    if not request.config.getoption("--update-goldens", default=False):
        from _pytest.assertion import util

        monkeypatch.setattr(util, "_assertion_pass", None)


@pytest.fixture
def bare_repo(tmp_path: Path) -> Path:
    """An empty git repository (no commits)."""
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    return root


@pytest.fixture(scope="session")
def _initialized_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The repository `repo` hands out, made once per test process: one commit, `ralph init` done."""
    root = tmp_path_factory.mktemp("template") / "repo"
    root.mkdir()
    with pytest.MonkeyPatch.context() as monkeypatch:
        isolate_git(monkeypatch, tmp_path_factory.mktemp("gitconfig"))
        git(root, "init", "-q")
        (root / "README").write_text("a project\n")
        git(root, "add", "README")
        git(root, "commit", "-qm", "initial")
        from ralph.usecases import initialize

        initialize.init(root)  # commits .gitignore (it was clean) and plan.jsonl
        slimmed(root, pack=True)  # copied by most tests
    return root


@pytest.fixture
def repo(tmp_path: Path, _initialized_repo: Path) -> Path:
    """A git repository with one commit and `ralph init` done: a fresh copy for each test (making
    one takes about ten git runs)."""
    root = tmp_path / "repo"
    shutil.copytree(_initialized_repo, root, symlinks=True)
    return refreshed(root)  # the copies' inodes and ctimes differ from the index's


@pytest.fixture(scope="session")
def _shared_templates(tmp_path_factory: pytest.TempPathFactory, _initialized_repo: Path):
    """Shared repositories (a seed, its remote, clones) made once per test process by a builder
    given its seed (a copy of `repo`) and the folder to make them in; `shared_copy` copies them."""
    made: dict[str, Shared] = {}

    def template(key: str, build: Callable[[Path, Path], Shared]) -> Shared:
        if key not in made:
            base = tmp_path_factory.mktemp(f"shared-{key}")
            seed = base / "repo"
            shutil.copytree(_initialized_repo, seed, symlinks=True)
            with pytest.MonkeyPatch.context() as monkeypatch:
                isolate_git(monkeypatch, tmp_path_factory.mktemp("gitconfig"))
                git(seed, "update-index", "-q", "--refresh")
                made[key] = build(seed, base)
                for repository in base.iterdir():  # the seed, its remote and clones
                    if (repository / ".git").is_dir() or (repository / "HEAD").is_file():
                        slimmed(repository)
                    if (repository / ".git").is_dir():  # copies are refreshed as clean (`refreshed`)
                        dirty = git(repository, "status", "--porcelain", "--untracked-files=no")
                        assert not dirty, f"template {key}: {repository.name} has changes: {dirty}"
        return made[key]

    return template


@pytest.fixture
def shared_copy(_shared_templates, tmp_path: Path) -> Callable[[str, Callable[[Path, Path], Shared]], Shared]:
    """`shared_copy(key, build)`: a fresh copy, in tmp_path, of the repositories `build(seed, base)`
    made under `key` (once per test process): a seed, its remote and clones (Shared.copy_of)."""
    return lambda key, build: Shared.copy_of(_shared_templates(key, build), tmp_path)


@pytest.fixture
def ralph(repo: Path) -> Ralph:
    return Ralph(repo)


@pytest.fixture
def shared(repo: Path, tmp_path: Path) -> Shared:
    return Shared(repo, tmp_path)
