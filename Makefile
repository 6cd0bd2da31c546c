# One virtualenv per checkout; every target installs what it needs into it.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: install sandbox verify lint test e2e bench bench-replay demo demo-draft schema docs clean

# Editable as a plain path in a .pth file: pyproject.toml's package-dir makes it setuptools' static
# strategy. An import hook (its default for a flat layout) is loaded by every Python start in the
# venv: 16 ms instead of 7 for `python -c pass`, paid by each of the some 600 Python processes
# (agents, gates, ralph) a test run starts. (The compat mode that did this before warns that it is
# going away.) The distribution was called ralph before it was ralph-construct: a venv made then
# drops it first, so that one distribution owns bin/ralph.
$(STAMP): pyproject.toml Makefile
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip uninstall -q -y ralph 2>/dev/null || true
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

## sandbox: install bubblewrap (bwrap), which fences agents and gates, when missing (apt-get, as root)
# tmux comes along: the live view's tests drive ralph in tmux panes as a person would (they skip without it).
sandbox:
	@if command -v bwrap >/dev/null && command -v tmux >/dev/null; then echo "bubblewrap: $$(command -v bwrap)"; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap tmux >/dev/null \
		&& echo "bubblewrap: installed $$(command -v bwrap)"; } \
		|| echo "could not install bubblewrap: ralph runs agents unfenced, and the sandbox tests skip" >&2; \
	else echo "bubblewrap is missing: install it with your package manager (apt-get install bubblewrap, dnf install bubblewrap); until then ralph runs agents unfenced" >&2; fi

## verify: the quality gate: lint, the schema is current, then every fast test
verify: lint test

# mypy checks ralph/, tests/ and bench/ as pyproject.toml's [tool.mypy] says (strict flags over all of
# ralph; the tests' fakes subclass what they fake, so they keep its signatures). Its
# cache (.mypy_cache, ignored by git) keeps a run after a one-file edit at ~1 s; without it, ~15 s
# (29 Nov 2026, 372 files: 6.2 CPU-s cold, 3.3 of them for ralph/ alone; 0.2-0.5 CPU-s warm).
lint: $(STAMP)
	$(VENV)/bin/ruff check ralph tests bench
	$(VENV)/bin/ruff format --check ralph tests bench
	$(VENV)/bin/mypy

# Tests run in parallel processes (pytest-xdist), two per CPU and one more: many loop tests spend
# part of their time waiting on agents, gates, time limits and retries (on 2 CPUs, one commit: 3
# workers 46 s, 4 workers 42 s, 5 workers 39 s, 6 workers 39 s). WORKERS=0: all in this process.
# The suite is CPU-bound: on 2 idle CPUs its wall time is about its CPU time over 2. A whole-system
# profile of one run (30 Nov 2026): git processes about a quarter of the CPU (some 21,000 runs,
# nearly all of each run's cost starting it), the scripted agents' and ralph's other Python
# processes a third, the five pytest workers a quarter; per test it is spread thin (no test over
# 2.5 CPU-s). So the loop's logic is tested in process: a construct run a test waits for runs in
# the worker (tests/support/construct.py), the stages' logic with the in-process fakes of
# tests/loop/test_stages_in_process.py, the agents' ralph commands in forks of one server
# (tests/support/scripts/ralph_server.py). make test keeps one real-process run per behaviour
# that is about processes; make e2e has the others (named at e2e below).
# Figures, idle 2-core machines (the history of each change is in CHANGELOG.md and git log):
#   29 Nov 2026: 1766 tests, 87 s (~170 CPU-s); after the moves to make e2e, 1886 tests, 58 s.
#   30 Nov 2026: 2060 tests, 51-62 s (104-119 CPU-s). Later that day on a fresh machine (a new
#   VM): 68 s without bubblewrap (the sandbox tests skip), 70-86 s with it (131-160 CPU-s).
#   At the minute on the first, over it on the second. Next day on the second: 61-82 s idle
#   (2064 tests; the same commit varies by 20 s from run to run), 17,797 git runs instead of
#   19,078 (a judge's inputs in one run, loose objects read without git); 3 or 4 workers no faster.
#   Later on 30 Nov, same VM: 2074 tests, 66-77 s (about 134 CPU-s: 102 user, 28-32 system); of the
#   17,800 git runs, 3,100 are the tests' own (tests/support/gitrepo.git), the rest ralph's.
#   Next session, same VM: 2082 tests, 72-75 s (138 CPU-s) before, then 60-67 s (114-130 CPU-s)
#   once ralph's start-up and the ralph server's forks no longer ran the garbage collector over
#   what they had loaded (ralph.cli.main, tests/support/scripts/ralph_server.py). The rest is
#   mostly processes: some 15,000 git runs of ralph's and 3,000 of the tests', a third of the CPU.
#   The session after, same VM, same commit: 72-78 s (135-141 CPU-s; 4 workers 74 s, 3 workers
#   79 s). By process (each git run's CPU through a wrapper, each Python process's at its exit):
#   the five workers 47 CPU-s (collection about 7 of it), git about 40 (18,000 runs, 2.2 ms each,
#   nearly all of it starting git), ralph as a process of its own 22 (82 runs, with their
#   children), the agents of the in-process runs 15, the ralph server's forks 6.
#   The session after, same VM: 29 real runs whose behaviour a cheaper test keeps moved to
#   make e2e (named there), 21 new in-process or unit tests in their place: 2076 tests. Paired with
#   the session's start in the same minutes, six pairs: +4% to -11% of the CPU, median -5% (about
#   138-147 CPU-s); alone, 64-86 s as the VM's speed drifted within the hour. Forking the fake
#   agent from the worker instead of starting a Python cost more (a fork of a 200 MB worker and
#   its teardown: 6.2 against 4.9 CPU-s for test_loop_safety.py); the other levers measured were
#   each under 2%. Under a minute needs about 115 CPU-s, and what is left is spread over the tests
#   that start processes.
#   The session after, same VM: 22 more tests whose behaviour a cheaper test keeps moved to
#   make e2e (named there), with REVIEW in the stage fakes and AgentRuns over scripted runs in their
#   place: 2034 tests. Paired with the session's start in the same minutes, three pairs: 58-61 s
#   (111-115 CPU-s) against 65-73 s (121-138 CPU-s), 8-17% less CPU.
#   At its last commit (2052 tests, the record properties by kind): 58.4 s and 59.0 s, 113 CPU-s.
#   The session after, same VM: the terminal-escape and TERM=dumb runs in process, cheaper sandbox
#   and loop set-ups: 2053 tests, 50.6-53.9 s (98-101 CPU-s) against 53.8-56.0 s (101-106 CPU-s)
#   for the session's start in the same hour.
# loadgroup: tests go to whichever worker is free, except the agent CLI tests (tests/e2e/), which
# run in one worker, one after another (see pytest_xdist_make_scheduler in tests/conftest.py).
WORKERS ?= $(shell echo $$(( 2 * $$(getconf _NPROCESSORS_ONLN) + 1 )))
XDIST = -n $(WORKERS) --dist loadgroup
# The slow suites keep one worker per CPU and one more: some measure timing (SIGKILL at moments
# aimed from the runs before), which five workers on two CPUs made too noisy to aim.
E2E_WORKERS ?= $(shell echo $$(( $$(getconf _NPROCESSORS_ONLN) + 1 )))

# Byte-code is written and read as usual (__pycache__ beside the sources, ignored by git) even where
# the shell sets PYTHONDONTWRITEBYTECODE: compiling the test modules again in every worker cost about
# 3 s of CPU per worker. Not under a PYTHONPYCACHEPREFIX: there, every worker of a fresh checkout
# compiled the standard library and every dependency again too (44 s instead of 39 s).
# The tests' temporary repositories go to memory where there is a tmpfs (/dev/shm): writing, and
# later deleting, some 30,000 small git files per run cost 5-12 s of system time on disk (pytest
# keeps the last three runs' folders, about 120 MB each). Mode 711: a test runs ralph as another
# user in a folder of its own there.
TEST_TMPDIR := $(shell d=/dev/shm/ralph-tests-$$(id -u); mkdir -p -m 711 $$d 2>/dev/null && echo $$d)
PYTEST = env -u PYTHONDONTWRITEBYTECODE -u PYTHONPYCACHEPREFIX \
	$(if $(TEST_TMPDIR),TMPDIR=$(TEST_TMPDIR)) $(VENV)/bin/pytest

# Each pytest worker rewrites the asserts of every test module it imports and caches the result
# beside it: on a fresh checkout five workers did that at once, each for every module (5 s of the
# suite, 45 s instead of 40). One collection in one process first (2 s) writes what they then read;
# again only when a test file changed. Its failures show in the run that follows, so none here.
REWRITTEN := build/.tests-rewritten
$(REWRITTEN): $(STAMP) $(shell find tests -name '*.py' 2>/dev/null)
	@mkdir -p build
	@$(PYTEST) -q --collect-only -p no:xdist -p no:cacheprovider >/dev/null 2>&1 || true
	@touch $@

test: $(STAMP) $(REWRITTEN)
	$(PYTEST) -q -m "not slow" -p no:cacheprovider $(XDIST) --hypothesis-profile=verify

## e2e: the slow end-to-end suites (property tests on new random examples each run)
# make e2e holds the tests marked slow: the long property runs (*_long), 16-process concurrency,
# SIGKILL at each step of the plan transaction, each git step of a merge and of a commit killed or
# out of disk, and the real-process runs of a behaviour whose neighbours make test runs. Moved there
# on 29 Nov 2026 (issue 34, make test under a minute): the person-edit races but a person's commands
# during a worktree build, beside a dead run and during a killed plan (loop/test_person_edits.py);
# parallel builds but the ready tasks built at once, the out-of-scope build, a person's branches at
# the start and a stop beside a person's edit (loop/stages/test_build_parallel.py); drafts but the
# interrupted build's and the killed build's (loop/test_drafts.py); the
# kills and full disks of test_interrupted_changes.py but the commit's first step;
# the odd agent moves but a moved branch and a worktree removed at the last attempt
# (loop/test_odd_moves.py); both demos; test_failure_reasons.py; loop/test_plan_only_code.py's sandbox
# runs, its investigator and its unfenced person's edit; the timeout kill (process/test_supervisor.py
# keeps the child and grandchild stop), the verify interrupt, the compacted verifier and the
# investigate-from-config run (loop/test_construct.py); two-runner decompose and verify batches
# (loop/test_many_machines.py); sandbox: the unfenced control batteries, a folder for the plan lock,
# the serial judge, the sandbox_hide notice (loop/process/test_sandbox.py); and single runs of
# loop/test_stage_runs.py, stages/test_agent_errors.py, stages/test_check.py, runs/test_cost.py,
# test_loop_safety.py, test_questions.py, test_plan_reads.py, test_report_json.py,
# test_pull_request.py (GitLab), stages/test_decompose.py, test_bookkeeping_commits.py,
# test_unknown_changes.py, observe/test_watch.py (the live region) and cli/test_drafts.py; the review
# by aspect but a clean review, a round with findings, an aspect file a build rewrote and review-only
# (loop/stages/test_review.py); the wheel
# builds of test_distribution.py, the editable ralph inside the work tree and the moved nested
# repositories of loop/process/test_sandbox.py. Later that day (1966 tests), of the sandbox's grids
# of fence by attack, make test keeps a diagonal: the pre-commit hook rewritten fenced and removed
# unfenced, the nested repository embedded fenced and cloned unfenced, the forge of ralph's own
# record in a worktree build; the other pairs and the serial forge moved here. So did a build that
# accepts its own task (loop/test_loop_safety.py; its rule is checked in process in
# runs/test_permissions.py, the undo for real by a build that commits) and the test task's type
# (loop/test_task_types.py; in process in test_stages_in_process.py). At 13:00, the real runs whose
# behaviour make test has elsewhere: the spec check that adds nothing and the one whose agent fails
# (stages/test_check.py; in process in test_stages_in_process.py), a PLAN that writes code at every run
# (loop/test_plan_only_code.py; its halves there and in test_early_end.py), the ralph/draft branch
# conflict (loop/test_loop_safety.py; the same check as ralph's) and the docs and refactor tasks' real
# run (loop/test_task_types.py; in process, HEAD's paths from real git in store/git/test_changes.py).
# Next session, the same, each named beside it with the test that keeps it: the fenced plan-lock
# link (test_sandbox.py; unfenced kept), the dirty-tree refusal and the gate's variables
# (test_construct.py), the config an agent changed, the command line's agent and a dead loop's lock
# (test_loop_safety.py), a taken-over build's patch (test_many_machines.py; its neighbour checks the
# patch now), the default parallel under a budget (runs/test_cost.py) and a claim older than the TTL
# (usecases/test_claims.py). Later the same session, each with a new in-process test named beside it:
# the context kill, the stop in the gate and the time budget spent between runs (test_construct.py),
# the stopped PLAN (test_stage_runs.py) and doctor's fix of an interrupted merge
# (test_interrupted_changes.py). Then the same way: a fenced agent's operations in
# its build commit, the user's file turning the sandbox off and `auto` without one (test_sandbox.py),
# SIGINT from a parent that ignores it (test_construct.py; a test of the harness's default_signals),
# a second loop's refusal, a gate's output in history and a task's notes in the prompt
# (test_loop_safety.py), the report's words for a rejected task (observe/test_watch.py) and two
# replays over a decomposition (usecases/test_replay.py). Next, each with a cheaper test named beside
# it: a build outside its scope and a person's ralph/ branches at a parallel run's start and end
# (stages/test_build_parallel.py), a file whose name is not UTF-8 in the build commit
# (test_loop_safety.py), and release and a live claim's TTL (usecases/test_claims.py).
# Next session, each with a cheaper test named beside it: every default review aspect once and the
# critical-only round (stages/test_review.py; in process, test_stages_in_process.py), a rate limit,
# compaction, the context warning and each stage's model (test_construct.py, runs/test_cost.py; in
# process over the real AgentRunner, stages/test_retries.py), and five smaller runs: signed commits
# (test_loop_safety.py), a hook never running a work-tree program (process/test_hooks.py), invalid
# UTF-8 arguments (store/test_user_safety.py), a command beside a dead run (store/test_beside.py) and
# the reference module run as make docs runs it (cli/test_reference.py).
# Later the same session, each named beside it with what keeps it: every hook event's JSON
# (process/test_hooks.py), the JSON report's null cost (test_report_json.py), a killed run read as not
# running (observe/test_watch.py), one runner's draft on the remote (test_drafts.py), five clock, race
# and refusal tests of usecases/test_claims.py and store/test_claim_clock.py, and the uncommitted
# case of ralph check's first problem (plan/test_malformed.py), a scoped task's coverage in the
# reports (test_coverage.py; in process and from a committed plan). test_replay.py's two-runner
# sequences run their bench wedge alone here, the generated ones in the _long_run.
# The session after, each named beside it with what keeps it: the six terminal channels of a real
# run on a pseudo-terminal (test_terminal_escapes.py) and TERM=dumb's run (observe/test_live.py),
# kept in process by the console on a terminal-like stream and watch beside a run the test holds.
e2e: $(STAMP) $(REWRITTEN)
	$(PYTEST) -q -m slow -p no:cacheprovider -n $(E2E_WORKERS) --dist loadgroup --hypothesis-profile=e2e; \
	rc=$$?; [ $$rc -eq 5 ] && echo "no slow tests" || exit $$rc

bench: $(STAMP)
	$(PY) bench/bench_state.py
	$(PY) bench/bench_construct.py
	$(PY) bench/bench_parallel_build.py
	$(PY) bench/bench_merge.py
	$(PY) bench/bench_log.py
	$(PY) bench/bench_remote.py
	$(PY) bench/bench_claim_age.py
	$(PY) bench/bench_bad_streak.py
	$(PY) bench/bench_set_aside.py

## bench-replay: the construct loop replaying a project's history: tally's 12 commits in every mode, then
## 9 releases of more-itertools serially (its sdists downloaded once into build/bench-cache/); a few minutes
bench-replay: $(STAMP)
	$(PY) bench/bench_replay.py
	$(PY) bench/bench_replay.py --subject more-itertools

## demo: ralph on an example in a temporary git repository; no model account needed
demo: $(STAMP)
	$(PY) -m ralph.demo

## demo-draft: the way to a first spec: the demo agent drafts one from an idea, asks a question,
## the answer goes in, the draft is accepted and committed, then built; no model account needed
demo-draft: $(STAMP)
	$(PY) -m ralph.demo --draft

## schema: regenerate what is derived from the records declared in ralph/plan/models.py: the JSON
## Schema (ralph/plan/plan.schema.json), docs/plan-format.md's field tables and the Python the state
## commands read (ralph/plan/declared.py); docs/agent-contract.md's stage tables from
## ralph/plan/stage_declarations.py (all by ralph/plan/generate.py); and specs/architecture.md's map
## of the code from ralph/'s docstrings and the layers (tests/support/architecture.py)
schema: $(STAMP)
	$(PY) -m ralph.plan.generate
	$(PY) -m tests.support.architecture

## docs: regenerate the reference derived from the code: docs/cli.md (every command's --help) and
## docs/config.md's table of config keys, by ralph/cli/reference.py
docs: $(STAMP)
	$(PY) -m ralph.cli.reference

clean:
	rm -rf $(VENV) build .pytest_cache .ruff_cache .hypothesis .mypy_cache
