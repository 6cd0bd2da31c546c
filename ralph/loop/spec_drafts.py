"""`ralph spec draft NAME "idea"`: an agent drafts specs/NAME.md, a person approves it.

A draft goes through these steps, each decided from what is on disk, so that the same command run
again (after `ralph answer`, in another terminal, after a signal) goes on where it stopped:

- RUN: the agent drafts (no draft yet, or answers or feedback it has not been given);
- QUESTIONS: it asked what only the person can decide (`ralph ask`): they wait in the plan;
- APPROVE: a draft waits for the person: accept (specs/NAME.md written and committed, with the
  questions and answers in the commit's message), revise with feedback (RUN again), or reject.

The draft and its state live under build/ralph-logs/drafts/ (ignored by git): NAME/draft.md, the
only file the agent may write, and NAME.json beside that folder, which the agent cannot reach.
Nothing of a draft is committed before acceptance but the questions it asked."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ralph.errors import InvalidInput, RalphError, Refused
from ralph.text import printable
from ralph.usecases.specs import _NAME, spec_of

if TYPE_CHECKING:
    from ralph.loop.observe.console import Console
    from ralph.plan.document import Record
    from ralph.store.git import Repo
    from ralph.usecases.settings import Settings

DRAFTS = Path("build") / "ralph-logs" / "drafts"
DRAFT_FILE = "draft.md"
MAX_DRAFT_BYTES = 200_000  # a spec, not a dump: more is refused rather than shown and committed
EXIT_WAITING = 9  # as `ralph construct` ends WAITING: a person must answer or decide
DRAFT_LOCK = "ralph-spec-draft.lock"  # in the git directory: held while a drafting agent runs


class Step(StrEnum):
    RUN = "run"  # the agent drafts, or goes on with answers or feedback
    QUESTIONS = "questions"  # the agent asked: a person answers
    APPROVE = "approve"  # a draft waits for the person's decision


class Decision(StrEnum):
    ACCEPT = "accept"
    REVISE = "revise"
    EDIT = "edit"
    REJECT = "reject"


class Interrupted(RalphError):
    """A signal stopped the drafting run: the agent and its children are stopped, the plan is as
    it was before the run."""

    def __init__(self, signum: int):
        super().__init__("interrupted: the drafting run was stopped; run the same command again to go on")
        self.exit_code = 128 + signum


class DraftFailed(RalphError):
    """The agent's run left no usable draft (it failed, wrote nothing, or broke its fence)."""


@dataclass
class Draft:
    """One spec draft: the person's idea, what the agent was last given, and its files."""

    root: Path
    name: str
    idea: str
    agent: str | None = None  # the agent that drafts it (for the commit)
    # The agent's flags as last given (--agent, --agent-cmd, ...): the same command without them
    # goes on with the same agent.
    flags: dict[str, Any] = field(default_factory=dict)
    told: list[str] = field(default_factory=list)  # the answered questions the agent was given
    feedback: str | None = None  # the person's feedback the next run is given
    runs: int = 0

    @property
    def spec(self) -> str:
        return spec_of(self.name)

    @property
    def folder(self) -> Path:
        return self.root / DRAFTS / self.name

    @property
    def file(self) -> Path:
        return self.folder / DRAFT_FILE

    @property
    def state_file(self) -> Path:
        return self.root / DRAFTS / f"{self.name}.json"

    def relative(self) -> str:
        return (DRAFTS / self.name / DRAFT_FILE).as_posix()

    def save(self) -> None:
        from ralph.store.files import write_atomic

        data = {key: value for key, value in asdict(self).items() if key not in ("root", "name")}
        self.state_file.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(self.state_file, json.dumps(data, indent=1).encode())

    def exists(self) -> bool:
        return _regular_file(self.file)

    def text(self) -> str:
        """The draft as the agent left it: data, read without following a link (an agent's link
        to a file it cannot read would have ralph read it)."""
        try:
            fd = os.open(self.file, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            raise DraftFailed(f"{self.relative()} is not a file the draft can be read from") from None
        with os.fdopen(fd, "rb") as handle:
            data = handle.read(MAX_DRAFT_BYTES + 1)
        if len(data) > MAX_DRAFT_BYTES:
            raise DraftFailed(f"{self.relative()} is over {MAX_DRAFT_BYTES:,} bytes: not a spec")
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise DraftFailed(f"{self.relative()} is not UTF-8 text") from None


def _regular_file(path: Path) -> bool:
    return path.is_file() and not path.is_symlink()


def open_draft(root: Path, name: str, idea: str | None, flags: dict[str, Any] | None = None) -> Draft:
    """The draft of specs/NAME.md: the one begun before (its idea kept), or a new one from `idea`.
    Refused when specs/NAME.md exists: a person's spec is never replaced."""
    name = name.removesuffix(".md")
    if not _NAME.fullmatch(name):
        raise InvalidInput(
            f"bad spec name {printable(name)!r}: use letters, digits, '-', '_' and '.'"
            " (it becomes specs/NAME.md)"
        )
    spec = spec_of(name)
    if (root / spec).exists() or (root / spec).is_symlink():
        raise Refused(f"{spec} exists: edit it, or draft another name (nothing was drafted)")
    draft = _load(root, name)
    if draft is None:
        if idea is None or not idea.strip():
            raise InvalidInput(f'say what {spec} should be about: ralph spec draft {name} "the idea"')
        draft = Draft(root, name, idea.strip())
    elif idea is not None and idea.strip() != draft.idea:
        raise Refused(
            f"a draft of {spec} from another idea exists: go on with `ralph spec draft {name}`,"
            f" or drop it with `ralph spec draft {name} --reject`"
        )
    given = {key: value for key, value in (flags or {}).items() if value is not None}
    if given:  # flags given again replace the ones remembered (one agent's, not a mix)
        draft.flags = {
            key: list(value) if isinstance(value, tuple) else value for key, value in given.items()
        }
    draft.save()
    return draft


def agent_flags(draft: Draft) -> dict[str, Any]:
    """The agent's flags the draft goes on with, as the command line gives them."""
    return {key: tuple(value) if isinstance(value, list) else value for key, value in draft.flags.items()}


def find_draft(root: Path, name: str) -> Draft:
    draft = _load(root, name.removesuffix(".md"))
    if draft is None:
        raise Refused(
            f'no draft of {spec_of(name.removesuffix(".md"))}: start one with `ralph spec draft NAME "idea"`'
        )
    return draft


def _load(root: Path, name: str) -> Draft | None:
    path = root / DRAFTS / f"{name}.json"
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return Draft(root, name, **data)
    except (ValueError, TypeError):
        raise Refused(f"{path.relative_to(root)} is damaged: remove it to start the draft again") from None


def questions(draft: Draft) -> list[Record]:
    """The questions asked about the draft, open and answered, in the order asked."""
    from ralph.plan.drafts import draft_questions
    from ralph.store.reader import plan_path, read_plan

    if not plan_path(draft.root).exists():
        return []
    return draft_questions(read_plan(draft.root), draft.name)


def step(draft: Draft) -> Step:
    asked = questions(draft)
    if any(not q.get("answer") for q in asked):
        return Step.QUESTIONS
    unseen = any(q["id"] not in draft.told for q in asked)
    if not draft.exists() or unseen or draft.feedback:
        return Step.RUN
    return Step.APPROVE


@dataclass(frozen=True)
class RunOutcome:
    log: str
    asked: list[Record]  # the questions this run asked
    drafted: bool  # a draft is there to approve


def run(draft: Draft, settings: Settings, console: Console) -> RunOutcome:
    """One drafting run, given the answers and feedback it has not had; what it left checked:
    the plan may only have gained its questions, the work tree nothing (both put back and refused
    otherwise). Its questions are committed."""
    from ralph.store.git import Repo
    from ralph.store.lock import exclusive_run
    from ralph.store.reader import plan_path

    if not plan_path(draft.root).exists():
        from ralph.usecases.initialize import init

        init(draft.root)
    repo = Repo(draft.root)
    _refuse_beside_a_construct(repo)
    with exclusive_run(repo.git_dir() / DRAFT_LOCK, "ralph spec draft"):  # one drafting run at a time
        return _run(draft, settings, console, repo)


def _refuse_beside_a_construct(repo: Repo) -> None:
    """A drafting run commits the plan: beside a live `ralph construct`, which commits it too, a
    person's answer would go to the run's commit instead (ralph.store.beside)."""
    from ralph.store.beside import live_run

    pid = live_run(repo)
    if pid is not None:
        raise Refused(f"a ralph construct runs in this work tree (pid {pid}): draft when it has ended")


def _run(draft: Draft, settings: Settings, console: Console, repo: Repo) -> RunOutcome:
    from ralph.loop.process.signals import signal_number
    from ralph.loop.stages.draft import DraftRequest, run_draft
    from ralph.store.reader import read_bytes

    plan_before, dirty_before = read_bytes(draft.root), _dirty(repo)
    answered = [q for q in questions(draft) if q.get("answer")]
    draft.folder.mkdir(parents=True, exist_ok=True)
    request = DraftRequest(
        draft.name, draft.file.resolve(), draft.idea, answered, draft.feedback, draft.exists()
    )
    try:
        result = run_draft(draft.root, settings, request, console)
    except KeyboardInterrupt as exc:
        _put_back_plan(draft.root, plan_before)
        if not request.revising:  # half a first draft is no draft; a revision's feedback still waits
            draft.file.unlink(missing_ok=True)
        raise Interrupted(signal_number(exc)) from None
    log = str(result.log_path)
    try:
        _check_fence(draft, repo, plan_before, dirty_before, log)
        if draft.file.exists() or draft.file.is_symlink():
            draft.text()  # refused now, not at approval: a link, not UTF-8, too long
        if not result.ok and not _open(draft):  # a half-written draft is no draft
            said = f"the drafting agent ended ({result.describe()}); its draft is not kept; log {log}"
            raise DraftFailed(said)
    except DraftFailed:
        draft.file.unlink(missing_ok=True)  # what such a run drafted is not kept either
        raise
    asked = _open(draft)
    if asked:
        repo.index.commit_paths(
            {"plan.jsonl"}, f"ralph: spec draft {draft.name}: {len(asked)} question(s) for a person"
        )
    draft.told, draft.feedback, draft.runs = [q["id"] for q in answered], None, draft.runs + 1
    draft.save()
    drafted = draft.exists()
    if not asked and not drafted:
        said = "" if result.ok else f" ({result.describe()})"
        raise DraftFailed(f"the drafting agent ended{said} without a draft in {draft.relative()}; log {log}")
    return RunOutcome(log, asked, drafted and not asked)


def _open(draft: Draft) -> list[Record]:
    return [q for q in questions(draft) if not q.get("answer")]


def _dirty(repo: Repo) -> set[str]:
    from ralph.store.lock import RALPH_FILES

    return {path for path in repo.changes.paths() if not RALPH_FILES.fullmatch(path) and path != "plan.jsonl"}


def _put_back_plan(root: Path, before: bytes) -> None:
    from ralph.store.files import write_atomic
    from ralph.store.reader import plan_path, read_bytes

    if read_bytes(root) != before:
        write_atomic(plan_path(root), before)


def _check_fence(draft: Draft, repo: Repo, plan_before: bytes, dirty_before: set[str], log: str) -> None:
    """Refuse, and undo, what the run did beyond its draft and its questions (possible without
    the sandbox; with it, the fence stops it first)."""
    changed = _dirty(repo) - dirty_before
    if changed:
        _put_back_plan(draft.root, plan_before)
        repo.changes.revert(changed)
        shown = ", ".join(printable(path) for path in sorted(changed)[:5])
        raise DraftFailed(f"the drafting agent changed files beyond its draft ({shown}): undone, log {log}")
    extra = _plan_changes(draft, plan_before)
    if extra:
        _put_back_plan(draft.root, plan_before)
        raise DraftFailed(
            f"the drafting agent changed the plan beyond its questions ({extra}): undone, log {log}"
        )


def _plan_changes(draft: Draft, before: bytes) -> str:
    """What in the plan now is not as before but for new questions about this draft ('' if none)."""
    from ralph.plan.drafts import is_draft_question
    from ralph.plan.loader import load
    from ralph.store.reader import read_bytes

    try:
        old = {line.raw for line in load(before).records()}
        new = list(load(read_bytes(draft.root)).records())
    except RalphError as exc:
        return f"it is no longer valid: {exc}"
    gone = old - {line.raw for line in new}
    added = [line for line in new if line.raw not in old and not is_draft_question(line.record, draft.name)]
    if gone:
        return f"{len(gone)} record(s) changed or removed"
    if added:
        return f"{len(added)} record(s) that are no questions about the draft"
    return ""


def revise(draft: Draft, feedback: str) -> None:
    """The next run revises the draft with the person's feedback."""
    if not feedback.strip():
        raise InvalidInput("say what to change in the draft")
    draft.feedback = feedback.strip()
    draft.save()


def accept(draft: Draft) -> tuple[str, str | None]:
    """specs/NAME.md from the draft, committed alone with the plan's draft questions taken out
    (their text and answers in the message); the draft's files go. Returns the spec's path and
    the commit."""
    from ralph.store.git import Repo
    from ralph.store.transaction import transaction

    if step(draft) is not Step.APPROVE:
        raise Refused(
            f"the draft of {draft.spec} is not ready to accept: run `ralph spec draft {draft.name}`"
        )
    text = draft.text()
    _write_new(draft.root / draft.spec, text.encode("utf-8"), draft.spec)
    paths = {draft.spec}
    asked: list[Record] = []
    if questions(draft):
        with transaction(draft.root, commit=False) as change:
            asked = change.plan.forget_draft(draft.name)
        paths.add("plan.jsonl")
    commit, _ = Repo(draft.root).index.commit_paths(paths, _accept_message(draft, asked))
    _drop_files(draft)
    return draft.spec, commit


def _write_new(path: Path, data: bytes, relative: str) -> None:
    """Write `path` whole or not at all, and never over a file: a temporary file beside it is
    linked to its name (which fails when the name is taken), then removed."""
    import tempfile

    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        try:
            os.link(temp, path)
        except FileExistsError:
            raise Refused(f"{relative} exists: it was made meanwhile; nothing was written over it") from None
    finally:
        os.unlink(temp)


def _accept_message(draft: Draft, asked: list[Record]) -> str:
    by = f" by {draft.agent}" if draft.agent else ""
    lines = [f"ralph: spec {draft.spec}: drafted{by}, accepted", "", f"Idea: {draft.idea}"]
    if asked:
        lines += ["", "Questions asked while drafting, with the answers:"]
        for question in asked:
            lines += [f"- Q ({question['id']}): {question['text']}", f"  A: {question.get('answer', '')}"]
    return "\n".join(printable(line) for line in lines)


def reject(draft: Draft) -> str | None:
    """The draft goes, and its questions leave the plan (one commit when there were any)."""
    from ralph.store.transaction import transaction

    commit = None
    if questions(draft):
        with transaction(draft.root) as change:
            change.plan.forget_draft(draft.name)
            change.message = f"ralph: spec draft {draft.name} rejected: its questions go"
        commit = change.commit
    _drop_files(draft)
    return commit


def _drop_files(draft: Draft) -> None:
    import shutil

    shutil.rmtree(draft.folder, ignore_errors=True)
    draft.state_file.unlink(missing_ok=True)
