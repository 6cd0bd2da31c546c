"""What is derived from the record declarations (ralph/plan/models.py) at build time: the JSON
Schema ralph/plan/plan.schema.json, the field tables of docs/plan-format.md (one per record
type, between marker comments; the prose around them is written by hand), and the Python the state
commands read, ralph/plan/declared.py (ralph/plan/derive.py); and from the stage declarations
(ralph/plan/stage_declarations.py), docs/agent-contract.md's stage tables. `make schema` runs it;
the tests fail when any of them is stale.

    python -m ralph.plan.generate          # rewrite them all
    python -m ralph.plan.generate --check  # exit 1 naming each stale file, writing nothing

The tables' type words come from the schema (so they say what the validator checks) and the
meanings from each field's description.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

from ralph.plan import derive, stage_declarations
from ralph.plan.models import IssueId, TaskId, json_schema

SCHEMA_FILE = Path(__file__).with_name("plan.schema.json")
DOCS_FILE = Path(__file__).parents[2] / "docs" / "plan-format.md"
DECLARED_FILE = Path(__file__).with_name("declared.py")  # what the state commands read (derive.py)
CONTRACT_FILE = Path(__file__).parents[2] / "docs" / "agent-contract.md"
# A table's place in the docs: <!-- fields of task: generated ... --> up to <!-- end of fields -->.
_TABLE = re.compile(
    r"(<!-- fields of (?P<kind>[\w-]+): [^\n]*-->\n)(?P<table>.*?)(<!-- end of fields -->)", re.S
)
GREATER_OR_EQUAL, LESS_OR_EQUAL = "\u2265", "\u2264"
BEGIN_NOTE = "generated from ralph/plan/models.py by make schema; edit the descriptions there"
# A stage table's place: <!-- stage table: overview, generated ... --> up to <!-- end of stage table -->.
_STAGE_TABLE = re.compile(
    r"(<!-- stage table: (?P<kind>overview|may), [^\n]*-->\n)(?P<table>.*?)(<!-- end of stage table -->)",
    re.S,
)
STAGE_NOTE = "generated from ralph/plan/stage_declarations.py by make schema; edit the declarations there"


def _pattern(annotated: Any) -> str:  # a type form: TaskId, IssueId
    from pydantic import TypeAdapter

    pattern: str = TypeAdapter(annotated).json_schema()["pattern"]
    return pattern


def _id_words() -> dict[str, tuple[str, str]]:
    return {_pattern(TaskId): ("task id", "task ids"), _pattern(IssueId): ("issue id", "issue ids")}


class Words:
    """A sub-schema in the docs' words: what values it accepts, singular and plural."""

    def __init__(self, defs: dict[str, Any]):
        self.defs = defs
        self.ids = _id_words()

    def of(self, schema: dict[str, Any]) -> tuple[str, str]:
        if "$ref" in schema:
            return self.of(self.defs[schema["$ref"].rsplit("/", 1)[1]])
        if "anyOf" in schema:
            return self._any_of([option for option in schema["anyOf"] if option.get("type") != "null"])
        if "const" in schema:
            return (f"`{json.dumps(schema['const'])}`",) * 2
        if "enum" in schema:
            return (_either([f"`{json.dumps(option)}`" for option in schema["enum"]]),) * 2
        kind = schema.get("type")
        if kind == "string":
            return self._string(schema)
        if kind in ("integer", "number"):
            bounds = _bounds(schema)
            return f"{kind}{bounds}", f"{kind}s{bounds}"
        if kind == "boolean":
            return "boolean", "booleans"
        if kind == "array":
            items = self.of(schema["items"])[1]
            some = "non-empty " if schema.get("minItems") == 1 else ""
            return f"{some}list of {items}", f"{some}lists of {items}"
        if kind == "object":
            return self._object(schema)
        return "any value", "any values"

    def _any_of(self, options: list[dict[str, Any]]) -> tuple[str, str]:
        found = [self.of(option) for option in options]
        # An integer where a number with the same bounds is accepted says nothing more.
        numbers = {singular for singular, _ in found if singular.startswith("number")}
        found = [w for w in found if not (w[0].startswith("integer") and "number" + w[0][7:] in numbers)]
        return _either([s for s, _ in found]), _either([p for _, p in found])

    def _string(self, schema: dict[str, Any]) -> tuple[str, str]:
        if schema.get("pattern") in self.ids:
            return self.ids[schema["pattern"]]
        if "x-words" in schema:  # a pattern with a name: 'a duration ("90s", ...)'
            said = schema["x-words"].removeprefix("a ").removeprefix("an ")
            return said, said
        if "pattern" in schema:
            return f"string matching `{schema['pattern']}`", f"strings matching `{schema['pattern']}`"
        if schema.get("minLength") == 1:
            return "non-empty string", "non-empty strings"
        return "string", "strings"

    def _object(self, schema: dict[str, Any]) -> tuple[str, str]:
        properties = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        if properties:
            shown = [(f"`{key}`", self.of_field(key, sub, {})) for key, sub in properties.items()]
            if len({words for _, words in shown}) == 1:
                said = f"object with keys {', '.join(k for k, _ in shown)} (each {_article(shown[0][1])})"
            else:
                said = "object with keys " + ", ".join(f"{key} ({words})" for key, words in shown)
            if schema.get("required"):
                said += "; " + _either([f"`{key}`" for key in schema["required"]]).replace(" or ", " and ")
                said += " required"
            return said, "objects" + said.removeprefix("object")
        if isinstance(extra, dict):
            return f"object: name -> {self.of(extra)[0]}", f"objects: name -> {self.of(extra)[0]}"
        return "object", "objects"

    def of_field(self, name: str, schema: dict[str, Any], parent: dict[str, Any]) -> str:
        """A field's words in the table: its values, whether it is required, its default."""
        words = self.of(schema)[0]
        if name in parent.get("required", []):
            words += ", required"
        # x-default: a config key's default, which the record leaves out (the loop applies it)
        default = schema["default"] if schema.get("default") is not None else schema.get("x-default")
        if default is not None:
            words += f", default `{json.dumps(default)}`"
        return words


def _bounds(schema: dict[str, Any]) -> str:
    low = ("minimum", GREATER_OR_EQUAL) if "minimum" in schema else ("exclusiveMinimum", ">")
    high = ("maximum", "]") if "maximum" in schema else ("exclusiveMaximum", ")")
    if low[0] in schema and high[0] in schema:
        opening = "[" if low[0] == "minimum" else "("
        return f" in {opening}{schema[low[0]]}, {schema[high[0]]}{high[1]}"
    if low[0] in schema:
        return f" {low[1]} {schema[low[0]]}"
    if high[0] in schema:
        return f" {LESS_OR_EQUAL if high[0] == 'maximum' else '<'} {schema[high[0]]}"
    return ""


def _either(options: list[str]) -> str:
    return options[0] if len(options) == 1 else ", ".join(options[:-1]) + " or " + options[-1]


def _article(words: str) -> str:
    return ("an " if words[0] in "aeiou" else "a ") + words


def field_table(schema: dict[str, Any], kind: str) -> str:
    """The markdown table of one record type's fields, in the order the model declares them."""
    defs = schema["$defs"]
    record = defs[schema["x-records"][kind].rsplit("/", 1)[1]]
    words = Words(defs)
    rows = ["| field | type | meaning |", "|---|---|---|"]
    for name, sub in record["properties"].items():
        meaning = sub.get("description", "").replace("|", "\\|")
        rows.append(f"| `{name}` | {words.of_field(name, sub, record)} | {meaning} |".replace("|  |", "| |"))
    return "\n".join(rows) + "\n"


def docs_text(current: str, schema: dict[str, Any]) -> str:
    """The docs with each record type's table generated again; every record type needs its place."""
    kinds = set(schema["x-records"])
    placed = {match["kind"] for match in _TABLE.finditer(current)}
    if kinds - placed or placed - kinds:
        missing = ", ".join(sorted(kinds - placed)) or "none"
        unknown = ", ".join(sorted(placed - kinds)) or "none"
        raise ValueError(
            f"{DOCS_FILE.name}: record types without a table: {missing}; tables of unknown types: {unknown}"
            f" (each table sits between '<!-- fields of KIND: {BEGIN_NOTE} -->' and '<!-- end of fields -->')"
        )
    # Blank lines around the table: some renderers run a table on into a comment right below it.
    return _TABLE.sub(lambda m: m[1] + "\n" + field_table(schema, m["kind"]) + "\n" + m[4], current)


def stage_table(kind: str) -> str:
    """The markdown table of the declared stages: `overview` (what each does, when, how runners
    share it) or `may` (what its agent may change)."""
    if kind == "may":
        rows = ["| stage | may |", "| --- | --- |"]
        for declared in stage_declarations.STAGES:
            changes = ", ".join(
                change.value for change in stage_declarations.Change if change in declared.may
            )
            rows.append(f"| {declared.name} | {'only the plan: ' if declared.plan_only else ''}{changes} |")
        return "\n".join(rows) + "\n"
    rows = [
        "| stage | what it does | when | own model | runners sharing a remote claim | in `--dry-run`"
        " | template |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for declared in stage_declarations.STAGES:
        when = declared.place.value
        if declared.positions:
            steps = " and ".join(str(position + 1) for position in declared.positions)
            word = "steps" if len(declared.positions) > 1 else "step"
            when += f" ({word} {steps} of {len(stage_declarations.iteration())})"
        rows.append(
            f"| {declared.name} | {declared.does} | {when} | {'yes' if declared.model else 'no'}"
            f" | {declared.claims.value} | {'yes' if declared.dry_run else 'no'} | `{declared.template}` |"
        )
    return "\n".join(rows) + "\n"


_STAGE_ROW = re.compile(r"^\| `RALPH_STAGE` \|.*$", re.M)


def stage_row() -> str:
    """The environment table's RALPH_STAGE row: every declared stage's name."""
    place = stage_declarations.Place.APART
    loop = [f"`{d.name}`" for d in stage_declarations.STAGES if d.place is not place]
    names = ", ".join(loop[:-1]) + " or " + loop[-1]
    apart = [f"`{d.name}` ({d.place})" for d in stage_declarations.STAGES if d.place is place]
    return f"| `RALPH_STAGE` | {'; '.join([names, *apart])} (the stage table below says what each does) |"


def contract_text(current: str) -> str:
    """docs/agent-contract.md with its stage tables and RALPH_STAGE's row generated again; each
    needs its place."""
    placed = sorted(match["kind"] for match in _STAGE_TABLE.finditer(current))
    if placed != ["may", "overview"]:
        raise ValueError(
            f"{CONTRACT_FILE.name}: wants one stage table of each kind (may, overview), has"
            f" {placed or 'none'} (each sits between '<!-- stage table: KIND, {STAGE_NOTE} -->' and"
            " '<!-- end of stage table -->')"
        )
    if len(_STAGE_ROW.findall(current)) != 1:
        raise ValueError(
            f"{CONTRACT_FILE.name}: wants one row '| `RALPH_STAGE` | ...' in its environment table"
        )
    current = _STAGE_ROW.sub(lambda _: stage_row(), current)
    return _STAGE_TABLE.sub(lambda m: m[1] + "\n" + stage_table(m["kind"]) + "\n" + m[4], current)


def outputs() -> dict[Path, str]:
    """Each generated file and what it must hold."""
    schema = json_schema()
    return {
        SCHEMA_FILE: json.dumps(schema, indent=2) + "\n",
        DOCS_FILE: docs_text(DOCS_FILE.read_text(encoding="utf-8"), schema),
        DECLARED_FILE: derive.module_text(schema),
        CONTRACT_FILE: contract_text(CONTRACT_FILE.read_text(encoding="utf-8")),
    }


def main(argv: list[str] | None = None) -> int:
    from ralph.generated import write_or_check

    def stale_line(path: Path) -> str:
        source = "stage_declarations.py" if path == CONTRACT_FILE else "models.py"
        return f"{path} is out of date with ralph/plan/{source}: run make schema"

    return write_or_check(argv, "python -m ralph.plan.generate", __doc__.splitlines()[0], outputs, stale_line)


if __name__ == "__main__":
    sys.exit(main())
