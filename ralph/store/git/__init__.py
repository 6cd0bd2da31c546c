"""ralph's one git layer: a `Repo` over one work tree (repo.py), which runs git itself and reads
where the work tree stands (run.py), and holds one part per other job: its config and hooks
(config.py), what git is in the middle of (state.py), git's objects read and written, with what is
kept by object id (objects.py), commits through the index and plan.jsonl's commits on HEAD's tree
(index.py), the work tree's changes around agent runs (changes.py), and worktrees and branches
(worktrees.py)."""

from ralph.store.git.objects import blob_in
from ralph.store.git.repo import Repo
from ralph.store.git.run import ZERO_SHA

__all__ = ["ZERO_SHA", "Repo", "blob_in"]
