"""The git work tree around agent runs (through gitpython): what changed, commit it, undo it.

Only paths the agent changed are ever committed or reverted: paths that were already dirty when
the loop started (with --allow-dirty) belong to the user and are left alone.
"""

from __future__ import annotations

from pathlib import Path

from ralph.errors import GitError

PLAN_NAME = "plan.jsonl"


class WorkTree:
    def __init__(self, root: Path):
        import git

        self.root = root
        self.repo = git.Repo(root)
        self.git = self.repo.git

    def changed_paths(self) -> set[str]:
        """Paths that differ from HEAD in the index or the work tree, and untracked files."""
        out = self.git.status("--porcelain=v1", "-z", "--untracked-files=all")
        paths: set[str] = set()
        entries = iter(out.split("\0"))
        for entry in entries:
            if not entry:
                continue
            status, path = entry[:2], entry[3:]
            paths.add(path)
            if "R" in status or "C" in status:
                paths.add(next(entries, ""))  # the rename's source path follows
        paths.discard("")
        return paths

    def commit(self, paths: set[str], message: str) -> tuple[str | None, list[str]]:
        """Commit exactly `paths` (added, changed or deleted); return the commit and its files."""
        paths = sorted(paths)
        if not paths:
            return None, []
        try:
            self.git.add("-A", "--", *paths)
            staged = self.git.diff("--cached", "--name-only", "--", *paths).split("\n")
            staged = [path for path in staged if path]
            if not staged:
                return None, []
            self.git.commit("--no-verify", "-q", "-m", message, "--", *staged)
        except Exception as exc:  # git.GitCommandError; imported lazily
            raise GitError(f"git commit failed: {getattr(exc, 'stderr', exc)}".strip()) from None
        return self.repo.head.commit.hexsha, staged

    def diff_stat(self, paths: set[str] | None = None) -> str:
        args = ["--stat", "HEAD"] + (["--", *sorted(paths)] if paths else [])
        return self.git.diff(*args) if self.repo.head.is_valid() else ""

    def save_patch(self, paths: set[str], target: Path) -> None:
        """Keep a failed attempt's changes as a patch (untracked files included) before undoing."""
        if not paths:
            return
        self.git.add("-N", "--", *sorted(paths))  # intent-to-add, so new files show in the diff
        target.write_text(self.git.diff("HEAD", "--binary", "--", *sorted(paths)) + "\n", encoding="utf-8")

    def revert(self, paths: set[str]) -> None:
        """Put `paths` back as HEAD has them; files HEAD does not have are removed."""
        if not paths:
            return
        tracked = set(self.git.ls_tree("-r", "--name-only", "HEAD", "--", *sorted(paths)).split("\n")) - {""}
        if tracked:
            self.git.checkout("HEAD", "--", *sorted(tracked))
        for path in sorted(paths - tracked):
            self.git.rm("--cached", "-q", "--ignore-unmatch", "--", path)
            (self.root / path).unlink(missing_ok=True)

    def head_plan(self) -> bytes | None:
        try:
            return self.repo.head.commit.tree[PLAN_NAME].data_stream.read()
        except (KeyError, ValueError):
            return None
