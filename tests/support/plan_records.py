"""Hypothesis strategies for plan.jsonl records, built from plan.schema.json's definitions: every
field of every record type is generated, valid and broken, so a field added to the models is
covered without editing a test.

`portable`: only values JSON Schema and pydantic's strict types mean alike, for comparing ralph with
a standard validator. Left out then: an integral float where an integer is wanted (1.0 is an
integer to JSON Schema), a lone surrogate, an int beyond a float's range, NaN and infinities (not
JSON), and a string with a newline after a pattern's `$` (Python's re, which jsonschema uses, lets
`$` match before a final newline; ECMA 262 regular expressions, JSON Schema's, do not).
"""

from __future__ import annotations

import json
import math
from functools import cache

from hypothesis import strategies as st

from ralph.plan.validate import SCHEMA_PATH

SCHEMA = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
DEFS = SCHEMA["$defs"]
KINDS = sorted(SCHEMA["x-records"])

SURROGATES = st.sampled_from(["\ud800", "ok\udfff", "\udc80x"])
HUGE_INTS = st.sampled_from([2**1024, -(2**1024), 10**400])
JSON_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=6),
)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)


def definition(kind: str) -> dict:
    return DEFS[SCHEMA["x-records"][kind].rsplit("/", 1)[1]]


def _resolve(schema: dict) -> dict:
    while "$ref" in schema:
        schema = DEFS[schema["$ref"].rsplit("/", 1)[1]]
    return schema


def _full_match(pattern: str) -> str:
    # The schema's ^...$ as pydantic and ECMA 262 read it: the whole string, no final newline.
    return r"\A(?:" + pattern.removeprefix("^").removesuffix("$") + r")\Z"


class Values:
    """Valid and broken values of a sub-schema. Broken ones are near misses (bounds, a wrong
    character, one bad item) and junk; some of them happen to be valid, which is fine: the property
    tests compare validators, they do not assume an answer."""

    def __init__(self, portable: bool):
        self.portable = portable

    @cache  # noqa: B019 (two instances, alive as long as the test session)
    def valid(self, key: str) -> st.SearchStrategy:
        schema = _resolve(json.loads(key))
        if "anyOf" in schema:
            return st.one_of([self.valid(_key(option)) for option in schema["anyOf"]])
        if "const" in schema:
            return st.just(schema["const"])
        if "enum" in schema:
            return st.sampled_from(schema["enum"])
        kind = schema.get("type")
        if kind == "string":
            if "pattern" in schema:
                return st.from_regex(_full_match(schema["pattern"]), fullmatch=True)
            return st.text(min_size=schema.get("minLength", 0), max_size=8)
        if kind == "integer":
            low, high = _integer_bounds(schema)
            return st.integers(min_value=low, max_value=high)
        if kind == "number":
            return self._numbers(schema)
        if kind == "boolean":
            return st.booleans()
        if kind == "null":
            return st.none()
        if kind == "array":
            least = schema.get("minItems", 0)
            return st.lists(self.valid(_key(schema["items"])), min_size=least, max_size=max(3, least))
        if kind == "object":
            return self._objects(schema, valid=True)
        return JSON_VALUES

    @cache  # noqa: B019
    def broken(self, key: str) -> st.SearchStrategy:
        schema = _resolve(json.loads(key))
        near = self._near_misses(schema)
        return st.one_of(near, self.junk()) if near is not None else self.junk()

    def junk(self) -> st.SearchStrategy:
        """Values wrong almost everywhere, or that only a strict validator refuses."""
        scalars = JSON_SCALARS
        near = [0, -1, 0.5, 1.5, 2, "1", "p", "HIGH", "true", [], {}, [""]]
        if self.portable:  # floats, but no integral one (an integer to JSON Schema), at any depth
            floats = st.floats(allow_nan=False, allow_infinity=False).filter(lambda f: not f.is_integer())
            scalars = st.one_of(
                st.none(), st.booleans(), st.integers(-(2**70), 2**70), floats, st.text(max_size=6)
            )
        else:
            near += [0.0, -0.0, 1.0]
        options = [
            scalars,
            st.just(""),
            st.lists(scalars, max_size=3),
            st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
            st.sampled_from(near),
        ]
        if not self.portable:
            options += [SURROGATES, HUGE_INTS, st.floats(allow_nan=True, allow_infinity=True)]
        return st.one_of(options)

    def _near_misses(self, schema: dict) -> st.SearchStrategy | None:
        if "anyOf" in schema:
            return st.one_of([self.broken(_key(o)) for o in schema["anyOf"] if o.get("type") != "null"])
        if "const" in schema or "enum" in schema:
            options = schema.get("enum", [schema.get("const")])
            return st.sampled_from(options).map(lambda v: v.upper() + " " if isinstance(v, str) else [v])
        kind = schema.get("type")
        if kind == "string":
            return self._near_strings(schema)
        if kind in ("integer", "number"):
            return self._near_numbers(schema, kind)
        if kind == "boolean":
            return st.sampled_from([0, 1, "true", "false"])
        if kind == "array":
            item = _key(schema["items"])
            one_bad = st.tuples(st.lists(self.valid(item), max_size=2), self.broken(item)).map(
                lambda parts: parts[0] + [parts[1]]
            )
            near = [one_bad, self.valid(item)]  # a single item where a list is wanted
            if schema.get("minItems"):
                near.append(st.just([]))
            return st.one_of(near)
        if kind == "object":
            return self._objects(schema, valid=False)
        return None

    def _near_strings(self, schema: dict) -> st.SearchStrategy:
        good = self.valid(_key(schema))
        mutations = [str.upper, lambda s: " " + s, lambda s: s[1:], lambda s: s + "-" * 41]
        # One character put in anywhere: outside an id's alphabet, a line break, a non-ASCII letter.
        inserted = st.tuples(
            good, st.sampled_from(["/", "A", "\r", "\u00e9", " ", "_", "\n"]), st.integers(0, 50)
        )
        near = [
            st.tuples(good, st.sampled_from(mutations)).map(lambda pair: pair[1](pair[0])),
            inserted.map(lambda parts: _insert(*parts)).filter(
                lambda s: not (self.portable and s.endswith("\n"))
            ),
            st.just(""),
        ]
        if not self.portable:
            near += [SURROGATES, good.map(lambda s: s + "\n"), good.map(lambda s: s + "\udfff")]
        return st.one_of(near)

    def _near_numbers(self, schema: dict, kind: str) -> st.SearchStrategy:
        bounds = [
            schema[k] for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum") if k in schema
        ]
        near: list = [True, False, "1"]
        for bound in bounds:
            near += [bound, bound - 1, bound + 1, bound + 0.5, bound - 0.5]
            if kind == "number":
                near += [math.nextafter(bound, -math.inf), math.nextafter(bound, math.inf)]
        if not self.portable:
            near += [float(b) for b in bounds] + [2.0, float("nan"), float("inf"), float("-inf"), 2**1024]
        near = [v for v in near if self.portable is False or not _integral_float_for_integer(v, kind)]
        return st.sampled_from(near)

    def _numbers(self, schema: dict) -> st.SearchStrategy:
        low = schema.get("minimum", schema.get("exclusiveMinimum"))
        high = schema.get("maximum", schema.get("exclusiveMaximum"))
        floats = st.floats(
            min_value=low,
            max_value=high,
            exclude_min="exclusiveMinimum" in schema,
            exclude_max="exclusiveMaximum" in schema,
            allow_nan=False,
            allow_infinity=not self.portable and high is None,
        )
        low_int, high_int = _integer_bounds(schema)
        ints = st.integers(min_value=low_int, max_value=high_int if high_int is not None else 10**300)
        return st.one_of(floats, ints)

    def _objects(self, schema: dict, valid: bool) -> st.SearchStrategy:
        properties = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        if not properties:
            values = self.valid(_key(extra)) if isinstance(extra, dict) else JSON_VALUES
            good = st.dictionaries(st.text(max_size=6), values, max_size=2)
            if valid or not isinstance(extra, dict):
                return good
            bad = st.dictionaries(st.text(max_size=6), self.broken(_key(extra)), min_size=1, max_size=2)
            return st.one_of(bad, st.lists(values, max_size=1))
        return fields(self, properties, schema.get("required", []), extra, valid_only=valid)


def _insert(text: str, char: str, at: int) -> str:
    at = min(at, len(text))
    return text[:at] + char + text[at:]


def _key(schema: object) -> str:
    return json.dumps(schema, sort_keys=True)


def _integral_float_for_integer(value: object, kind: str) -> bool:
    return kind == "integer" and isinstance(value, float) and value.is_integer()


def _integer_bounds(schema: dict) -> tuple[int | None, int | None]:
    low = high = None
    if "minimum" in schema:
        low = math.ceil(schema["minimum"])
    if "exclusiveMinimum" in schema:
        low = math.floor(schema["exclusiveMinimum"]) + 1
    if "maximum" in schema:
        high = math.floor(schema["maximum"])
    if "exclusiveMaximum" in schema:
        high = math.ceil(schema["exclusiveMaximum"]) - 1
    return low, high


@st.composite
def fields(
    draw: st.DrawFn, values: Values, properties: dict, required: list, extra: object, valid_only: bool
) -> dict:
    """An object of these properties: required ones mostly present, optional ones often left out,
    each valid or (unless valid_only) broken; and unknown keys where they are allowed."""
    found = {}
    # How often a field is broken, per object: a record with many fields is still valid often enough.
    broken_percent = 0 if valid_only else draw(st.sampled_from([0, 5, 25]))
    for name, sub in properties.items():
        needed = name in required
        if valid_only:
            present = needed or draw(st.booleans())
        else:
            present = draw(st.integers(0, 99)) < (95 if needed else 50)
        if not present:
            continue
        good = broken_percent == 0 or draw(st.integers(0, 99)) >= broken_percent
        found[name] = draw(values.valid(_key(sub)) if good else values.broken(_key(sub)))
    if extra is not False:
        unknown = st.text(min_size=1, max_size=6).filter(lambda key: key not in properties)
        found.update(draw(st.dictionaries(unknown, JSON_VALUES, max_size=2)))
    elif not valid_only and draw(st.integers(0, 9)) == 0:
        found["x-unknown"] = 1  # refused where additionalProperties is false
    return found


VALUES = {portable: Values(portable) for portable in (False, True)}


def records(kind: str, valid_only: bool = False, portable: bool = False) -> st.SearchStrategy[dict]:
    """Records of one type, from its definition in plan.schema.json."""
    schema = definition(kind)
    body = {name: sub for name, sub in schema["properties"].items() if name != "t"}
    required = [name for name in schema.get("required", []) if name != "t"]
    strategy = fields(VALUES[portable], body, required, schema.get("additionalProperties", True), valid_only)
    return strategy.map(lambda found: {**found, "t": kind})  # an unknown key drawn as "t" gives way


def any_record(valid_only: bool = False, portable: bool = False) -> st.SearchStrategy[dict]:
    return st.sampled_from(KINDS).flatmap(lambda kind: records(kind, valid_only, portable))
