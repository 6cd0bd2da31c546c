"""What a person changed in the plan with ralph's own commands while this run went on
(ralph.store.beside): theirs, not an agent's. The run judges an agent by what it changed on top
of them, never undoes them, and commits them first, under the person's own messages."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

from ralph.plan.merge import records_by_key, with_records_of
from ralph.plan.plan import Plan
from ralph.store import beside
from ralph.store.git import Repo


@dataclass(frozen=True)
class PersonsChanges:
    keys: frozenset[str]  # the records they changed (ralph.plan.integrity.record_key)
    messages: tuple[str, ...]  # their commands' messages, in order
    end: int  # where the ledger's next records start
    ops: tuple[str, ...] = ()  # each command's `Ralph-Op:` trailer lines ("" where none made it)
    # each record's line as their last command left it (None: removed), where the ledger kept it
    lines: tuple[tuple[str, str | None], ...] = ()

    def message(self) -> str:
        """One commit's message for them all: the one command's own, or a line per command; with
        their operations' trailers when every command has them (a runner replays them; a commit
        whose operations do not make its change is merged by record instead)."""
        from ralph.plan.ops import with_trailers

        if len(self.messages) == 1:
            text = self.messages[0]
        else:
            text = f"ralph: {len(self.messages)} changes made beside the run\n\n" + "\n".join(self.messages)
        known = self.ops and all(self.ops)
        return with_trailers(text, "\n".join(self.ops)) if known else text


def since(repo: Repo, offset: int, any_run: bool = False) -> PersonsChanges:
    """The changes written down for this run (`any_run`: for any) from ledger byte `offset` on."""
    found, end = beside.entries(repo, offset)
    mine = [entry for entry in found if any_run or entry.run == os.getpid()]
    keys = frozenset(key for entry in mine for key in entry.keys)
    lines: dict[str, str | None] = {}
    for entry in mine:  # the last command's version of each record
        for key in entry.keys:
            if entry.records is None or key not in entry.records:
                lines.pop(key, None)  # not kept: the plan's current line stands in
            else:
                lines[key] = entry.records[key]
    return PersonsChanges(
        keys,
        tuple(entry.message for entry in mine),
        end,
        tuple(entry.ops for entry in mine),
        tuple(sorted(lines.items())),
    )


def with_persons_changes(old: Plan, now: Plan, persons: PersonsChanges) -> Plan:
    """`old`, with each record the person changed as their command left it (added, changed, or
    gone), not as an agent changed it since (a DECOMPOSE moving a dependency on its parent);
    as `now` has it where the ledger did not keep their line."""
    records = records_by_key(now.doc, persons.keys)
    for key, line in persons.lines:
        records[key] = None if line is None else json.loads(line)
    return Plan(with_records_of(old.doc, records))
