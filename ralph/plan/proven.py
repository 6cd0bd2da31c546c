"""The plan contents this process proved valid, by their exact bytes, and what is known of their
lines: a plan loaded again is then parsed only, not validated again (ralph.plan.loader.load), and
a line seen before is not decoded again. A long-lived loop loads one plan many times per step."""

from __future__ import annotations

import threading
from itertools import compress
from operator import ne
from typing import Any

from ralph.plan.document import Document
from ralph.plan.line_index import Kinds, Record, Skeleton, split_lines

_NESTED = (dict, list)


class Proven:
    """The plan contents this process proved valid, by their exact bytes (never by a file's
    mtime: a plan rewritten within one clock tick is still seen), and each valid line's record.
    A long-lived loop loads one plan many times per step; with 10,000 finished tasks beside the
    work, decoding and validating every line each time was most of its CPU. Each load still gets
    records of its own (callers change them in place): copied from the line's first decoding."""

    CONTENTS = 8  # the plan now, the one committed, a runner's remote head: a few alternate
    LINES = 200_000  # beyond this (many large versions) start over rather than grow without end
    NEIGHBOURS = 16  # lines that may differ for a skeleton to be taken from a neighbour's

    def __init__(self) -> None:
        self.contents: dict[bytes, None] = {}
        self.lines: dict[bytes, tuple[Record | None, bool]] = {}  # raw -> (record, flat)
        self.seen: dict[bytes, None] = {}  # lines decoded once
        self.valid: set[bytes] = set()  # the lines of the contents proven, each valid where it is
        self.unsorted: list[list[bytes] | bytes] = []  # lines (or contents) not in `valid` yet
        # What documents of the contents found out of their lines (split, heads, types, places):
        # a loop loads its plan in each transaction, and a document handed on is not split again.
        self.skeletons: dict[bytes, Skeleton] = {}
        self.lock = threading.Lock()  # VERIFY's threads load too

    def holds(self, data: bytes) -> bool:
        return data in self.contents

    def add(self, data: bytes, doc: Document | None = None, lines: list[bytes] | None = None) -> None:
        """`data` is valid; `doc` is what it loaded as, when its lines may be new here; `lines`
        its lines, when the caller has them."""
        for line in doc.lines if doc is not None else ():
            if line.raw not in self.lines:
                self.remember_line(line.raw, line.record)
        with self.lock:
            if data not in self.contents:  # its lines join the valid ones when they are asked for
                self.unsorted.append(lines if lines is not None else data)
                self._sort_oldest()
            self.contents[data] = None
            while len(self.contents) > self.CONTENTS:
                oldest = next(iter(self.contents))
                del self.contents[oldest]
                self.skeletons.pop(oldest, None)

    def _sort_oldest(self) -> None:
        """Past CONTENTS waiting, the oldest join the valid lines now where they are lines already
        (a written plan's new lines, a trusted plan's split), and are let go of where they are
        whole contents (a split of each): a loop writes its plan many times between two loads of a
        commit's plan (a replay's), which are then checked across records only, not parsed again."""
        for waiting in self.unsorted[: -self.CONTENTS]:
            if isinstance(waiting, list):
                if len(self.valid) >= self.LINES:
                    self.valid.clear()
                self.valid.update(waiting)
        del self.unsorted[: -self.CONTENTS]

    def valid_lines(self) -> set[bytes]:
        """The lines of the contents proven: a command that loads its plan once never asks."""
        with self.lock:
            for lines in self.unsorted:
                if len(self.valid) >= self.LINES:
                    self.valid.clear()
                self.valid.update(lines if isinstance(lines, list) else split_lines(lines))
            self.unsorted.clear()
            return self.valid

    def keep_skeleton(self, data: bytes, skeleton: Skeleton) -> None:
        """What is known of the lines of `data`, proven valid, for the documents loaded from it."""
        with self.lock:
            if data in self.contents:  # gone from the contents: never looked up again
                self.skeletons[data] = skeleton

    def beside_a_neighbour(self, raws: list[bytes], read: Kinds) -> Skeleton:
        """The skeleton of these lines, what is known of them taken from the latest skeleton kept
        of as many lines where only a few differ (an agent's `ralph task done` rewrote one line of
        the loop's plan): those few read alone (their heads through `read`, the lines this process
        read), not every line looked up again."""
        with self.lock:
            kept = next(
                (known for known in reversed(self.skeletons.values()) if len(known.raws) == len(raws)), None
            )
        if kept is None or kept.heads is None or kept.kinds is None:
            return Skeleton(raws)
        changed = list(compress(range(len(raws)), map(ne, raws, kept.raws)))
        if len(changed) > self.NEIGHBOURS:
            return Skeleton(raws)
        # The lines left as they were are the neighbour's own bytes: their hashes are known, so a
        # lookup of every line (the lines redacted, the valid ones, the heads) costs no pass of
        # hashing 10,000 new copies.
        shared = list(kept.raws)
        for at in changed:
            shared[at] = raws[at]
        skeleton = Skeleton(shared)
        heads, kinds = list(kept.heads), list(kept.kinds)
        for at in changed:
            head = heads[at] = read.heads[raws[at]]
            kinds[at] = head[0] if head else None
        moved = {kept.kinds[at] for at in changed} | {kinds[at] for at in changed}
        skeleton.heads, skeleton.kinds = heads, kinds
        skeleton.positions = {kind: at for kind, at in kept.positions.items() if kind not in moved}
        skeleton.accepted = kept.accepted if "accept" not in moved else None
        return skeleton

    def remember_line(self, raw: bytes, record: Record | None) -> None:
        """Keep the line's record once it is seen twice: a one-shot command, which loads its plan
        once, pays no copy for it."""
        if raw not in self.seen:
            if len(self.seen) >= self.LINES:
                self.seen.clear()
            self.seen[raw] = None
            return
        if len(self.lines) >= self.LINES:
            self.lines.clear()
        flat = record is None or not [value for value in record.values() if type(value) in _NESTED]
        self.lines[raw] = (copied(record) if record is not None else None, flat)

    def forget(self) -> None:
        with self.lock:
            self.contents.clear()
            self.lines.clear()
            self.seen.clear()
            self.valid.clear()
            self.unsorted.clear()
            self.skeletons.clear()


PROVEN = Proven()


def is_proven(data: bytes) -> bool:
    """Whether this process proved `data` valid (loaded it strictly, or wrote it checked)."""
    return PROVEN.holds(data)


def proven(data: bytes, doc: Document | None = None) -> None:
    """`data` is valid (a transaction checked what it wrote): loading it again only parses it.
    `doc`: the document it was written from, when the caller has it: its lines are not split again,
    nor their heads and types read again."""
    if doc is None:
        PROVEN.add(data)
        return
    # Its other lines were valid where it was loaded from: those of the lines it wrote are new.
    PROVEN.add(data, lines=[line.raw for line in doc.present(doc.touched)])
    PROVEN.keep_skeleton(data, doc.skeleton())


def copied(value: Any) -> Any:
    """A JSON value's own copy (copy.deepcopy, without its memo and dispatch: JSON has no cycles)."""
    if type(value) is dict:
        return {key: copied(item) for key, item in value.items()}
    if type(value) is list:
        return [copied(item) for item in value]
    return value
