"""Why something failed, in the few lines a person reads: picked from a gate's output (the lines
that look like errors, and its end; never progress dots), and a recorded failure said in one line."""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable

ERROR_LINES = 12  # lines that look like errors, kept from anywhere in the output
TAIL_LINES = 10  # lines kept from its end
LINE_CHARS = 300  # of each line kept
ROOM_PAST_CUT = 64 * 1024  # of a longer line, kept until it is cut: the longest secret it can hide

# Lines that say why a test run or a build failed, in the tools a gate usually runs.
_ERROR = re.compile(
    r"""^(?:
        (?:FAILED|ERROR)[\s:]                      # pytest's short summary; unittest's headers
      | FAIL:\s                                   # unittest
      | E\s{2,}\S                                 # pytest's assertion explanation
      | \S+:\d+:\s(?:\w+\.)*\w*(?:Error|Exception)\b   # pytest's "test_x.py:4: AssertionError"
      | Traceback\s\(most\srecent\scall\slast\)
      | (?:\w+\.)*\w*(?:Error|Exception|Exit)(?::|$) # the exception a traceback ends with
      | g?make(?:\[\d+\])?:\s\*\*\*               # make: *** [Makefile:3: verify] Error 1
      | npm\s(?:ERR!|error)\s                      # npm
      | \s*[●✕×✗]\s                               # jest, vitest, mocha
      | .*?\berror(?:\[\w+\])?(?:\s\w+)?:\s        # compilers: "x.c:3: error: ...", error[E0308]:
      | .*?\bpanicked\sat\b                        # Rust and Go tests
      | ---\sFAIL:                                 # go test
      | not\sok\s                                  # TAP (node --test, prove)
    )""",
    re.VERBOSE | re.IGNORECASE,
)
# Progress lines: pytest's and unittest's dots (`....F..  [ 50%]`, `test_a.py ..F`, `E.`),
# rules, and ralph's own notes in the log. They say nothing about why.
_NOISE = re.compile(r"^(?:\S+\.py\s+)?[.FEsxX]+(?:\s+\[\s*\d+%\])?$|^[=_-]{4,}$|^\[ralph\] ")


class FailingLines:
    """Picks, from a gate's output as it streams by, the lines that explain a failure: the first
    lines that look like errors (pytest's `FAILED`/`E   `, tracebacks, `error:`, make's `***`)
    wherever they are, then the end of the output; never progress dots or blank lines."""

    def __init__(self, errors: int = ERROR_LINES, tail: int = TAIL_LINES):
        self.errors: list[tuple[int, str]] = []
        self.tail: deque[tuple[int, str]] = deque(maxlen=tail)
        self.most_errors, self.seen = errors, 0

    def __call__(self, line: str) -> None:
        """The supervisor's monitor: sees each line, never stops the run."""
        line = line.rstrip()
        if not line.strip() or _NOISE.match(line.strip()):
            return
        self.seen += 1
        # Kept with room past the cut, and cut when picked: a secret the cut falls inside must be
        # seen whole to be hidden (ralph.secrets.redacted_head).
        numbered = (self.seen, line[: LINE_CHARS + ROOM_PAST_CUT])
        self.tail.append(numbered)
        if len(self.errors) < self.most_errors and _ERROR.match(numbered[1][:LINE_CHARS]):
            self.errors.append(numbered)

    def lines(self) -> list[str]:
        """In the order they came, redacted and cut; "..." where lines were left out between the
        errors and the end."""
        from ralph.secrets import redacted_head

        tail = list(self.tail)
        first_of_tail = tail[0][0] if tail else self.seen + 1
        picked, last = [], 0
        for number, line in [*(e for e in self.errors if e[0] < first_of_tail), *tail]:
            if last and number > last + 1:
                picked.append("...")
            picked.append(redacted_head(line, LINE_CHARS))
            last = number
        return picked


def failing_lines(output: Iterable[str]) -> list[str]:
    """The lines of `output` that explain a failure (see FailingLines)."""
    sieve = FailingLines()
    for line in output:
        sieve(line)
    return sieve.lines()


def gist(failure: str, limit: int = 160) -> str:
    """A recorded failure in one line: its first line (what failed), then the first line after it
    that looks like an error, else (a first line ending in ":" introduces what follows) the last
    one before the pointer to the full output. An agent's own last words explain nothing."""
    lines = [line.rstrip() for line in failure.splitlines()]
    lines = [
        line for line in lines if line.strip() not in ("", "...") and not line.startswith("(full output: ")
    ]
    if not lines:
        return ""
    head, rest = lines[0], lines[1:]
    last = rest[-1] if rest and head.endswith(":") else ""
    telling = next((line for line in rest if _ERROR.match(line)), last)
    head, telling = " ".join(head.split()), " ".join(telling.split())
    room = max(limit - len(telling) - 1, 40)  # a long command shortens before the telling line
    if len(head) > room:
        head = head[: room // 2 - 2] + "..." + head[-(room - room // 2 - 1) :]
    said = f"{head} {telling}" if telling else head
    return said if len(said) <= limit else said[: limit - 3] + "..."
