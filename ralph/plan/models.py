"""The records of plan.jsonl, defined once.

These pydantic models are the definition of the file format. The hot path does not import
pydantic (it costs more start-up time than a whole `ralph query next` may take); it validates
against `plan.schema.json`, which is exported from these models by `ralph schema` and checked
against them by the tests.

Models are strict (no coercion: "3" is not an int) and keep unknown keys, so a hand editor's
extra fields survive every rewrite.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model, model_validator

from ralph.plan import records
from ralph.plan.stage_declarations import STAGES
from ralph.text import SCHEMA_VERSION

TaskId = Annotated[str, Field(pattern=r"^t-[0-9a-z][0-9a-z_-]{0,39}$")]
IssueId = Annotated[str, Field(pattern=r"^i-[0-9a-z][0-9a-z_-]{0,39}$")]
Text = Annotated[str, Field(min_length=1)]
Fraction = Annotated[float, Field(gt=0, le=1)]
Positive = Annotated[int, Field(gt=0)]
# A duration as the flags take it: milliseconds (a number) or a number with a unit ("90s", "5m").
Duration = (
    Positive
    | Annotated[
        str,
        Field(
            pattern=r"^(\d*[1-9]\d*(\.\d+)?|\d+\.\d*[1-9]\d*)(ms|s|m|h)?$",
            json_schema_extra={"x-words": 'a duration ("90s", "5m", "1500ms")'},
        ),
    ]
)
# A command line split like a shell would split it (never run by one), or its argv.
Command = str | list[str]
Priority = Literal["high", "medium", "low"]
# The kinds of work (ralph.plan.records.TaskType): each brings its own part of the BUILD and VERIFY prompts.
TaskTypeName = Literal["feature", "bugfix", "refactor", "test", "docs", "chore"]
# A review aspect's name: a built-in one's, or a file's `.ralph/review/<name>.md`.
AspectName = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9_-]{0,39}$")]
# The enums of ralph.plan.records are the one list of each; the format spells their values.
if TYPE_CHECKING:  # a Literal built at import is beyond a type checker: to it they are strings
    KillReason = str
    StatusCode = str
    VerdictCode = str
else:
    KillReason = Literal[tuple(reason.value for reason in records.KillReason)]
    StatusCode = Literal[tuple(status.value for status in records.Status)]
    VerdictCode = Literal[tuple(verdict.value for verdict in records.Verdict)]


OWN_FIELD = "^x-"  # a field of the user's own on a known record (ralph.plan.validate.OWN_FIELD_PREFIX)


class Record(BaseModel):
    """A record of a known type takes its declared fields and fields of the user's own (`x-...`),
    kept as they are; any other is a typo (`"acept"`), refused as `task add` refuses it."""

    model_config = ConfigDict(
        strict=True,
        extra="allow",
        json_schema_extra={"patternProperties": {OWN_FIELD: {}}, "additionalProperties": False},
    )

    @model_validator(mode="after")
    def _only_own_extra_fields(self) -> Record:
        unknown = sorted(key for key in self.model_extra or {} if not re.match(OWN_FIELD, key))
        if unknown:
            raise ValueError(f"unknown field {', '.join(unknown)}")
        return self


def given(default: Any = None, description: str | None = None, **kwargs: Any) -> Any:
    """A task field a person or agent may set with `task add` (the rest are the loop's)."""
    extra: dict[str, Any] = {"x-from-user": True}
    if "default_factory" in kwargs:
        return Field(description=description, json_schema_extra=extra, **kwargs)
    return Field(default, description=description, json_schema_extra=extra, **kwargs)


def key(kind: str, description: str, default: Any = None, setting: str | None = "") -> Any:
    """A config key: the kind of value it takes (how `ralph config set` reads its text), its
    default in the key's own form (None: none), and the loop setting it sets ("": the key's name,
    `_ms` read as `_s` in seconds; None: read by the state commands only)."""
    extra = {"x-kind": kind, "x-default": default, "x-setting": setting}
    return Field(None, description=description, json_schema_extra=extra)


class AncestorFailure(BaseModel):
    """A failure recorded on a task a subtask was decomposed from: which task, its fingerprint, and
    its text (the evidence a question quotes)."""

    model_config = ConfigDict(strict=True, extra="allow")
    task: TaskId
    fingerprint: Annotated[str, Field(min_length=1)]
    failure: str


class Task(Record):
    """A unit of work. `s` is its status: `p` pending, `d` done (built, awaiting VERIFY)."""

    t: Literal["task"]
    id: TaskId = given(..., description="its id (see Ids)")
    name: Text = given(..., description="what to do")
    s: StatusCode = Field(
        records.Status.PENDING.value,
        description="status: pending, done (built and through the gate, awaiting VERIFY), or blocked"
        " (the loop gave up on it, or it waits for a question's answer; a person must decide)",
    )
    accept: str | list[str] | None = given(None, "acceptance criteria")
    deps: list[TaskId] = given(
        description="tasks this one needs; each must be a task in the plan or an accepted one",
        default_factory=list,
    )
    priority: Priority | None = given(None, "how soon to build it; none counts as medium")
    type: TaskTypeName | None = given(
        None,
        "the kind of work: feature, bugfix (reproduce it first, a test that failed passes now), refactor"
        " (behaviour unchanged, the tests untouched), test, docs (no code changed) or chore; its BUILD"
        " and VERIFY prompts carry the type's own instructions; a docs, test or refactor build that"
        " changes files its type does not allow fails with the verdict `type_violation`"
        " (docs/skills.md); none: as a feature",
    )
    auto_priority: bool | None = Field(
        None,
        description="true when `task prioritize` set the priority, which it may then recompute;"
        " a priority without it is a person's and is kept",
    )
    notes: str | None = given(None, "notes for whoever builds it")
    spec: str | None = given(
        None, "the spec file it belongs to (`task add` fills in the loop's current spec)"
    )
    parent: TaskId | None = given(None, "the task this one was decomposed from")
    questions: list[IssueId] | None = Field(
        None,
        description="answered questions of the task it was decomposed from (DECOMPOSE copies them):"
        " its prompts carry them too",
    )
    issue: IssueId | None = given(
        None,
        "the issue INVESTIGATE made this task from (set from `$RALPH_ISSUE_ID`);"
        " the task takes the issue's priority unless it has one",
    )
    depth: Annotated[int, Field(ge=0)] | None = Field(
        0,
        description="how many decompositions made it (0: planned as it is);"
        " DECOMPOSE stops at `max_decompose_depth`, then blocks",
    )
    family: TaskId | None = Field(
        None,
        description="the task the first of the decompositions that made it split (DECOMPOSE sets it):"
        " a task and every subtask made from it are one family, with one failure memory",
    )
    ancestor_failures: list[AncestorFailure] | None = Field(
        None,
        description="the failures recorded on the tasks it was decomposed from, oldest first (DECOMPOSE"
        " copies them): a build or rejection of it that fails the same way (the same fingerprint)"
        " survived the split, and its family goes to one question for a person",
    )
    blocked_reason: str | None = Field(None, description="why the loop gave up on it (status `b`)")
    blocked_by: IssueId | None = Field(
        None, description="the question it waits for (status `b` until `ralph answer`)"
    )
    decompose_failures: Annotated[int, Field(ge=0)] | None = Field(
        None,
        description="DECOMPOSE runs that made fewer than 2 or more than 5 subtasks (two block the task)",
    )
    no_code: bool | None = given(
        None,
        "true: the task needs no change to any file; otherwise a BUILD that changes nothing"
        " fails with the verdict `no_changes`",
    )
    scope: list[Text] | None = given(
        None,
        "path patterns the task may change, relative to the repository root"
        ' (`"src/auth/**"`, `"tests/test_auth.py"`); a build that changes other files fails with the'
        " verdict `scope_violation`; absent: any file",
    )
    merge_conflict: list[str] | None = Field(
        None,
        description="the files whose changes would not merge into the loop's branch when its last build"
        " (in a worktree, beside other builds) finished; it is built again from the new HEAD, as an attempt",
    )
    attempts: Annotated[int, Field(ge=0)] | None = Field(
        0,
        description="builds tried, rebuilds after a rejection included (an agent that failed without"
        " doing anything, a crash or a usage error, is run again and does not count)",
    )
    rebuilds: Annotated[int, Field(ge=0)] | None = Field(
        None,
        description="builds tried after VERIFY rejected it, and rejections of its unchanged resubmissions;"
        " at `max_rebuilds` the task is set aside for DECOMPOSE",
    )
    resubmitted: str | None = Field(
        None,
        description="the builder's argument that the rejected work is already correct"
        " (`ralph task done ID --unchanged`): a fresh verifier judges it once, with the argument",
    )
    fingerprint: str | None = Field(
        None,
        description="hash of its last failure's verdict and text with numbers, ids, paths and times"
        " taken out: the same one twice in a row sends the task on instead of a third identical try",
    )
    repeated_failure: list[str] | None = Field(
        None,
        description="the two failures' texts when the same failure came twice in a row (two builds, two"
        " rejections by VERIFY, or an ancestor's failure and its own): DECOMPOSE, or the person asked,"
        " reads them",
    )
    repeated_from: TaskId | None = Field(
        None,
        description="the ancestor whose failure its last build or rejection repeated (the first text of"
        " `repeated_failure` is that ancestor's): the failure survived a split, and the loop asks one"
        " question for the family instead of splitting it further",
    )
    rejection_fingerprint: str | None = Field(
        None,
        description="hash of VERIFY's last rejection of it, made like `fingerprint`: the same rejection"
        " twice in a row asks a person, with both reasons, instead of building it again",
    )
    verdict: VerdictCode | None = Field(
        None, description="what its latest build attempt came to, or VERIFY's rejection of it"
    )
    reject_reason: str | None = Field(None, description="why VERIFY last rejected it")
    gate_failure: str | None = Field(None, description="excerpt of the last failed gate run")
    kill_reason: KillReason | None = Field(
        None,
        description="why the loop killed its build, or set it aside after VERIFY rejected it or could not"
        " finish checking it `max_attempts` times (`repeated_failure`: its last two builds failed the"
        " same way); the task waits for DECOMPOSE",
    )
    kill_log: str | None = Field(
        None,
        description="log of the run that was killed (for a task set aside after rejections,"
        " a log ralph writes listing them)",
    )
    verify_kills: Annotated[int, Field(ge=0)] | None = Field(
        0,
        description="VERIFY runs of the done task stopped by their time limit or a full context;"
        " at `max_attempts` the task is set aside for DECOMPOSE",
    )
    verify_kill_reason: KillReason | None = Field(None, description="why its last VERIFY run was stopped")
    verify_kill_log: str | None = Field(None, description="log of its last stopped VERIFY run")
    commit: str | None = Field(None, description="commit that recorded the task's build")
    files: list[str] | None = Field(None, description="files that commit changed")
    draft: str | None = Field(
        None,
        description="the branch keeping the unfinished work of its last killed, interrupted or set-aside"
        " build (`ralph/draft/<task id>`), offered to its next build and to its subtasks; deleted when it"
        " is accepted (a decomposed task's, when no subtask is offered it any more)",
    )
    model: Text | None = Field(
        None,
        description="the model its last build ran with (`--stage-model`, `stage_models`, `--model`; with"
        " an escalation list, the step its failed builds reached); absent: the agent CLI's default",
    )
    tokens: Annotated[int, Field(ge=0)] | None = Field(None, description="tokens spent on it, all attempts")
    aspect: AspectName | None = Field(
        None,
        description="the review aspect whose agent found it (REVIEW, `ralph review`): `bugs-and-security`,"
        " `goal`, `tests`, `simplicity`, `docs`, or one of the repository's `.ralph/review/<aspect>.md`;"
        " set by ralph, never by `task add`",
    )
    attempt_tokens: list[Annotated[int, Field(ge=0)]] | None = Field(None, description="tokens per attempt")
    cost_usd: Annotated[float, Field(ge=0)] | None = Field(
        None,
        description="cost of its build attempts whose cost is known (reported by the agent CLI,"
        " or its tokens at the model's price), in USD",
    )
    unknown_cost_runs: Annotated[int, Field(ge=0)] | None = Field(
        None,
        description='build attempts whose cost is unknown: `ralph status` says "cost unknown"'
        " rather than show $0",
    )
    claimed_by: Text | None = Field(
        None,
        description="the runner building it, when runners on several machines share one git remote"
        " (see Claims)",
    )
    claimed_at: Text | None = Field(None, description="when that runner claimed it (UTC, ISO 8601)")
    claimed_on: Text | None = Field(
        None, description="the host of that runner: runners on two hosts that share a name are two runners"
    )


class Issue(Record):
    """A problem for INVESTIGATE to turn into tasks (or resolve); or, with `kind` question, a
    question for a person that blocks its task until it is answered."""

    t: Literal["issue"]
    id: IssueId = Field(description="its id (see Ids)")
    text: Text = Field(description="the question or problem")
    spec: str | None = Field(None, description="the spec it belongs to")
    priority: Priority | None = Field(None, description="how soon to investigate it; none counts as medium")
    keep_open: str | None = Field(
        None,
        description="why INVESTIGATE left it open on purpose (`ralph issue keep ID REASON`), or why the"
        " loop parked it (its INVESTIGATE runs were stopped `max_attempts` times): a person must"
        " decide; it is not investigated again",
    )
    kills: Annotated[int, Field(ge=0)] | None = Field(
        0, description="INVESTIGATE runs of it stopped by their time limit or a full context"
    )
    recheck: bool | None = Field(
        None,
        description="true on the issue naming the new work a spec check added beyond `max_new_items`"
        " (kept open): it waits for no person but for the next spec check, which runs once the spec's"
        " other work is accepted, reads the spec and code again and resolves it",
    )
    kill_reason: KillReason | None = Field(None, description="why its last INVESTIGATE run was stopped")
    kill_log: str | None = Field(None, description="log of its last stopped INVESTIGATE run")
    kind: Literal["question"] | None = Field(
        None,
        description="a question for a person (`ralph ask`): never investigated; it blocks its task"
        " until `ralph answer`",
    )
    task: TaskId | None = Field(
        None,
        description='the task a question blocks (status `"b"`, with `blocked_by` naming the question);'
        " its dependents wait too",
    )
    family: TaskId | None = Field(
        None,
        description="a question about a failure that survived a decomposition: the family it is about"
        " (the tasks whose `family` it is); it holds every task of it (status `b`, `blocked_by` naming"
        " it) until it is answered, and their prompts carry the answer",
    )
    draft: str | None = Field(
        None,
        description="a question asked while drafting a spec (`ralph spec draft NAME`): the draft's NAME;"
        " it blocks no task, and the next drafting run carries its answer",
    )
    choices: list[Text] | None = Field(
        None,
        description="the answers the asker offers (`ralph ask --choice`); a person may answer otherwise",
    )
    asked_at: str | None = Field(None, description="when the question was asked (UTC, ISO 8601)")
    asked_by: str | None = Field(
        None, description="who asked it, in which run (stage, iteration and log of the agent's run)"
    )
    answer: str | None = Field(
        None,
        description="a person's answer (`ralph answer ID TEXT`); the task's next BUILD prompt carries"
        " the question and the answer",
    )
    answered_at: str | None = Field(None, description="when it was answered (UTC, ISO 8601)")
    claimed_by: Text | None = Field(
        None, description="the runner investigating it, when runners share one git remote (see Claims)"
    )
    claimed_at: Text | None = Field(None, description="when that runner claimed it (UTC, ISO 8601)")
    claimed_on: Text | None = Field(
        None, description="the host of that runner: runners on two hosts that share a name are two runners"
    )
    aspect: AspectName | None = Field(
        None,
        description="the review aspect whose agent found it (REVIEW, `ralph review`), as on a task;"
        " set by ralph",
    )


class Accept(Record):
    """Tombstone: the task passed VERIFY and its line was removed (git history keeps it)."""

    t: Literal["accept"]
    id: TaskId = Field(description="the accepted task; its own line is gone (git history keeps it)")
    name: str | None = Field(None, description="its name, for people reading the file")
    spec: str | None = Field(
        None,
        description="the spec it served, copied from the task (so a second spec knows it has no tasks yet)",
    )
    commit: str | None = Field(
        None, description="the commit that recorded its build (`ralph construct`), copied from the task"
    )
    aspect: AspectName | None = Field(
        None, description="the review aspect that found it, copied from the task"
    )


class Reject(Record):
    """Tombstone: VERIFY (or the loop) rejected the task; the task itself went back to pending."""

    t: Literal["reject"]
    id: TaskId = Field(description="the rejected task, which went back to pending")
    reason: str = Field(description="why")
    kill_reason: KillReason | None = Field(None, description="set when the loop rejected a build it killed")


class Resolve(Record):
    """Tombstone: an issue resolved with a note (`ralph issue resolve ID --note`); its line went.
    The note is how it was resolved (INVESTIGATE's reason it needs no work), kept for the report."""

    t: Literal["resolve"]
    id: IssueId = Field(description="the resolved issue; its own line is gone (git history keeps it)")
    note: Text = Field(description="how it was resolved: the tasks it became, or why it needs none")
    text: str | None = Field(None, description="the issue's text, for people reading the file")
    spec: str | None = Field(None, description="the spec it belonged to, copied from the issue")
    aspect: AspectName | None = Field(
        None, description="the review aspect that found it, copied from the issue"
    )


class Takeover(Record):
    """A runner took over a task whose claim was older than claim_ttl: the claim it replaced."""

    t: Literal["takeover"]
    id: Text = Field(description="the task or issue whose claim expired, or the spec's path (its PLAN)")
    by: Text = Field(description="the runner that took it over (the task's `claimed_by` now)")
    at: Text = Field(description="when (UTC, ISO 8601)")
    was_claimed_by: Text = Field(description="the runner whose claim was older than `claim_ttl_ms`")
    was_claimed_at: str | None = Field(None, description="when that claim was made")


class Spec(Record):
    """A spec file this plan works towards."""

    t: Literal["spec"]
    path: Text = Field(description="path of the spec, e.g. `specs/app.md`")
    claimed_by: Text | None = Field(
        None, description="the runner running PLAN on it, when runners share one git remote (see Claims)"
    )
    claimed_at: Text | None = Field(None, description="when that runner claimed it (UTC, ISO 8601)")
    claimed_on: Text | None = Field(
        None, description="the host of that runner: runners on two hosts that share a name are two runners"
    )
    kill_reason: KillReason | None = Field(
        None,
        description="why its last PLAN run was stopped (nothing of that run is kept; a PLAN run that"
        " finishes removes it)",
    )
    kill_log: str | None = Field(
        None,
        description="log of that run, under `build/ralph-logs/`; the tasks it made are beside it"
        " as `<log>.plan.jsonl`",
    )
    planned: bool | None = Field(
        None,
        description="true once a PLAN run finished with tasks for it; a spec without it is planned"
        " first, whatever issues the plan holds (a plan written before this field counts a spec with"
        " tasks, open or accepted, as planned)",
    )
    checked_commit: str | None = Field(
        None,
        description="the commit the last spec check that found nothing missing read (HEAD then); a run"
        " that finds no file but plan.jsonl changed since, and the spec as it was, ends COMPLETE without"
        " checking again",
    )
    checked_spec: str | None = Field(
        None, description="the SHA-256 of the spec's text that check read (with `checked_commit`)"
    )
    check_kills: Annotated[int, Field(ge=0)] | None = Field(
        None, description="spec checks stopped by their time limit or a full context"
    )
    check_kill_reason: KillReason | None = Field(None, description="why its last spec check was stopped")
    check_kill_log: str | None = Field(None, description="log of its last stopped spec check")


class Price(BaseModel):
    """What a model costs, in USD per million tokens (cached reads and cache writes default to
    the input price)."""

    model_config = ConfigDict(strict=True, extra="forbid")
    input: Annotated[float, Field(ge=0)]
    output: Annotated[float, Field(ge=0)]
    cache_read: Annotated[float, Field(ge=0)] | None = None
    cache_creation: Annotated[float, Field(ge=0)] | None = None


ModelName = Annotated[str, Field(min_length=1)]
# A stage's model, or an escalation: a list of models, cheap first; a task's BUILD runs with the
# next one after each failed build (the last one from then on).
StageModel = ModelName | Annotated[list[ModelName], Field(min_length=1)]


class _StageModels(BaseModel):
    """A model name per stage that runs an agent, or a list of them (an escalation: a task's BUILD
    takes the next after each of its failed builds); a stage not named uses `model`."""

    model_config = ConfigDict(strict=True, extra="forbid")


# One optional field per stage declared to have a model (ralph.plan.stage_declarations), in
# declaration order: a new stage's key needs no edit here.
if TYPE_CHECKING:
    StageModels = _StageModels
else:
    StageModels = create_model(
        "StageModels",
        __base__=_StageModels,
        __doc__=_StageModels.__doc__,
        **{declared.name: (StageModel | None, None) for declared in STAGES if declared.model},
    )


class Hooks(BaseModel):
    """A command per event of the construct loop (see docs/hooks.md), each a command line like gate
    or its argv; it gets the event as JSON on stdin."""

    model_config = ConfigDict(strict=True, extra="forbid")
    task_accepted: Command | None = None
    task_killed: Command | None = None
    question_asked: Command | None = None
    limit_wait: Command | None = None
    run_ended: Command | None = None
    any: Command | None = Field(None, description="run on every one of these events")


class Config(Record):
    """Settings for this repository; command-line flags override them. At most one per plan."""

    t: Literal["config"]
    timeout_ms: Duration | None = key("duration", "bound on one agent run (`--timeout`)", 300_000)
    max_iterations: Positive | None = key("count", "iterations of `ralph construct`", 10)
    max_minutes: Annotated[float, Field(gt=0)] | Positive | None = key(
        "number", "wall-clock budget of `ralph construct` in minutes"
    )
    max_attempts: Positive | None = key("count", "builds per task before DECOMPOSE", 3)
    max_rebuilds: Positive | None = key(
        "count", "builds of a task after VERIFY rejected it, before DECOMPOSE (its own budget)", 3
    )
    max_agent_failures: Positive | None = key(
        "count",
        "agent runs in a row, of any task, that fail without doing anything (a crash, a usage error)"
        " and are not a task's own error, before the run ends AGENT_FAILING; each is run again and is"
        " no attempt (a crash after a wait); the same error on two items ends it at once",
        5,
    )
    agent_retry_ms: Duration | None = key(
        "duration",
        "the first wait before running an agent again that crashed (killed by a signal; doubles)",
        5_000,
    )
    parallel: Positive | None = key(
        "count", "builds and VERIFY runs at once; with more than one, builds run in worktrees of their own", 4
    )
    max_new_items: Positive | None = key(
        "count",
        "new tasks and issues one run of INVESTIGATE, VERIFY or the spec check may add; ralph moves"
        " the rest (and duplicates of open tasks by name) into one issue for a person",
        5,
    )
    max_decompose_depth: Positive | None = key(
        "count", "decompositions of decompositions before a task is blocked", 3
    )
    context_warn: Fraction | None = key(
        "fraction", "share of the context window at which the agent is warned", 0.70
    )
    context_compact: Fraction | None = key(
        "fraction", "share of the context window at which an agent run is compacted into a fresh one", 0.85
    )
    context_kill: Fraction | None = key(
        "fraction", "share of the context window at which the run is killed", 0.95
    )
    gate: Command | None = key(
        "command",
        "the quality gate: a command line split like a shell would split it (never run by one), as"
        ' --gate takes it, or its argv; "" or [] for none',
        "make verify",
    )
    gate_timeout_ms: Duration | None = key("duration", "bound on one gate run", 600_000)
    max_wait_ms: Duration | None = key(
        "duration", "bound on one wait for a rate limit, usage limit or overloaded server", 3_600_000
    )
    claim_ttl_ms: Duration | None = key(
        "duration",
        "age of a claim after which another runner may take the task over (`--claim-ttl`)",
        1_800_000,
        setting="claim_ttl_s",
    )
    agent: str | None = key("text", "agent adapter: see `ralph agents`")
    agent_cmd: Command | None = key(
        "command", "program (and arguments) of the agent, a command line like gate (`--agent-cmd`)"
    )
    agent_args: Command | None = key(
        "command", "extra arguments passed to the agent CLI, like gate (`--agent-args`)"
    )
    model: str | None = key("text", "model name passed to the agent CLI")
    context_window: Positive | None = key("count", "the model's context window in tokens")
    commit: bool | None = key("flag", "false: state commands do not commit", True, setting=None)
    run_hooks: bool | None = key(
        "flag", "true: a build is committed only if the repository's pre-commit hook passes", False
    )
    spec_check: bool | None = key(
        "flag",
        "false: a spec is planned without `ralph spec check` first (`--no-spec-check`)",
        True,
    )
    max_cost_usd: Annotated[float, Field(gt=0)] | None = key(
        "number", "money budget of `ralph construct` in USD (`--max-cost`)"
    )
    max_tokens: Positive | None = key(
        "count", "token budget of `ralph construct`: all agent runs' tokens together (`--max-tokens`)"
    )
    stage_models: StageModels | None = key(
        "models",
        "the model of each stage's runs (`--stage-model STAGE=MODEL`), over `model`: e.g. a cheap one"
        ' for BUILD, a strong one for VERIFY; or a list, cheap first (`{"BUILD": ["claude-haiku-4-5",'
        ' "claude-sonnet-4-5"]}`): each build of a task after a failed one runs with the next',
    )
    hooks: Hooks | None = key("hooks", "commands run on the loop's events (docs/hooks.md)")
    hook_timeout_ms: Duration | None = key("duration", "bound on one hook run", 10_000)
    prices: dict[str, Price] | None = key(
        "prices", "USD per million tokens by model name, for runs whose agent reports no cost"
    )
    sandbox: Literal["off", "auto", "required"] | None = key(
        "sandbox",
        "the bubblewrap fence around agents and gates (`--sandbox`); off is taken only from the user's"
        " config file or the flag, never from this record",
        "auto",
    )
    docs_paths: list[Annotated[str, Field(min_length=1)]] | None = key(
        "patterns",
        "more files a `docs` task may change, beside *.md, *.rst, *.txt and docs/ (path patterns as"
        " a task's scope takes them: `site/**`)",
        [],
    )
    review: bool | list[AspectName] | None = key(
        "aspects",
        "the review before COMPLETE (REVIEW): true for the default aspects (bugs-and-security, goal, tests,"
        " simplicity, docs), false for none, or a list of aspect names (`.ralph/review/<name>.md` for"
        " one of the repository's own) (`--review`/`--no-review`)",
        True,
    )
    sandbox_hide: list[Annotated[str, Field(min_length=1)]] | None = key(
        "patterns",
        "more files agents and gates see empty: names (globs) in the repository, or paths from / or ~/",
        [],
    )


class Spent(BaseModel):
    """What the agent runs of one stage spent, all runs so far."""

    model_config = ConfigDict(strict=True, extra="allow")
    runs: Annotated[int, Field(ge=0)] = 0
    tokens: Annotated[int, Field(ge=0)] = 0
    cost_usd: Annotated[float, Field(ge=0)] = Field(0.0, description="of the runs whose cost is known")
    unknown_runs: Annotated[int, Field(ge=0)] = Field(0, description="runs whose cost is unknown")


class State(Record):
    """The construct loop's own state. At most one per plan."""

    t: Literal["state"]
    iteration: Annotated[int, Field(ge=0)] = Field(
        0, description="the loop's current iteration (`ralph query iteration`)"
    )
    stage: str | None = Field(None, description="the stage the loop is in, or how its last run ended")
    spec: str | None = Field(
        None, description="the spec the loop works on; new tasks and issues get it as their `spec`"
    )
    spent: dict[str, Spent] | None = Field(
        None, description="what every agent run so far spent, by stage (`ralph status` shows it)"
    )
    base: str | None = Field(
        None,
        description="the commit the construct run of `spec` started from, kept while its work goes on"
        " (a run after COMPLETE, or of another spec, starts anew): REVIEW reads the change since it"
        " (`git diff BASE...HEAD`)",
    )
    review_rounds: Annotated[int, Field(ge=0)] | None = Field(
        None,
        description="the review rounds run since `base`: the first with every aspect, the second for"
        " critical findings only, none after; a round that finds nothing counts as the last (a resumed"
        " run, or another runner, does not review again)",
    )


RECORD_MODELS: dict[str, type[Record]] = {
    "task": Task,
    "issue": Issue,
    "accept": Accept,
    "reject": Reject,
    "resolve": Resolve,
    "takeover": Takeover,
    "spec": Spec,
    "config": Config,
    "state": State,
}


def json_schema() -> dict[str, Any]:
    """One JSON Schema for a line of plan.jsonl: a known record type, or any object with `t`.

    The top level picks the definition by `t` (an if/then per record type), so a standard
    validator checks a whole record, not only that it has a `t`."""
    from pydantic import TypeAdapter

    defs: dict[str, Any] = {}
    for name, model in RECORD_MODELS.items():
        schema = TypeAdapter(model).json_schema(ref_template="#/$defs/{model}")
        defs.update(schema.pop("$defs", {}))
        defs[model.__name__] = schema
        schema["x-record-type"] = name
    return {
        "schema_version": SCHEMA_VERSION,  # of ralph's JSON output; validators ignore unknown keys
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "A line of ralph's plan.jsonl",
        "description": "Each line is one JSON object; its `t` names the record type. "
        "Objects with an unknown `t` are kept as they are.",
        "type": "object",
        "required": ["t"],
        "properties": {"t": {"type": "string"}},
        "allOf": [
            {
                "if": {"properties": {"t": {"const": name}}, "required": ["t"]},
                "then": {"$ref": f"#/$defs/{model.__name__}"},
            }
            for name, model in RECORD_MODELS.items()
        ],
        "$defs": defs,
        "x-records": {name: f"#/$defs/{m.__name__}" for name, m in RECORD_MODELS.items()},
    }
