"""Skills: instructions a repository keeps for agents, one folder each with a SKILL.md whose front
matter says what the skill is for. ralph reads only the front matter (name, description, and the
task types a skill applies to, if it says) and lists the skills in each stage's prompt with their
paths: the agent reads a skill's body when its description fits the work.

ralph looks in its own folder and in the agent CLIs' (SKILL_DIRS), so a skill written for Claude
Code serves a Codex run too. A skill's text is the repository's, so the prompt fences it as data;
a BUILD may not change one unless its task's scope names it (ralph.loop.runs.judged), and the
judges list the skills as the run's first commit has them."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

SKILL_FILE = "SKILL.md"
# ralph's own folder first: of two skills with one name, the first found is listed.
SKILL_DIRS = (
    ".ralph/skills",
    ".claude/skills",
    ".codex/skills",
    ".agents/skills",
    ".opencode/skill",
    ".opencode/skills",
    ".gemini/skills",
)
MAX_DESCRIPTION = 400  # characters of a description shown in a prompt
_KEY_VALUE = re.compile(r"^([A-Za-z][A-Za-z0-9_-]*)\s*:\s*(.*)$")


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    path: str  # the SKILL.md, relative to the repository root
    types: tuple[str, ...] = ()  # the task types it applies to; none: every task

    def applies_to(self, task_type: str | None) -> bool:
        return not self.types or task_type is None or task_type in self.types


@dataclass(frozen=True)
class SkillProblem:
    path: str
    line: int
    problem: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.problem}"


def skill_files(root: Path) -> list[str]:
    """The SKILL.md files of the skill folders in the work tree at `root`, relative to it."""
    found = []
    for folder in SKILL_DIRS:
        base = root / folder
        if base.is_dir() and not base.is_symlink():
            found += sorted(
                path.relative_to(root).as_posix()
                for path in base.glob(f"*/{SKILL_FILE}")
                if path.is_file() and not path.is_symlink() and not path.parent.is_symlink()
            )
    return found


def discover(
    paths: Iterable[str], read: Callable[[str], bytes | None]
) -> tuple[list[Skill], list[SkillProblem]]:
    """The skills of the SKILL.md files `paths` (read through `read`: the work tree's, or a
    commit's), and a problem for each one whose front matter cannot be read."""
    skills: list[Skill] = []
    problems: list[SkillProblem] = []
    for path in paths:
        data = read(path)
        if data is None:
            continue
        parsed = parse(path, data.decode("utf-8", "replace"))
        if isinstance(parsed, SkillProblem):
            problems.append(parsed)
        elif all(skill.name != parsed.name for skill in skills):
            skills.append(parsed)
    return skills, problems


def in_work_tree(root: Path) -> tuple[list[Skill], list[SkillProblem]]:
    def read(path: str) -> bytes | None:
        try:
            return (root / path).read_bytes()
        except OSError:
            return None

    return discover(skill_files(root), read)


def parse(path: str, text: str) -> Skill | SkillProblem:
    """A SKILL.md's front matter: `---`, lines of `key: value` (a list as `[a, b]`), `---`."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        return SkillProblem(path, 1, "no front matter: the file must start with a line '---'")
    fields: dict[str, str] = {}
    for number, line in enumerate(lines[1:], start=2):
        if line.strip() == "---":
            return _skill(path, fields, number)
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _KEY_VALUE.match(line)
        if match is None:
            return SkillProblem(path, number, f"not a 'key: value' line: {line.strip()[:60]!r}")
        fields[match.group(1).lower()] = _unquoted(match.group(2).strip())
    return SkillProblem(path, len(lines), "the front matter has no closing '---'")


def _skill(path: str, fields: dict[str, str], end: int) -> Skill | SkillProblem:
    missing = [key for key in ("name", "description") if not fields.get(key)]
    if missing:
        return SkillProblem(path, end, f"the front matter has no {' and no '.join(missing)}")
    types = fields.get("types", "")
    listed = types[1:-1] if types.startswith("[") and types.endswith("]") else types
    return Skill(
        name=" ".join(fields["name"].split()),
        description=" ".join(fields["description"].split()),
        path=path,
        types=tuple(_unquoted(t.strip()) for t in listed.split(",") if t.strip()),
    )


def _unquoted(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


def prompt_section(skills: Iterable[Skill], task_type: str | None = None) -> str:
    """The prompt's list of the skills that apply (fenced as data: the repository wrote them), or
    nothing when none does."""
    from ralph.loop.runs.prompts import data_block, one_line

    listed = [
        f"- {one_line(skill.name)}: {one_line(skill.description)[:MAX_DESCRIPTION]} ({skill.path})"
        for skill in skills
        if skill.applies_to(task_type)
    ]
    if not listed:
        return ""
    block = data_block("skills in this repository: name, what it is for, its file", "\n".join(listed))
    return f"{block}\nWhen a skill's description fits your work, read its file first and follow it.\n\n"
