"""Where the tests of a module of ralph/ are when they are not in a test module of its own name.

Each entry: the module, the test modules that cover it, and one sentence saying which of their
behaviour does. tests/test_layout.py checks that every module with logic has tests of its own name
or an entry here, and that each entry is still needed and names test modules that exist. Prefer a
test module of the module's own name: move a clean group of tests there, or write one, and drop
the entry."""

from __future__ import annotations

COVERED: dict[str, tuple[str, ...]] = {
    "ralph/usecases/config_values.py": (
        "tests/usecases/test_settings.py",
        "tests/usecases/test_config.py",
        "each config key's values are read from text, checked in every layer (a bad one named with"
        " its file and key) and converted between the key's spelling and the setting's, there.",
    ),
    "ralph/usecases/batch_withdrawal.py": (
        "tests/loop/test_many_machines.py",
        "a runner's build that conflicts with one pushed meanwhile, or whose task was taken over, is"
        " undone, kept as a patch and its conflict recorded, with the plan's uncommitted changes"
        " carried over or a person's edit in the way named in one line, there.",
    ),
    "ralph/usecases/claim_listing.py": (
        "tests/cli/test_remote_status.py",
        "tests/usecases/test_doctor.py",
        "`ralph status --remote` lists live and stale claims (refs and plan claims) with their ages,"
        " and doctor reports the stale ones of the remotes last fetched, there.",
    ),
    "ralph/usecases/leftovers.py": (
        "tests/usecases/test_doctor.py",
        "the worktrees and branches a killed run recorded making are found, removed with their"
        " changes kept as patches, unmerged branches kept unless forced, a person's left alone,"
        " and with nothing recorded no git asked, through `ralph doctor` and a run's start there.",
    ),
    "ralph/usecases/findings.py": (
        "tests/usecases/test_doctor.py",
        "tests/cli/test_doctor_golden.py",
        "each finding's line and --json fields (kind, subject, problem, fix, fixed) are what"
        " `ralph doctor` prints, there.",
    ),
    "ralph/cli/run_text.py": (
        "tests/cli/test_report_golden.py",
        "tests/loop/test_dryrun.py",
        "the final report's lines (each section, redacted and escaped) and the dry run's preview"
        " are what a person reads, there.",
    ),
    "ralph/generated.py": (
        "tests/plan/test_generate.py",
        "tests/cli/test_reference.py",
        "both generators write, check (exit 1 when stale) and refuse (exit 2) through it there.",
    ),
    "ralph/store/gitlinks.py": (
        "tests/loop/test_submodules.py",
        "tests/loop/process/test_sandbox.py",
        "a submodule's `.git` link an agent replaced, or whose folder it made a link, is read as"
        " changed, put back and kept beside the log, with the sandbox and without.",
    ),
    # agents/
    "ralph/agents/__init__.py": (
        "tests/agents/test_adapters.py",
        "tests/agents/test_command.py",
        "tests/agents/test_adapter_table.py",
        "make_adapter builds every adapter these tests read streams with, and refuses an unknown name;"
        " names_in_words lists them all for --agent's help.",
    ),
    # cli/: parses and prints; what it prints is in the goldens, what it does in the ops tests.
    "ralph/cli/config.py": (
        "tests/usecases/test_config.py",
        "`ralph config get|set|unset|list` is run through the CLI there, each change and refusal checked.",
    ),
    "ralph/cli/construct.py": (
        "tests/loop/test_construct.py",
        "tests/loop/test_dryrun.py",
        "tests/loop/test_loop_safety.py",
        "tests/cli/test_report_golden.py",
        "every loop test runs `ralph construct` or `ralph plan` through it, bad loop flags are one line "
        "with exit 2, and its final report is held in golden files.",
    ),
    "ralph/cli/doctor.py": (
        "tests/usecases/test_doctor.py",
        "tests/cli/test_doctor_golden.py",
        "`ralph doctor` and its --fix and --json run through the CLI in both, and the goldens hold what "
        "it prints.",
    ),
    "ralph/cli/lazy.py": (
        "tests/cli/test_drafts.py",
        "tests/cli/test_golden.py",
        "`ralph spec draft` is loaded through it, and `ralph spec --help` lists it beside `spec new`.",
    ),
    "ralph/cli/history.py": (
        "tests/cli/test_log.py",
        "tests/cli/test_completion.py",
        "`ralph log`, `ralph report` and `ralph completion` are run through the CLI, their output held "
        "in goldens and checked against a schema.",
    ),
    "ralph/cli/issues.py": (
        "tests/cli/test_golden.py",
        "tests/cli/test_json_output.py",
        "the issue.yml golden runs `ralph issue add|resolve|list` and holds what each prints, and "
        "every --json line is checked for its schema version.",
    ),
    "ralph/cli/main.py": (
        "tests/cli/test_golden.py",
        "tests/usecases/test_import_path.py",
        "every command's --help is a golden, and the state commands are shown never to load the "
        "construct loop that the group loads lazily.",
    ),
    "ralph/cli/queries.py": (
        "tests/cli/test_golden.py",
        "tests/cli/test_unix_manners.py",
        "the query and query_empty goldens hold what each `ralph query` prints, and its JSON objects "
        "are checked.",
    ),
    "ralph/cli/questions.py": (
        "tests/cli/test_golden.py",
        "tests/loop/test_questions.py",
        "the questions.yml golden runs ask, answer and questions, and the loop's agents ask through "
        "the real `ralph ask`.",
    ),
    "ralph/cli/specs.py": (
        "tests/cli/test_spec_new.py",
        "`ralph spec new` is run through the CLI: the spec written from the template, and an existing "
        "file or a bad name refused with nothing changed.",
    ),
    "ralph/cli/state.py": (
        "tests/cli/test_golden.py",
        "tests/cli/test_check_staged.py",
        "the init, check, status and merge-driver goldens hold what each prints, and `check --staged` "
        "is checked against git's index.",
    ),
    "ralph/cli/tasks.py": (
        "tests/cli/test_golden.py",
        "tests/cli/test_smoke.py",
        "the task_*.yml goldens hold what every `ralph task` subcommand prints, and test_smoke checks "
        "their commits and exit codes.",
    ),
    "ralph/demo/__main__.py": (
        "tests/test_demo.py",
        "the demo test runs `python -m ralph.demo` to COMPLETE and checks the repository it keeps.",
    ),
    "ralph/demo/agent.py": (
        "tests/test_demo.py",
        "the demo's run to COMPLETE is this scripted agent's work at every stage.",
    ),
    # loop/: the stages are tested through the real loop with the scripted fake agent.
    "ralph/loop/stages/draft.py": (
        "tests/cli/test_drafts.py",
        "every drafting run goes through it: the scripted agent asks and drafts, fenced with --sandbox"
        " required, and a SIGTERM stops it and its child.",
    ),
    "ralph/loop/review_only.py": (
        "tests/loop/stages/test_review.py",
        "`ralph review` reviews a branch made by hand since the default branch, records its findings,"
        " builds them with --fix from the recorded round, and refuses a base with nothing to review.",
    ),
    "ralph/loop/runs/judged.py": (
        "tests/loop/process/test_sandbox.py",
        "tests/loop/runs/test_permissions.py",
        "a verifier and CHECK get the first commit's prompts, rules and spec however a build rewrote "
        "them, and a BUILD changing them without a scope that names them is a violation.",
    ),
    "ralph/loop/observe/log_folder.py": (
        "tests/loop/process/test_sandbox.py",
        "a build that replaces build/ralph-logs with a link gets nothing written there and its folder put "
        "back; a link there at the start is refused.",
    ),
    "ralph/loop/observe/view.py": (
        "tests/loop/observe/test_live.py",
        "the progress header's accepted of total, ETA and budgets come from Progress.update, fed by the "
        "console's reports and by the journal's progress events in `ralph watch`.",
    ),
    "ralph/loop/observe/follow.py": (
        "tests/loop/observe/test_live.py",
        "`ralph watch` full-screen in tmux panes of 80x14 and 200x50 keeps its header, agents and the "
        "picked agent's transcript on screen, and its keys scroll the events and pick an agent.",
    ),
    "ralph/loop/preflight.py": (
        "tests/loop/test_dryrun.py",
        "tests/loop/test_loop_safety.py",
        "the dry run lists every reason the real run refuses while the real run stops at the first, and "
        "a detached head or a gate that cannot run is refused before any agent.",
    ),
    "ralph/loop/process/reaper.py": (
        "tests/loop/process/test_supervisor.py",
        "tests/loop/test_loop_safety.py",
        "daemons left outside the run's process group are ended and reaped, only when their run ends, "
        "and never what ralph itself started.",
    ),
    "ralph/loop/share/remote.py": (
        "tests/loop/test_many_machines.py",
        "runners sharing a remote claim each task before building it, hand builds back, and three "
        "runners build twelve tasks exactly once.",
    ),
    "ralph/loop/observe/report_data.py": (
        "tests/loop/test_report_json.py",
        "tests/loop/test_early_end.py",
        "`construct --json` gives each task, issue and question of the report as an object, and a run "
        "that ends before its first iteration still reports them.",
    ),
    "ralph/loop/tree/checkouts.py": (
        "tests/loop/test_stage_runs.py",
        "tests/loop/test_interrupted_changes.py",
        "consecutive verifiers share one checkout, cleaned between them; one a verifier changed or"
        " replaced with a link goes to no other and is never cleaned through the link; a kill at the"
        " verifier's set-up or removal leaves nothing behind.",
    ),
    "ralph/loop/tree/plan_access.py": (
        "tests/loop/test_plan_reads.py",
        "tests/loop/test_bookkeeping_commits.py",
        "the plan is read once per step and passed on, and the loop's changes to it go into one commit "
        "per unit of work.",
    ),
    "ralph/loop/stages/build.py": (
        "tests/loop/test_construct.py",
        "tests/loop/test_loop_safety.py",
        "builds retried after a failed gate, timed out, crashed, set aside for DECOMPOSE or changing "
        "nothing are run through the real loop.",
    ),
    "ralph/loop/stages/build_apply.py": (
        "tests/loop/test_stages_in_process.py",
        "tests/loop/stages/test_agent_errors.py",
        "tests/loop/test_parallel_stops.py",
        "each outcome of a build attempt (built and committed, failed and retried, set aside, asked, "
        "given back, deferred) is applied by the real stage there, and its commits, plan and drafts "
        "asserted.",
    ),
    "ralph/loop/stages/check_apply.py": (
        "tests/loop/stages/test_check.py",
        "tests/loop/test_stages_in_process.py",
        "each outcome of a spec check (met, added, cut, stopped, failed) is applied by the real stage "
        "there, and its plan, commits and report asserted.",
    ),
    "ralph/loop/stages/build_facts.py": (
        "tests/loop/test_stages_in_process.py",
        "tests/loop/stages/test_agent_errors.py",
        "tests/loop/test_loop_safety.py",
        "what a run did (killed, gone from the plan, asked, resubmitted, its gate, hook, scope and type "
        "failures, an agent's error) is gathered by the real stage there and asserted by its verdicts.",
    ),
    "ralph/loop/stages/investigate.py": (
        "tests/loop/test_construct.py",
        "tests/loop/test_stage_runs.py",
        "tests/loop/test_loop_safety.py",
        "issues are investigated into tasks and resolved once, and a hanging investigator is stopped "
        "and parked at the limit.",
    ),
    "ralph/loop/stages/plan.py": (
        "tests/loop/test_construct.py",
        "tests/loop/test_stage_runs.py",
        "`ralph plan` runs only this stage, and a stopped plan run keeps nothing and says why.",
    ),
    "ralph/loop/stages/verify.py": (
        "tests/loop/test_construct.py",
        "tests/loop/test_stage_runs.py",
        "verifiers accept or reject tasks in parallel checkouts of their own, and one stopped at the "
        "limit sets its task aside.",
    ),
    "ralph/loop/tree/work_tree.py": (
        "tests/loop/test_unknown_changes.py",
        "tests/loop/test_drafts.py",
        "tests/loop/test_interrupted_changes.py",
        "only what a run is known to have changed is committed, unfinished work is kept on draft "
        "branches, and a commit or a build's merge cut short is finished by the next start.",
    ),
    "ralph/loop/stages/workspace.py": (
        "tests/loop/test_stages_in_process.py",
        "tests/loop/test_construct.py",
        "stages run on a Workspace of fakes of its parts decide from their agents' runs, and the loop's "
        "own Workspace composes the real parts in every construct test.",
    ),
    # ops/: the use cases, through the CLI.
    "ralph/usecases/history.py": (
        "tests/cli/test_log.py",
        "the timeline, a task's story and --since are read back from real histories made through the CLI.",
    ),
    "ralph/usecases/pullrequest.py": (
        "tests/loop/test_pull_request.py",
        "`construct --pr` and `ralph pr` push the branch to a real bare remote and open the request "
        "through a stand-in gh or glab whose arguments and stdin are asserted.",
    ),
    "ralph/usecases/report.py": (
        "tests/cli/test_log.py",
        "the page is one self-contained file with a point per plan commit, an unknown cost says so, "
        "and headless Chromium draws it.",
    ),
    "ralph/loop/spec_drafts.py": (
        "tests/cli/test_drafts.py",
        "each step of a draft (run, questions, approve) and its refusals are run through `ralph spec"
        " draft`: WAITING, answers, a revision, accept committing the spec alone, reject leaving nothing.",
    ),
    "ralph/usecases/specs.py": (
        "tests/cli/test_spec_new.py",
        "the spec file made from the template, and the refusals of an existing file or a bad name, "
        "are asserted through `ralph spec new`.",
    ),
    "ralph/usecases/spec_checks.py": (
        "tests/cli/test_status_stage.py",
        "tests/loop/stages/test_check.py",
        "a spec a check found met is COMPLETE to `query stage` and `query next`, and CHECK again once "
        "code changed; a run with the spec and code as checked ends COMPLETE without another check.",
    ),
    "ralph/usecases/sync.py": (
        "tests/usecases/test_claims.py",
        "claims, publishing and release go through its rounds: a lost race is replayed on the new head "
        "and an unreachable remote fails after bounded retries.",
    ),
    # plan/ and store/
    "ralph/store/git/config.py": (
        "tests/store/test_user_safety.py",
        "tests/store/test_programs.py",
        "tests/loop/test_loop_safety.py",
        "tests/usecases/test_mergedriver.py",
        "commits are signed when the repository asks, the hook git would run is found but never run by"
        " ralph's own git calls, a config reading a file of the work tree is refused, and init sets the"
        " merge driver only where no config has one, there.",
    ),
    "ralph/store/git/state.py": (
        "tests/store/test_user_safety.py",
        "tests/loop/test_person_edits.py",
        "no commit is made while git is stopped in an operation, on a detached HEAD, under a stale"
        " index lock or on a branch switched under a run, there.",
    ),
    "ralph/store/git/repo.py": (
        "tests/store/git/test_worktrees.py",
        "tests/store/test_drafts.py",
        "a Repo runs git and reads HEAD and its branch in every test of its parts, and a worktree's Repo"
        " and a Repo with an index of its own (drafts) are made, there.",
    ),
    "ralph/store/settle.py": (
        "tests/store/test_intent.py",
        "tests/loop/test_interrupted_changes.py",
        "each kind of interrupted change is settled as its kind says, and a kill at every git step of a "
        "merge, a build's commit and PLAN's commit ends right on the next run.",
    ),
    "ralph/usecases/sandbox_hide.py": (
        "tests/loop/process/test_sandbox.py",
        "patterns that would hide /, $HOME or the work tree (directly or through a link) are refused by "
        "`ralph config set`, `ralph check` and construct's start there.",
    ),
    "ralph/plan/run_records.py": (
        "tests/plan/test_attempt_record.py",
        "tests/plan/test_ops.py",
        "what a stage's run writes is replayed as an operation: each record read back from its JSON"
        " (its lists as tuples), and a record of another type or with other fields refused, there.",
    ),
    "ralph/plan/spec_records.py": (
        "tests/plan/test_transitions.py",
        "a spec's records (the current spec, planned, a stopped PLAN or check, a passing check) are "
        "asserted there with the bytes they leave, and by the loop's CHECK tests.",
    ),
    "ralph/plan/proven.py": (
        "tests/plan/test_lazy_document.py",
        "tests/store/test_validcache.py",
        "a plan loaded again, written, or proven more versions ago than are kept is parsed only, its "
        "lines not split nor decoded again; a plan let go of is vouched for there.",
    ),
    "ralph/plan/line_index.py": (
        "tests/plan/test_lazy_document.py",
        "tests/plan/test_document.py",
        "a long plan's heads, types, places of each type and accepted ids, read off the lines' starts "
        "or decoded, each equal to a fresh parse's, for lines in ralph's spelling and for odd ones.",
    ),
    "ralph/plan/verify_changes.py": (
        "tests/plan/test_transitions.py",
        "tests/plan/test_attempt_record.py",
        "each kind of VERIFY run (stopped, set aside, accepted, rejected, too late) is written on its "
        "task there through record_verify, and what it leaves asserted.",
    ),
    "ralph/plan/attempt_changes.py": (
        "tests/plan/test_attempt_record.py",
        "tests/plan/test_transitions.py",
        "each kind of attempt (failed, built, resubmitted, set aside, asked) is written on the task "
        "there, on a copy too, and asserted with the exact bytes it leaves.",
    ),
    "ralph/plan/attempts.py": (
        "tests/plan/test_transitions.py",
        "the loop's transitions of a task (build attempts and their verdicts, kills, set-asides, "
        "VERIFY's verdicts) are asserted there with the exact bytes they leave.",
    ),
    "ralph/plan/declared.py": (
        "tests/plan/test_derive.py",
        "it is generated by derive.py: test_derive checks it is current with the models and that its "
        "task fields, config keys and typed views mean what the models declare.",
    ),
    "ralph/plan/drafts.py": (
        "tests/cli/test_drafts.py",
        "a draft's question (its choices, no task) is asked through `ralph ask`, listed, answered, and"
        " leaves the plan when the draft is accepted or rejected.",
    ),
    "ralph/plan/models.py": (
        "tests/plan/test_models_schema.py",
        "tests/plan/test_schema_standard.py",
        "plan.schema.json is exported from the models, matches the documented fields, and a standard "
        "validator agrees with ralph check.",
    ),
    "ralph/plan/questions.py": (
        "tests/plan/test_transitions.py",
        "tests/plan/test_plan.py",
        "asking blocks a task and answering unblocks it through every level of decomposition, and "
        "issues are added and resolved, on plans in memory.",
    ),
    "ralph/plan/reading.py": (
        "tests/plan/test_transitions.py",
        "tests/plan/test_plan.py",
        "the scoped reads (task and issue views by spec, find_task, reads after a change) and the "
        "next task are asserted on plans in memory.",
    ),
    "ralph/plan/singletons.py": (
        "tests/usecases/test_config.py",
        "tests/plan/test_plan.py",
        "config keys set and unset one commit each, and the state record rewritten only when "
        "something changes, are asserted there.",
    ),
    "ralph/plan/tasks.py": (
        "tests/plan/test_plan.py",
        "add, done, accept, reject, delete and prioritize are asserted on plans in memory: what each "
        "changes, line by line, and what it refuses.",
    ),
    "ralph/plan/validate.py": (
        "tests/plan/test_models_schema.py",
        "the validator accepts exactly the records pydantic accepts, on generated valid and broken records.",
    ),
}
