"""Validate plan.jsonl records against plan.schema.json without importing pydantic.

plan.schema.json is exported from ralph.models (the definition); the tests keep the two in step
and check that this validator and pydantic agree. Only the schema features that export uses are
supported: type, const, enum, pattern (x-words: its phrase in messages), minLength, minimum/maximum
(exclusive too), items, minItems, anyOf, $ref and required, and (for values inside a record) properties and
additionalProperties.

Hand-written by choice (bench/bench_validator.py, on the realistic plans of `make bench`): per
valid record it took 1.5-1.7 us (0.55-0.8x the stdlib's parse of the line), fastjsonschema's code
generated ahead of time (a module per record type, its fastest arrangement) 1.9-2.1 us (0.8-1.0x)
and msgspec's Structs 10-14 us; its import and first use 13 ms against 18 ms and 55 ms; `query
next` and `task add` at 1,000 tasks measured the same within the noise, or slower with msgspec.
Both generated validators also read JSON Schema's meaning, not pydantic's strict one (1.0 is an
integer; a lone surrogate, an int beyond a float's range and NaN pass), so they would need this
module's special cases anyway, and invalid records its words.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

SCHEMA_PATH = Path(__file__).with_name("plan.schema.json")

# A check returns None when the value is valid, else a short phrase saying what it must be. It takes
# any JSON value: the checks of one sub-schema run in order, its type first, so the later ones
# (len, a regex, a comparison) see only values of the type they expect.
Check = Callable[[Any], "str | None"]
Predicate = Callable[[Any], object]  # truthy when the value is valid
Schema = dict[str, Any]  # a JSON Schema (sub-)schema, as plan.schema.json spells it
TYPE_MISMATCH = "\0type"


def _is_text(v: str) -> bool:
    # A str with a lone surrogate ("\ud800" in JSON) is not Unicode text: pydantic refuses it
    # wherever a string has a constraint (minLength, pattern), and accepts it elsewhere.
    if v.isascii():
        return True
    try:
        v.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _is_number(v: object) -> bool:
    # pydantic refuses an int too large for a float.
    if isinstance(v, float):
        return True
    if not isinstance(v, int) or isinstance(v, bool):
        return False
    try:
        float(v)
    except OverflowError:
        return False
    return True


def _regex(pattern: str) -> re.Pattern[str]:
    # In a JSON Schema (and in pydantic) a final $ is the end of the string; in Python's re it also
    # matches before a final newline, which would let "t-abc\n" pass as an id.
    if pattern.endswith("$") and not pattern.endswith("\\$"):
        pattern = pattern[:-1] + r"\Z"
    return re.compile(pattern)


_TYPES: dict[str, Callable[[object], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": _is_number,
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "null": lambda v: v is None,
}
_TYPE_WORDS = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "array": "a list",
    "object": "an object",
    "null": "null",
}


def _compile(schema: Schema, defs: dict[str, Schema]) -> tuple[Check, str]:
    """Compile one sub-schema into (check, description of what it accepts)."""
    if "$ref" in schema:
        return _compile(defs[schema["$ref"].rsplit("/", 1)[1]], defs)
    if "anyOf" in schema:
        return _compile_any_of(schema["anyOf"], defs)
    checks: list[Check] = []
    words = _TYPE_WORDS.get(schema.get("type", ""), "a value")
    if "type" in schema:
        is_type = _TYPES[schema["type"]]
        # A wrong type is reported with everything the field accepts (filled in below).
        checks.append(lambda v: None if is_type(v) else TYPE_MISMATCH)
    if "const" in schema:
        const = schema["const"]
        words = json.dumps(const)
        checks.append(lambda v: None if v == const else json.dumps(const))
    if "enum" in schema:
        options = schema["enum"]
        words = "one of " + ", ".join(json.dumps(o) for o in options)
        checks.append(lambda v: None if v in options else "one of " + ", ".join(map(json.dumps, options)))
    if "minLength" in schema:
        n = schema["minLength"]
        words = "a non-empty string" if n == 1 else f"a string of at least {n} characters"
        checks.append(lambda v: None if len(v) >= n and _is_text(v) else words)
    if "pattern" in schema:
        regex, pattern = _regex(schema["pattern"]), schema["pattern"]
        # x-words: how the format says what the pattern means (a duration), where it has a name
        said = schema.get("x-words") or f"a string matching {pattern}"
        words = said
        checks.append(lambda v: None if regex.search(v) else said)
    checks.extend(_bounds(schema))
    if "items" in schema:
        item_check, item_words = _compile(schema["items"], defs)
        words = f"a list, each item {item_words}"
        checks.append(lambda v: _first_item_problem(v, item_check, item_words))
    if "minItems" in schema:
        least = schema["minItems"]
        words = ("a non-empty list" if least == 1 else f"a list of at least {least} items") + words[6:]
        checks.append(lambda v: None if len(v) >= least else words)
    if "properties" in schema or isinstance(schema.get("additionalProperties"), dict):
        checks.append(_object_check(schema, defs))
    check = _all_of(checks)
    return (lambda v: words if (problem := check(v)) is TYPE_MISMATCH else problem), words


def _bounds(schema: Schema) -> list[Check]:
    return [_bound_check(op, schema[key], word) for key, op, word in _BOUNDS if key in schema]


_BOUNDS: tuple[tuple[str, Callable[[Any, Any], bool], str], ...] = (
    ("minimum", lambda v, b: v >= b, ">="),
    ("maximum", lambda v, b: v <= b, "<="),
    ("exclusiveMinimum", lambda v, b: v > b, ">"),
    ("exclusiveMaximum", lambda v, b: v < b, "<"),
)


def _bound_check(op: Callable[[Any, Any], bool], bound: Any, word: str) -> Check:
    return lambda v: None if op(v, bound) else f"a number {word} {bound}"


def _all_of(checks: list[Check]) -> Check:
    def check(value: object) -> str | None:
        for one in checks:
            problem = one(value)
            if problem:
                return problem
        return None

    return check


def _compile_any_of(options: list[Schema], defs: dict[str, Schema]) -> tuple[Check, str]:
    compiled = [_compile(option, defs) for option in options]
    words = " or ".join(w for _, w in compiled)

    def check(value: object) -> str | None:
        problems = [(c(value), w) for c, w in compiled]
        if any(problem is None for problem, _ in problems):
            return None
        # Prefer the option whose type matched but whose constraint failed: it says more.
        specific = [problem for problem, w in problems if problem != w]
        return specific[0] if specific else words

    return check, words


def _object_check(schema: Schema, defs: dict[str, Schema]) -> Check:
    """An object's keys: the required ones present, each known one valid, the others valid by
    additionalProperties (or refused, when it is false)."""
    known = {key: _compile(sub, defs)[0] for key, sub in schema.get("properties", {}).items()}
    extra = schema.get("additionalProperties", True)
    extra_check = _compile(extra, defs)[0] if isinstance(extra, dict) else None
    required = schema.get("required", [])

    def check(value: dict[str, Any]) -> str | None:
        for key in required:
            if key not in value:
                return f"an object with {json.dumps(key)}"
        for key, item in value.items():
            if key in known:
                problem = known[key](item)
            elif extra is False:
                return f"an object without {json.dumps(key)}"
            else:
                problem = extra_check(item) if extra_check else None
            if problem:
                return f"an object whose {json.dumps(key)} is {problem}"
        return None

    return check


def _first_item_problem(value: list[Any], item_check: Check, item_words: str) -> str | None:
    for index, item in enumerate(value):
        if item_check(item):
            return f"a list, each item {item_words} (item {index + 1} is {json.dumps(item)})"
    return None


def _predicate(schema: Schema, defs: dict[str, Schema]) -> Predicate:
    """Whether a value is valid (truthy) or not: _compile's check without its words, so that a
    valid value, which is nearly every value of every line, costs a call or two. The two must
    accept exactly the same values."""
    if "$ref" in schema:
        return _predicate(defs[schema["$ref"].rsplit("/", 1)[1]], defs)
    if "anyOf" in schema:
        return _either([_predicate(option, defs) for option in schema["anyOf"]])
    tests: list[Predicate] = []
    if "type" in schema:
        tests.append(_TYPES[schema["type"]])
    if "const" in schema:
        const = schema["const"]
        tests.append(lambda v: v == const)
    if "enum" in schema:
        options = schema["enum"]
        tests.append(lambda v: v in options)
    if "minLength" in schema:
        n = schema["minLength"]
        tests.append(lambda v: len(v) >= n and _is_text(v))
    if "pattern" in schema:
        tests.append(_regex(schema["pattern"]).search)
    tests.extend(map(_passes, _bounds(schema)))
    if "items" in schema:
        item_valid = _predicate(schema["items"], defs)
        tests.append(lambda v: all(map(item_valid, v)))
    if "minItems" in schema:
        least = schema["minItems"]
        tests.append(lambda v: len(v) >= least)
    if "properties" in schema or isinstance(schema.get("additionalProperties"), dict):
        object_check = _object_check(schema, defs)
        tests.append(lambda v: object_check(v) is None)
    return _every(tests)


def _passes(check: Check) -> Predicate:
    return lambda v: check(v) is None


def _every(tests: list[Predicate]) -> Predicate:
    if not tests:
        return lambda v: True
    first, rest = tests[0], _every(tests[1:]) if len(tests) > 1 else None
    return first if rest is None else lambda v: first(v) and rest(v)


def _either(options: list[Predicate]) -> Predicate:
    first, rest = options[0], _either(options[1:]) if len(options) > 1 else None
    return first if rest is None else lambda v: first(v) or rest(v)


OWN_FIELD_PREFIX = "x-"  # a field of the user's own on a known record: kept, never refused
FIELDS_LISTED = 12  # more allowed fields than this are named by the page that lists them


def unknown_fields(label: str, unknown: list[str], allowed: list[str], own: bool = False) -> str:
    """The one line `task add` and the plan's checks both give for fields a record does not take:
    the closest allowed name of each typo, then the allowed ones (the page that lists them, where
    they are many), and with `own` how to name a field of one's own."""
    import difflib

    guesses = [g for name in unknown for g in difflib.get_close_matches(name, allowed, n=1, cutoff=0.75)]
    meant = f"did you mean {', '.join(dict.fromkeys(guesses))}?; " if guesses else ""
    listed = ", ".join(allowed) if len(allowed) <= FIELDS_LISTED else "see docs/plan-format.md"
    mine = f"; a field of your own starts with {OWN_FIELD_PREFIX}" if own else ""
    fields = "field" if len(unknown) == 1 else "fields"
    return f"{label}: unknown {fields} {', '.join(unknown)} ({meant}allowed: {listed}{mine})"


class RecordValidator:
    """Checks one record type: required fields present, each known field valid, no field it does
    not know but a user's own (`x-...`): a hand-typed typo is refused as `task add` refuses it."""

    def __init__(self, record_type: str, schema: Schema, defs: dict[str, Schema]):
        self.record_type = record_type
        self.required = schema.get("required", [])
        self.fields = {name: _compile(sub, defs)[0] for name, sub in schema["properties"].items()}
        self._required = frozenset(self.required)
        self._known = frozenset(self.fields)
        self._valid_fields = {name: _predicate(sub, defs) for name, sub in schema["properties"].items()}

    def unknown(self, record: dict[str, Any]) -> list[str]:
        """The record's fields this type does not take, but the user's own."""
        return sorted(name for name in record.keys() - self._known if not name.startswith(OWN_FIELD_PREFIX))

    def problems(self, record: dict[str, Any]) -> list[str]:
        if self._valid(record):
            return []  # nearly every record: no need to say what is wrong with each field
        found = [
            f"{self.record_type} is missing field '{name}'" for name in self.required if name not in record
        ]
        unknown = self.unknown(record)
        if unknown:
            found.append(unknown_fields(self.record_type, unknown, list(self.fields), own=True))
        for name, value in record.items():
            check = self.fields.get(name)
            problem = check(value) if check else None
            if problem:
                found.append(f"{self.record_type} field '{name}' must be {problem}, not {json.dumps(value)}")
        return found

    def _valid(self, record: dict[str, Any]) -> bool:
        if not record.keys() >= self._required:
            return False
        if not record.keys() <= self._known and self.unknown(record):
            return False
        valid_fields = self._valid_fields
        for name, value in record.items():
            is_valid = valid_fields.get(name)
            if is_valid is not None and not is_valid(value):
                return False
        return True


_schema: Schema | None = None
_validators: dict[str, RecordValidator] = {}


def validator_of(record_type: str) -> RecordValidator | None:
    """The validator of one record type, compiled on first use (a command that changes one task
    compiles only the task's: all of them take some 3 ms); None for a type the schema lacks."""
    global _schema
    if record_type not in _validators:
        if _schema is None:
            _schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
        ref = _schema["x-records"].get(record_type)
        if ref is None:
            return None
        defs = _schema["$defs"]
        _validators[record_type] = RecordValidator(record_type, defs[ref.rsplit("/", 1)[1]], defs)
    return _validators[record_type]


def record_problems(record: object) -> list[str]:
    """What is wrong with one parsed line; [] when it is a valid record (or of an unknown type)."""
    if not isinstance(record, dict):
        return [f"each line must be a JSON object, not {type(record).__name__}"]
    kind = record.get("t")
    if not isinstance(kind, str) or not kind:
        return ['record has no type: every line needs a "t" key naming its record type']
    validator = validator_of(kind)
    return validator.problems(record) if validator else []
