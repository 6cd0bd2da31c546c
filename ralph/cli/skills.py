"""`ralph skills`: the skills the repository keeps for agents (ralph.loop.runs.skills), as each
stage's prompt lists them."""

from __future__ import annotations

import click

from ralph.cli.common import emit, json_option, root_of, say
from ralph.errors import EXIT_INVALID
from ralph.text import printable


@click.command(short_help="List the repository's skills for agents, and where each is.")
@json_option
@click.pass_context
def skills(ctx: click.Context, as_json: bool) -> None:
    """List the skills ralph finds in the work tree: a folder with a SKILL.md under .ralph/skills/
    or an agent CLI's skills folder (.claude/skills/, .codex/skills/, .agents/skills/,
    .opencode/skill/, .gemini/skills/). Each stage's prompt lists them by name, description and
    path; a skill whose front matter says `types: [...]` is listed for tasks of those types only.
    A SKILL.md whose front matter cannot be read is one line on stderr, `FILE:LINE: problem`, and
    the exit code is 2."""
    from ralph.loop.runs.skills import in_work_tree

    found, problems = in_work_tree(root_of(ctx))
    if as_json:
        emit(
            {
                "skills": [
                    {"name": s.name, "description": s.description, "path": s.path, "types": list(s.types)}
                    for s in found
                ],
                "problems": [str(problem) for problem in problems],
            }
        )
    else:
        for skill in found:
            types = f" (for {', '.join(skill.types)} tasks)" if skill.types else ""
            say(f"{printable(skill.name)}  {printable(skill.path)}{printable(types)}")
            say(f"  {printable(skill.description)}")
        if not found and not problems:
            say("no skills: add one as .ralph/skills/NAME/SKILL.md (front matter: name, description)")
    for problem in problems:
        say(f"ralph: skills: {printable(str(problem))}", err=True)
    if problems:
        ctx.exit(EXIT_INVALID)
