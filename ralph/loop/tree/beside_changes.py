"""What a person changed in the plan with ralph's own commands while this run went on
(ralph.store.beside): theirs, not an agent's. The run judges an agent by what it changed on top
of them, never undoes them, and commits them first, under the person's own messages."""

from __future__ import annotations

import os
from dataclasses import dataclass

from ralph.plan.overlay import with_records_of
from ralph.plan.plan import Plan
from ralph.store import beside
from ralph.store.git import Repo


@dataclass(frozen=True)
class PersonsChanges:
    entries: tuple[beside.Entry, ...]  # their commands, as the ledger has them, in order
    end: int  # where the ledger's next records start

    @property
    def keys(self) -> frozenset[str]:
        """The records they changed (ralph.plan.integrity.record_key)."""
        return frozenset(key for entry in self.entries for key in entry.keys)

    def message(self) -> str:
        """One commit's message for them all: the one command's own, or a line per command; with
        their operations' trailers when every command has them (a runner replays them; a commit
        whose operations do not make its change is merged by record instead)."""
        from ralph.plan.ops import with_trailers

        messages = [entry.message for entry in self.entries]
        if len(messages) == 1:
            text = messages[0]
        else:
            text = f"ralph: {len(messages)} changes made beside the run\n\n" + "\n".join(messages)
        ops = [entry.ops for entry in self.entries]  # "" where no operation made the change
        return with_trailers(text, "\n".join(ops)) if ops and all(ops) else text


def since(repo: Repo, offset: int, any_run: bool = False) -> PersonsChanges:
    """The changes written down for this run (`any_run`: for any) from ledger byte `offset` on."""
    found, end = beside.entries(repo, offset)
    mine = tuple(entry for entry in found if any_run or entry.run == os.getpid())
    return PersonsChanges(mine, end)


def with_persons_changes(old: Plan, now: Plan, persons: PersonsChanges) -> Plan:
    """`old`, with each record the person changed as their command left it (added, changed, or
    gone), not as an agent changed it since (a DECOMPOSE moving a dependency on its parent);
    as `now` has it where the ledger did not keep their line."""
    return Plan(with_records_of(old.doc, beside.as_written(persons.entries, now.doc)))
