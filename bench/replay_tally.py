"""Subject "tally" of bench_replay.py: a small Python package (word counts, sentences,
syllables, reading ease and a command line) whose history of 12 commits is written out below,
each commit with its tests, as a person would have made them: later commits extend files
earlier ones made, and some use functions of others (`uses`). Its suite takes a fraction of a
second: the replay's timings then show the loop's own costs, which a heavier suite hides."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from bench_construct import SPEC
from replay_history import History, Recorder, new_repo

# The base commit: the package with its first module and test.
BASE = {
    "pyproject.toml": '[tool.pytest.ini_options]\ntestpaths = ["tests"]\naddopts = "-p no:cacheprovider"\n',
    ".gitignore": "__pycache__/\n.pytest_cache/\n",
    "tally/__init__.py": '"""tally: small statistics of English text."""\n',
    "tally/words.py": '''"""Words of a text."""

import re

WORD = re.compile(r"[A-Za-z]+")


def words(text):
    """The words of `text`, in order, lower-cased."""
    return [match.group(0).lower() for match in WORD.finditer(text)]
''',
    "tests/test_words.py": """from tally.words import words


def test_words_are_lower_cased_in_order():
    assert words("The cat, the HAT.") == ["the", "cat", "the", "hat"]


def test_no_words():
    assert words(" 1, 2 ... ") == []
""",
}


@dataclass
class Commit:
    subject: str
    changes: list[tuple]  # ("write", path, text), ("append", path, text), ("replace", path, old, new)
    uses: list[int] = field(default_factory=list)  # earlier commits whose functions it calls


HISTORY = [
    Commit(
        "Count how often each word occurs",
        [
            ("replace", "tally/words.py", "import re\n", "import re\nfrom collections import Counter\n"),
            (
                "append",
                "tally/words.py",
                '\n\ndef count(text):\n    """How often each word occurs."""\n'
                "    return Counter(words(text))\n",
            ),
            (
                "write",
                "tests/test_count.py",
                "from tally.words import count\n\n\ndef test_counts_ignore_case():\n"
                '    assert count("a b A c b a") == {"a": 3, "b": 2, "c": 1}\n',
            ),
        ],
    ),
    Commit(
        "Split a text into sentences",
        [
            (
                "write",
                "tally/sentences.py",
                '''"""Sentences of a text."""

import re

END = re.compile(r"(?<=[.!?])\\s+")


def sentences(text):
    """The sentences of `text`: split after '.', '!' or '?' followed by white space."""
    return [part.strip() for part in END.split(text.strip()) if part.strip()]
''',
            ),
            (
                "write",
                "tests/test_sentences.py",
                """from tally.sentences import sentences


def test_split_after_end_marks():
    assert sentences("One. Two!  Three?") == ["One.", "Two!", "Three?"]


def test_no_sentence():
    assert sentences("  ") == []
""",
            ),
        ],
    ),
    Commit(
        "Report the most common words",
        [
            (
                "append",
                "tally/words.py",
                '\n\ndef top(text, n=3):\n    """The `n` most common words, most common first; ties in'
                ' order of first use."""\n    return [word for word, _ in count(text).most_common(n)]\n',
            ),
            (
                "write",
                "tests/test_top.py",
                "from tally.words import top\n\n\ndef test_most_common_first():\n"
                '    assert top("b a b c a b", 2) == ["b", "a"]\n',
            ),
        ],
    ),
    Commit(
        "Estimate reading time",
        [
            (
                "write",
                "tally/timing.py",
                '''"""How long a text takes to read."""

import math

from tally.words import words

WORDS_PER_MINUTE = 200


def reading_minutes(text, speed=WORDS_PER_MINUTE):
    """Whole minutes to read `text` at `speed` words a minute."""
    return math.ceil(len(words(text)) / speed)
''',
            ),
            (
                "write",
                "tests/test_timing.py",
                """from tally.timing import reading_minutes


def test_rounds_up_to_whole_minutes():
    assert reading_minutes("word " * 200) == 1
    assert reading_minutes("word " * 201) == 2
    assert reading_minutes("") == 0
""",
            ),
        ],
    ),
    Commit(
        "Average sentence length in words",
        [
            ("replace", "tally/sentences.py", "\nEND", "\nfrom tally.words import words\n\nEND"),
            (
                "append",
                "tally/sentences.py",
                '''

def average_length(text):
    """The mean number of words per sentence (0.0 for no sentence)."""
    found = sentences(text)
    return sum(len(words(sentence)) for sentence in found) / len(found) if found else 0.0
''',
            ),
            (
                "append",
                "tests/test_sentences.py",
                """

def test_average_length():
    from tally.sentences import average_length

    assert average_length("One two. Three four five six!") == 3.0
    assert average_length("") == 0.0
""",
            ),
        ],
    ),
    Commit(
        "Leave stop words out of the top words",
        [
            (
                "replace",
                "tally/words.py",
                '''def top(text, n=3):
    """The `n` most common words, most common first; ties in order of first use."""
    return [word for word, _ in count(text).most_common(n)]
''',
                '''STOP_WORDS = frozenset({"a", "an", "and", "the", "of", "to", "in", "is", "it"})


def top(text, n=3, stop=STOP_WORDS):
    """The `n` most common words but `stop`, most common first; ties in order of first use."""
    kept = Counter({word: times for word, times in count(text).items() if word not in stop})
    return [word for word, _ in kept.most_common(n)]
''',
            ),
            ("replace", "tests/test_top.py", 'top("b a b c a b", 2)', 'top("b a b c a b", 2, stop=())'),
            (
                "append",
                "tests/test_top.py",
                '\n\ndef test_stop_words_left_out():\n    assert top("the cat and the hat and the cat", 2) =='
                ' ["cat", "hat"]\n',
            ),
        ],
    ),
    Commit(
        "Add a command line: top words and sentence length",
        [
            (
                "write",
                "tally/__main__.py",
                '''"""python -m tally FILE: a text's statistics."""

import sys

from tally.sentences import average_length
from tally.words import top


def report(text):
    """The lines `python -m tally` prints for `text`."""
    return [
        f"top words: {', '.join(top(text))}",
        f"words per sentence: {average_length(text):.1f}",
    ]


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    with open(argv[0], encoding="utf-8") as source:
        print("\\n".join(report(source.read())))


if __name__ == "__main__":
    main()
''',
            ),
            (
                "write",
                "tests/test_cli.py",
                """from tally.__main__ import main


def test_prints_the_report(tmp_path, capsys):
    text = tmp_path / "text.txt"
    text.write_text("The cat sat. The cat ran away.")
    main([str(text)])
    assert capsys.readouterr().out.splitlines() == [
        "top words: cat, sat, ran",
        "words per sentence: 3.5",
    ]
""",
            ),
        ],
        uses=[5, 6],
    ),
    Commit(
        "Count syllables",
        [
            (
                "write",
                "tally/syllables.py",
                '''"""Syllables of English words, estimated from their vowel groups."""

import re

VOWEL_GROUP = re.compile(r"[aeiouy]+")


def syllables(word):
    """An estimate: vowel groups, less a silent final 'e', at least 1."""
    word = word.lower()
    groups = len(VOWEL_GROUP.findall(word))
    if word.endswith("e") and not word.endswith("le") and groups > 1:
        groups -= 1
    return max(groups, 1)
''',
            ),
            (
                "write",
                "tests/test_syllables.py",
                """import pytest

from tally.syllables import syllables


@pytest.mark.parametrize(
    ("word", "expected"), [("cat", 1), ("table", 2), ("make", 1), ("rhythm", 1), ("banana", 3)]
)
def test_syllables(word, expected):
    assert syllables(word) == expected
""",
            ),
        ],
    ),
    Commit(
        "Flesch reading ease",
        [
            (
                "write",
                "tally/readability.py",
                '''"""Flesch reading ease: higher is easier (90-100 very easy, below 30 hard)."""

from tally.sentences import sentences
from tally.syllables import syllables
from tally.words import words


def reading_ease(text):
    """206.835 - 1.015 * words per sentence - 84.6 * syllables per word; None for no word."""
    found = words(text)
    if not found:
        return None
    per_sentence = len(found) / max(len(sentences(text)), 1)
    per_word = sum(syllables(word) for word in found) / len(found)
    return round(206.835 - 1.015 * per_sentence - 84.6 * per_word, 1)
''',
            ),
            (
                "write",
                "tests/test_readability.py",
                """from tally.readability import reading_ease


def test_short_words_are_easy():
    assert reading_ease("The cat sat.") == 119.2


def test_no_words():
    assert reading_ease("") is None
""",
            ),
        ],
        uses=[2, 8],
    ),
    Commit(
        "Print reading ease on the command line",
        [
            (
                "replace",
                "tally/__main__.py",
                "from tally.sentences import average_length\n",
                "from tally.readability import reading_ease\nfrom tally.sentences import average_length\n",
            ),
            (
                "replace",
                "tally/__main__.py",
                '        f"words per sentence: {average_length(text):.1f}",\n',
                '        f"words per sentence: {average_length(text):.1f}",\n'
                '        f"reading ease: {reading_ease(text)}",\n',
            ),
            (
                "replace",
                "tests/test_cli.py",
                '        "words per sentence: 3.5",\n',
                '        "words per sentence: 3.5",\n        "reading ease: 106.6",\n',
            ),
        ],
        uses=[9],
    ),
    Commit(
        "Keep apostrophes inside words",
        [
            (
                "replace",
                "tally/words.py",
                'WORD = re.compile(r"[A-Za-z]+")',
                'WORD = re.compile(r"[A-Za-z]+(?:\'[A-Za-z]+)*")',
            ),
            (
                "append",
                "tests/test_words.py",
                """

def test_apostrophes_stay_inside_words():
    assert words("Don't stop, it's 'quoted'.") == ["don't", "stop", "it's", "quoted"]
""",
            ),
        ],
    ),
    Commit(
        "Give the package a version",
        [
            ("append", "tally/__init__.py", '\n__version__ = "0.2.0"\n'),
            (
                "write",
                "tests/test_version.py",
                'import tally\n\n\ndef test_version():\n    assert tally.__version__ == "0.2.0"\n',
            ),
        ],
    ),
]


def apply_change(root: Path, change: tuple) -> None:
    kind, path = change[0], root / change[1]
    if kind == "write":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(change[2])
    elif kind == "append":
        path.write_text(path.read_text() + change[2])
    else:
        old, new = change[2], change[3]
        text = path.read_text()
        if text.count(old) != 1:
            raise SystemExit(f"history: {change[1]} holds {old!r} {text.count(old)} times")
        path.write_text(text.replace(old, new))


def tally_history(folder: Path, patches: Path, count: int = len(HISTORY)) -> History:
    """The base (the package's first module and test), then `count` commits of HISTORY."""
    real = new_repo(folder / "real")
    for path, text in BASE.items():
        (real / path).parent.mkdir(parents=True, exist_ok=True)
        (real / path).write_text(text)
    recorder = Recorder(real, patches)
    spec = SPEC.format(name="Replay of tally's history, one task per commit")
    recorder.start(f"{count} commits of tally", "Start tally: split a text into words", spec)
    for commit in HISTORY[:count]:
        for change in commit.changes:
            apply_change(real, change)
        recorder.step(commit.subject, commit.uses)
    return recorder.done()
