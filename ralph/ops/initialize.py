"""`ralph init`: the files ralph needs in a repository, created once and committed."""

from __future__ import annotations

from pathlib import Path

from ralph.store.reader import PLAN_NAME

GITIGNORE_LINES = ("/build/", f"/{PLAN_NAME}.lock", f"/.{PLAN_NAME}.*.tmp")


def init(root: Path, commit: bool = True) -> list[str]:
    """Create plan.jsonl, specs/ and build/ralph-logs/ (ignored by git). Safe to run again.

    Returns what it created. With `commit`, a plan.jsonl it created is committed (one that was
    already there is the user's: its edits go through the usual checked path), and so is
    .gitignore when it had no uncommitted changes of the user's before ralph added its lines."""
    from ralph.store.git import Repo, blob_sha
    from ralph.store.transaction import refuse_unsafe_commit

    created = []
    for folder in (root / "specs", root / "build" / "ralph-logs"):
        if not folder.is_dir():
            folder.mkdir(parents=True)
            created.append(str(folder.relative_to(root)) + "/")
    repo = Repo(root) if commit else None
    if repo:
        refuse_unsafe_commit(repo)
    base = repo.snapshot() if repo else None
    gitignore = root / ".gitignore"
    before = gitignore.read_bytes() if gitignore.exists() else None
    missing = [
        line
        for line in GITIGNORE_LINES
        if line not in (before or b"").decode("utf-8", "surrogateescape").splitlines()
    ]
    if missing:
        prefix = "" if not before or before.endswith(b"\n") else "\n"
        with open(gitignore, "a", encoding="utf-8") as handle:
            handle.write(prefix + "\n".join(missing) + "\n")
        created.append(".gitignore entries: " + " ".join(missing))
        committed_before = Repo.blob_in(base[1], ".gitignore") if base else None
        if repo and (
            committed_before == blob_sha(before) if before is not None else committed_before is None
        ):
            base = repo.commit_file(
                ".gitignore", gitignore.read_bytes(), "ralph: init: ignore ralph's files", base
            )
            base = (base[0] or repo.head(), base[1])
    plan_file = root / PLAN_NAME
    if not plan_file.exists():
        plan_file.write_bytes(b"")
        created.append(PLAN_NAME)
    if repo and PLAN_NAME in created:
        repo.commit_file(PLAN_NAME, b"", "ralph: init", base)
    return created
