"""Stage prompts: one template per stage, shipped in ralph/loop/templates/ and overridable per
repository in .ralph/prompts/<stage>.md. A prompt is about one item; its size does not grow
with the plan."""

from __future__ import annotations

from pathlib import Path
from string import Template

PACKAGE_PROMPTS = Path(__file__).with_name("templates")
OVERRIDE_DIR = Path(".ralph") / "prompts"
EXCERPT_CHARS = 3000


def template_for(root: Path, stage: str) -> str:
    name = f"{stage.lower()}.md"
    override = root / OVERRIDE_DIR / name
    return (override if override.exists() else PACKAGE_PROMPTS / name).read_text(encoding="utf-8")


def render(root: Path, stage: str, values: dict[str, object]) -> str:
    """Fill the stage's template; unknown $names are left as they are (safe_substitute)."""
    return Template(template_for(root, stage)).safe_substitute({k: str(v) for k, v in values.items()})


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    return text if len(text) <= limit else "...\n" + text[-limit:]


def task_details(task: dict, dep_names: dict[str, str]) -> str:
    """The task's own facts, for a prompt: notes, criteria, dependencies, last failure."""
    parts = []
    accept = task.get("accept")
    if accept:
        criteria = accept if isinstance(accept, list) else [accept]
        parts.append("Acceptance criteria:\n" + "\n".join(f"- {c}" for c in criteria))
    if task.get("notes"):
        parts.append(f"Notes: {task['notes']}")
    if task.get("deps"):
        names = [f"{dep} ({dep_names.get(dep, 'accepted')})" for dep in task["deps"]]
        parts.append("Builds on: " + ", ".join(names))
    if task.get("reject_reason"):
        parts.append(f"Last time VERIFY rejected it: {task['reject_reason']}")
    if task.get("gate_failure"):
        parts.append(
            f"The last attempt failed (attempt {task.get('attempts', 1)}):\n{excerpt(task['gate_failure'])}"
        )
    return "\n\n".join(parts) + ("\n" if parts else "")
