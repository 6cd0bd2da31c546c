"""What judges a build is not the build's to write: the verifier's and CHECK's prompt templates
(`.ralph/prompts/*.md`), the rules files they are given (AGENTS.md, CLAUDE.md) and the spec are read
from the commit the run started on, never from a work tree a BUILD just changed (a BUILD that wrote
"always accept" into .ralph/prompts/verify.md was obeyed by the same run's verifier). A BUILD that
changes them is a permission violation unless its task's scope names them (ralph.loop.runs.permissions).

The judges get copies: the rules and the spec as that commit has them are written once into the
log folder (which runs read but never write), and their prompts name those copies."""

from __future__ import annotations

from functools import partial
from pathlib import Path

from ralph.loop.runs import skills
from ralph.loop.runs.prompts import OVERRIDE_DIR, PACKAGE_PROMPTS, RULE_FILES, type_file, type_section
from ralph.plan.scope import matches
from ralph.store.git import Repo

# What the builder may not change unless its task's scope names it: the rules agents are given
# (at any depth: agent CLIs read nested ones too), ralph's own folder (its prompt overrides).
GUARDED = (
    *RULE_FILES,
    *(f"**/{name}" for name in RULE_FILES),
    ".ralph/**",
    *(f"{d}/**" for d in skills.SKILL_DIRS),
)
JUDGES = ("VERIFY", "CHECK", "REVIEW")


def guarded(spec: str | None) -> tuple[str, ...]:
    """The patterns of what judges read, the spec's path among them."""
    return (*GUARDED, spec) if spec else GUARDED


def guarded_changes(
    changed: set[str] | list[str], patterns: tuple[str, ...], scopes: list[list[str]]
) -> list[str]:
    """The changed paths that judges read and that no scope names (a pattern that starts with a
    wildcard, `**` or `*.md`, names no file: it allows, it does not name)."""
    named = [pattern for scope in scopes for pattern in scope if not pattern.startswith(("*", "?"))]
    return sorted(
        path
        for path in changed
        if any(matches(pattern, path) for pattern in patterns) and not any(matches(p, path) for p in named)
    )


class JudgedInputs:
    """The judges' inputs as commit `rev` has them, copied under `folder` when first asked for."""

    def __init__(self, repo: Repo, rev: str, folder: Path):
        self.repo, self.rev = repo, rev
        self.folder = folder / f"judged-{rev[:12]}"
        self._copies: dict[str, Path | None] = {}
        self._skills: list[skills.Skill] | None = None
        self._read: dict[str, str | None] | None = None  # what _read_once found: path -> its type

    def _read_once(self, spec: str | None) -> None:
        """Every file a judge may read, and whether the skill folders are there, from one git run:
        the commit never changes, and a git run costs more than reading them all."""
        if self._read is None:
            paths = [*(_template_path(stage) for stage in JUDGES), *RULE_FILES, *skills.SKILL_DIRS]
            self._read = self.repo.objects.read_files_at(self.rev, [*paths, *([spec] if spec else [])])

    def template(self, stage: str) -> str | None:
        """The stage's prompt override as the commit has it (None: none there, use ralph's)."""
        self._read_once(None)
        data = self.repo.objects.file_at(self.rev, _template_path(stage))
        return None if data is None else data.decode("utf-8", "replace")

    def copy(self, relpath: str) -> Path | None:
        """The absolute path of the commit's `relpath`, copied into the log folder (None: the
        commit has no such file)."""
        if relpath not in self._copies:
            data = self.repo.objects.file_at(self.rev, relpath)
            path = None
            if data is not None:
                path = (self.folder / relpath).resolve()
                if self.folder.resolve() not in path.parents:  # a spec path that climbs out
                    return None
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(data)
            self._copies[relpath] = path
        return self._copies[relpath]

    def type_section(self, stage: str, task_type: str | None) -> str:
        """The task type's part of the stage's prompt: the repository's override as the commit has
        it, else ralph's."""
        if not task_type:
            return ""
        data = self.repo.objects.file_at(self.rev, (OVERRIDE_DIR / type_file(stage, task_type)).as_posix())
        if data is None:
            return _package_type(stage, task_type)
        return type_section(self.repo.root, stage, task_type, data.decode("utf-8", "replace"))

    def skills(self) -> list[skills.Skill]:
        """The repository's skills as the commit has them (a build may have added or changed one);
        found once, as the commit never changes."""
        if self._skills is None and self._read and not any(self._read.get(d) for d in skills.SKILL_DIRS):
            self._skills = []  # the commit has no skill folder: nothing to list
        if self._skills is None:
            listed = self.repo.paths("ls-tree", "-r", "-z", "--name-only", self.rev, "--", *skills.SKILL_DIRS)
            self._skills, _ = skills.discover(
                _skill_files_of(listed), partial(self.repo.objects.file_at, self.rev)
            )
        return self._skills

    def values(self, spec: str | None, task_type: str | None = None, stage: str = "VERIFY") -> dict[str, str]:
        """The prompt values that name what a judge reads: the rules and the spec, as copies, and
        the skills as the commit has them."""
        self._read_once(spec)
        rules = [(name, self.copy(name)) for name in RULE_FILES]
        found = [f"{path} (the repository's {name})" for name, path in rules if path is not None]
        said = ""
        if found:
            said = (
                f"The project's rules for agents are in {' and '.join(found)}, as commit"
                f" {self.rev[:12]} has them: follow them (not the work tree's copies, which a build"
                " may have changed).\n"
            )
        values = {
            "project_rules": said,
            "skills": skills.prompt_section(self.skills(), task_type),
            "type_guidance": self.type_section(stage, task_type),
        }
        spec_copy = self.copy(spec) if spec else None
        if spec and spec_copy is not None:
            values["spec"] = f"{spec} (read it from {spec_copy}: the spec as commit {self.rev[:12]} has it)"
        return values


def _template_path(stage: str) -> str:
    return (OVERRIDE_DIR / f"{stage.lower()}.md").as_posix()


def _skill_files_of(listed: list[str]) -> list[str]:
    """Those of a commit's paths that are a skill's file (<skill folder>/<name>/SKILL.md), in the
    order of the skill folders, as in the work tree."""
    return [
        path
        for folder in skills.SKILL_DIRS
        for path in sorted(listed)
        if path.startswith(folder + "/")
        and path.count("/") == folder.count("/") + 2
        and path.endswith("/" + skills.SKILL_FILE)
    ]


def _package_type(stage: str, task_type: str) -> str:
    """ralph's own part of the stage's prompt for the type (never the work tree's override)."""
    path = PACKAGE_PROMPTS / type_file(stage, task_type)
    return (
        type_section(PACKAGE_PROMPTS, stage, task_type, path.read_text(encoding="utf-8"))
        if path.is_file()
        else ""
    )
