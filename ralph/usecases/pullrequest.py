"""A pull request for the work of a run (`ralph pr`, `ralph construct --pr`): the branch pushed to
the remote, then the request opened through the forge's own CLI (`gh pr create` for GitHub,
`glab mr create` for GitLab), the run's report as its description. ralph keeps no forge token of
its own: the CLI the person has logged in with does the talking. Nothing runs through a shell."""

from __future__ import annotations

import contextlib
import json
import shutil
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from ralph.errors import GitError, InvalidInput, Refused, RemoteError
from ralph.store import programs
from ralph.store.git import Repo
from ralph.store.remote import Remote

# The last construct run's spec, outcome and text report, kept for `ralph pr` (build/ralph-logs is
# ignored by git).
LAST_REPORT = Path("build") / "ralph-logs" / "last-report.json"
# The most the forge's CLI may take to open the request (a push is done by then): then it is killed.
FORGE_TIMEOUT_S = 300.0


class Forge(StrEnum):
    GITHUB = "gh"
    GITLAB = "glab"


_INSTALL = {
    Forge.GITHUB: "GitHub's CLI, https://cli.github.com",
    Forge.GITLAB: "GitLab's CLI, https://gitlab.com/gitlab-org/cli",
}


@dataclass(frozen=True)
class PullRequest:
    title: str
    body: str
    draft: bool = False
    base: str | None = None  # the branch to merge into; None: the forge's default branch


def forge_of(url: str) -> Forge:
    """GitLab for a remote whose host names it (gitlab.com, gitlab.example.org), else GitHub."""
    host = urlparse(url).hostname if "://" in url else url.split("@")[-1].split(":")[0]
    return Forge.GITLAB if host and "gitlab" in host.lower() else Forge.GITHUB


def open_pull_request(
    root: Path, request: PullRequest, remote: str = "origin", forge: str | None = None
) -> dict[str, Any]:
    """Push the branch checked out to `remote`, then open the request. Checked first, so a refusal
    changes nothing: a detached HEAD, an unknown remote, the forge's CLI missing."""
    repo = Repo(root)
    branch, head = repo.branch(), repo.head()
    if branch is None or head is None:
        raise Refused("HEAD is not on a branch with commits: check out the branch to propose")
    code, url, _ = repo.attempt("remote", "get-url", remote)
    if code != 0:
        raise Refused(f"no git remote {remote!r}: add one (git remote add {remote} URL) or pass --remote")
    chosen = Forge(forge) if forge else forge_of(url.strip())
    program = shutil.which(chosen.value, path=programs.trusted_path())  # never one an agent wrote
    if program is None:
        raise Refused(
            f"{chosen.value} is not installed ({_INSTALL[chosen]}):"
            " install it and log in, or push and open the request by hand"
        )
    if request.base == branch:
        raise InvalidInput(f"the branch {branch} is the base itself: propose from a branch of its own")
    try:
        pushed = Remote(repo, remote, branch, retries=0).push(head)
    except RemoteError as exc:
        raise RemoteError(f"cannot push {branch}: {exc}") from None
    if not pushed:
        raise Refused(
            f"{remote}/{branch} has commits this branch lacks: merge them first (git pull), then again"
        )
    argv = _create_argv(chosen, program, branch, request)
    try:
        done = programs.run(
            argv,
            timeout_s=FORGE_TIMEOUT_S,
            cwd=root,
            input=request.body if chosen is Forge.GITHUB else None,
            env=programs.trusted_env(),
        )
    except TimeoutError:
        raise GitError(
            f"{chosen.value} could not open the request: it did not finish in {FORGE_TIMEOUT_S:g}s"
        ) from None
    if done.returncode != 0:
        said = (done.stderr.strip() or done.stdout.strip() or "no message").splitlines()[-1]
        raise GitError(f"{chosen.value} could not open the request (exit {done.returncode}): {said}")
    link = next((line.strip() for line in reversed(done.stdout.splitlines()) if "://" in line), None)
    return {"forge": str(chosen), "remote": remote, "branch": branch, "commit": head, "url": link}


def _create_argv(forge: Forge, program: str, branch: str, request: PullRequest) -> list[str]:
    """The forge CLI's create command, every value an argument of its own. gh reads the body from
    stdin (--body-file -); glab takes it as an argument (its '-' opens an editor)."""
    # --name=value throughout: a value that starts with '-' is never read as an option.
    if forge is Forge.GITHUB:
        argv = [program, "pr", "create", f"--head={branch}", f"--title={request.title}", "--body-file=-"]
        base = [f"--base={request.base}"] if request.base else []
    else:
        argv = [program, "mr", "create", f"--source-branch={branch}", f"--title={request.title}"]
        argv += [f"--description={request.body}", "--yes"]
        base = [f"--target-branch={request.base}"] if request.base else []
    return argv + base + (["--draft"] if request.draft else [])


def request_for(root: Path, spec: str, outcome: str, report: str) -> PullRequest:
    """The request for a run: titled by the spec's first heading, the report as its description,
    a draft unless every task was accepted."""
    heading = spec
    with contextlib.suppress(OSError):
        lines = (root / spec).read_text(encoding="utf-8", errors="replace").splitlines()
        heading = next(
            (line[2:].strip() for line in lines if line.startswith("# ") and line[2:].strip()), spec
        )
    body = f"Built by `ralph construct {spec}`; its report:\n\n```text\n{report.rstrip()}\n```\n"
    return PullRequest(f"{heading} (ralph construct: {outcome})", body, draft=outcome != "COMPLETE")


def save_report(root: Path, spec: str, outcome: str, report: str) -> None:
    """Keep the last run's report for `ralph pr`."""
    path = root / LAST_REPORT
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"spec": spec, "outcome": outcome, "report": report}), encoding="utf-8")


def last_report(root: Path) -> dict[str, str]:
    """{"spec", "outcome", "report"} of the last construct run here."""
    try:
        found = json.loads((root / LAST_REPORT).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        found = None
    if not isinstance(found, dict) or not all(
        isinstance(found.get(key), str) for key in ("spec", "outcome", "report")
    ):
        raise Refused(f"no report of a run here ({LAST_REPORT}): run ralph construct first")
    return {key: found[key] for key in ("spec", "outcome", "report")}
