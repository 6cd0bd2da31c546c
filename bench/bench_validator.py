"""Which validator should the state commands use for plan.jsonl's records? Measured, not guessed.

Candidates, each checking the same plan.schema.json:
- hand: ralph/plan/validate.py, which interprets the schema at run time (today's);
- fastjsonschema: its code generated once (at build time) into modules, one per record type, so
  nothing is compiled when a command runs;
- msgspec: Structs built from the schema's definitions (tagged by `t`), validating the decoded
  dicts (msgspec.convert) or the line's bytes directly (msgspec.json.decode; it would still need
  the stdlib parse too, for the unknown keys a Struct drops).

Printed: per-record validation time on the realistic plans of bench_state.py (1,000 and 10,000
tasks), as a ratio to the stdlib's json parse of the same lines; the import and first-use cost of
each, as a ratio to `python -c pass`; and the whole-command time of `ralph query next` and `ralph
task add` at 1,000 tasks with each candidate switched in for the valid-record path, both with the
valid-plan cache (what `make bench` measures) and without it (the first read after an edit).
Figures, not pass/fail. Needs the candidates: `pip install -e '.[bench]'` (not in `make bench`).

    python bench/bench_validator.py
"""

from __future__ import annotations

import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Annotated, Any, Literal, Union

from bench_state import GIT_ENV, make_plan, make_repo

import ralph.plan.validate as hand

SCHEMA = json.loads(hand.SCHEMA_PATH.read_text(encoding="utf-8"))
SIZES = {1000: 9, 10000: 5}  # tasks -> repetitions of the in-process timing
COMMAND_REPS = 21
CANDIDATES = ("hand", "fastjsonschema", "msgspec")


# --- fastjsonschema: generated code -----------------------------------------------------------


def write_fastjsonschema_modules(folder: Path) -> None:
    """Generated code: a module per record type (the fastest arrangement measured: one module for
    the whole schema tries each record against every type's `if`, about 3x slower), and plan_fjs,
    which picks the module by `t`."""
    import fastjsonschema

    dispatch = ["import importlib", "from fastjsonschema import JsonSchemaValueException", "VALIDATE = {"]
    for tag, ref in SCHEMA["x-records"].items():
        definition = {
            **SCHEMA["$defs"][ref.rsplit("/", 1)[1]],
            "$defs": SCHEMA["$defs"],
            # Draft 7 reads this schema's keywords alike ($defs is reached by its JSON pointer).
            "$schema": "http://json-schema.org/draft-07/schema#",
        }
        # Defaults are not filled in: a record must stay as it was read.
        (folder / f"plan_fjs_{tag}.py").write_text(
            fastjsonschema.compile_to_code(definition, use_default=False)
        )
        dispatch.append(f"    {tag!r}: importlib.import_module('plan_fjs_{tag}').validate,")
    dispatch += [
        "}",
        "def validate(record):",
        "    check = VALIDATE.get(record.get('t')) if isinstance(record, dict) else None",
        "    if check is None:",
        "        raise JsonSchemaValueException('not a known record')",
        "    check(record)",
    ]
    (folder / "plan_fjs.py").write_text("\n".join(dispatch) + "\n")


# --- msgspec: Structs from the schema's definitions -----------------------------------------


def msgspec_types() -> Any:
    """A union of one Struct per record type, tagged by `t`, built from plan.schema.json."""
    import msgspec

    defs = SCHEMA["$defs"]
    structs: dict[str, Any] = {}

    def typ(schema: dict) -> Any:
        if "$ref" in schema:
            return struct(schema["$ref"].rsplit("/", 1)[1])
        if "anyOf" in schema:
            options = [typ(option) for option in schema["anyOf"]]
            # msgspec's float takes ints too, and a union may not hold both
            if float in [_base(o) for o in options]:
                options = [o for o in options if _base(o) is not int]
            return Union[tuple(options)]  # noqa: UP007
        if "const" in schema:
            return Literal[schema["const"]]
        if "enum" in schema:
            return Literal[tuple(schema["enum"])]
        kind = schema.get("type")
        meta = {
            key: schema[word]
            for word, key in (
                ("pattern", "pattern"),
                ("minLength", "min_length"),
                ("minimum", "ge"),
                ("maximum", "le"),
                ("exclusiveMinimum", "gt"),
                ("exclusiveMaximum", "lt"),
            )
            if word in schema
        }
        base: Any = {"string": str, "integer": int, "number": float, "boolean": bool, "null": None}.get(kind)
        if kind == "array":
            base = list[typ(schema["items"])]
        elif kind == "object":
            extra = schema.get("additionalProperties", True)
            base = dict[str, typ(extra) if isinstance(extra, dict) else Any]
        return Annotated[base, msgspec.Meta(**meta)] if meta else base

    def struct(name: str, tag: str | None = None) -> Any:
        if name not in structs:
            schema = defs[name]
            required = set(schema.get("required", []))
            fields = []
            for field, sub in schema["properties"].items():
                if field == "t":
                    continue
                if field in required:
                    fields.append((field, typ(sub)))
                else:
                    fields.append(
                        (field, typ(sub) | None if "default" not in sub else typ(sub), sub.get("default"))
                    )
            options = {"forbid_unknown_fields": schema.get("additionalProperties") is False}
            if tag:
                options.update(tag_field="t", tag=tag)
            structs[name] = msgspec.defstruct(name, fields, **options)
        return structs[name]

    records = [struct(ref.rsplit("/", 1)[1], tag) for tag, ref in SCHEMA["x-records"].items()]
    return Union[tuple(records)]  # noqa: UP007


def _base(t: Any) -> Any:
    return getattr(t, "__origin__", t) if getattr(t, "__metadata__", None) is None else t.__origin__


# --- per-record validation ----------------------------------------------------------------------


def per_record(plans: dict[int, bytes], fjs_module: Any) -> dict[int, dict[str, float]]:
    import msgspec

    union = msgspec_types()
    decoder = msgspec.json.Decoder(union)
    results: dict[int, dict[str, float]] = {}
    for size, plan in plans.items():
        raws = [line for line in plan.splitlines() if line.strip()]
        records = [json.loads(raw) for raw in raws]
        assert all(hand.record_problems(r) == [] for r in records)
        for record in records:  # every candidate accepts every record of the plan
            fjs_module.validate(record)
            msgspec.convert(record, union, strict=True)
        timings = {
            "json parse (stdlib)": lambda raws=raws: [json.loads(raw) for raw in raws],
            "hand": lambda records=records: [hand.record_problems(r) for r in records],
            "fastjsonschema": lambda records=records: [fjs_module.validate(r) for r in records],
            "msgspec (convert dict)": lambda records=records: [
                msgspec.convert(r, union, strict=True) for r in records
            ],
            "msgspec (decode bytes)": lambda raws=raws: [decoder.decode(raw) for raw in raws],
        }
        results[size] = {}
        for name, work in timings.items():
            times = []
            for _ in range(SIZES[size]):
                start = time.perf_counter()
                work()
                times.append(time.perf_counter() - start)
            results[size][name] = min(times) / len(records) * 1e6  # microseconds per record
    return results


# --- import and first-use cost ------------------------------------------------------------------

FIRST_USE = {
    "hand": (
        "import json, ralph.plan.validate as v;"
        " [v.validator_of(t) for t in json.loads(v.SCHEMA_PATH.read_text())['x-records']]"
    ),
    "fastjsonschema": "import plan_fjs",
    "msgspec": "import sys; sys.path.insert(0, {bench!r}); import bench_validator as b; b.msgspec_types()",
}


def process_time(args: list[str], env: dict[str, str], reps: int, cwd: Path | None = None) -> float:
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        done = subprocess.run(args, env=env, cwd=cwd, capture_output=True)
        times.append(time.perf_counter() - start)
        if done.returncode != 0:
            sys.exit(f"bench: {' '.join(args)} failed: {done.stderr.decode().strip()[-400:]}")
    return statistics.median(times)


def import_costs(env: dict[str, str]) -> tuple[float, dict[str, float]]:
    bench = str(Path(__file__).parent)
    programs = {
        "python -c pass": "pass",
        **{name: code.format(bench=bench) for name, code in FIRST_USE.items()},
    }
    times: dict[str, list[float]] = {name: [] for name in programs}
    for rep in range(22):  # round-robin; the first round byte-compiles
        for name, code in programs.items():
            seconds = process_time([sys.executable, "-c", code], env, 1)
            if rep:
                times[name].append(seconds)
    floor = statistics.median(times.pop("python -c pass"))
    return floor, {name: statistics.median(found) - floor for name, found in times.items()}


# --- whole commands -------------------------------------------------------------------------------

# Runs ralph's CLI with a candidate deciding which records are valid; an invalid record still gets
# the hand validator's words (ralph check's output stays as it is).
WRAPPER = """
import sys
import ralph.plan.validate as v
candidate = sys.argv.pop(1)
worded = v.record_problems
loaded = {}


def fastjsonschema_problems(record):
    if not loaded:  # imported on first use, as validate.py compiles on first use
        import plan_fjs
        loaded.update(validate=plan_fjs.validate, error=plan_fjs.JsonSchemaValueException)
    try:
        loaded["validate"](record)
    except loaded["error"]:
        return worded(record)
    return []


def msgspec_problems(record):
    if not loaded:
        import msgspec
        sys.path.insert(0, {bench!r})
        import bench_validator
        union = bench_validator.msgspec_types()
        loaded.update(known=set(bench_validator.SCHEMA["x-records"]), error=msgspec.ValidationError)
        loaded.update(validate=lambda record: msgspec.convert(record, union, strict=True))
    if isinstance(record, dict) and record.get("t") in loaded["known"]:
        try:
            loaded["validate"](record)
            return []
        except loaded["error"]:
            pass
    return worded(record)


if candidate == "fastjsonschema":
    v.record_problems = fastjsonschema_problems
elif candidate == "msgspec":
    v.record_problems = msgspec_problems
from ralph.cli.main import main
sys.argv[0] = "ralph"
main()
"""


class Run:
    """One command with one candidate, in its own copy of the plan's repository."""

    def __init__(self, work: Path, env: dict[str, str], plan: bytes, key: tuple[str, str, bool], dep: str):
        self.name, self.candidate, self.cached = key
        self.env, self.dep, self.count, self.times = env, dep, 0, []
        self.repo = work / "-".join(map(str, key)).replace(" ", "-")
        self.wrapper = work / "ralph_with.py"
        make_repo(self.repo, plan, env)

    def measure(self) -> None:
        self.count += 1
        if not self.cached:
            (self.repo / ".git" / "ralph-valid-plan").unlink(missing_ok=True)
        rest = self.name.split()
        if self.name == "task add":
            rest.append(
                json.dumps({"name": f"Bench task {self.count}", "accept": "works", "deps": [self.dep]})
            )
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, str(self.wrapper), self.candidate, *rest],
            cwd=self.repo,
            env=self.env,
            capture_output=True,
        )
        self.times.append(time.perf_counter() - start)
        if done.returncode != 0:
            sys.exit(f"bench: {self.name} ({self.candidate}) failed: {done.stderr.decode().strip()}")


def commands(work: Path, env: dict[str, str], plan: bytes, done_ids: list[str]) -> dict[tuple, float]:
    (work / "ralph_with.py").write_text(WRAPPER.replace("{bench!r}", repr(str(Path(__file__).parent))))
    runs = [
        Run(work, env, plan, (name, candidate, cached), done_ids[0])
        for cached in (True, False)
        for name in ("query next", "task add")
        for candidate in CANDIDATES
    ]
    for run in runs:  # warm up: byte-compiled files, the valid-plan cache
        run.measure()
        run.times.clear()
    for _ in range(COMMAND_REPS):  # round-robin, so a slow moment of the machine spreads over all
        for run in runs:
            run.measure()
    return {(run.name, run.candidate, run.cached): statistics.median(run.times) for run in runs}


def main() -> None:
    try:
        import fastjsonschema  # noqa: F401
        import msgspec  # noqa: F401
    except ImportError as exc:
        sys.exit(f"bench: {exc.name} is not installed: pip install -e '.[bench]'")
    work = Path(tempfile.mkdtemp(prefix="ralph-bench-validator-"))
    env = {key: value for key, value in os.environ.items() if not key.startswith("GIT_")}
    env.update(GIT_ENV)
    (work / "gitconfig").write_text("[init]\n\tdefaultBranch = main\n")
    env["GIT_CONFIG_GLOBAL"] = str(work / "gitconfig")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
    generated = work / "generated"
    generated.mkdir()
    write_fastjsonschema_modules(generated)
    env["PYTHONPATH"] = str(generated)
    sys.path.insert(0, str(generated))
    import plan_fjs

    try:
        report(work, env, plan_fjs)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def report(work: Path, env: dict[str, str], fjs_module: Any) -> None:
    started = time.perf_counter()
    rng = random.Random(1)
    plans, done_ids = {}, []
    for size in SIZES:
        plans[size], done = make_plan(size, rng)
        done_ids = done_ids or done
    print(f"plan.jsonl validators (python {sys.version.split()[0]}, {os.cpu_count()} CPUs)")
    print()
    for size, figures in per_record(plans, fjs_module).items():
        parse = figures["json parse (stdlib)"]
        lines = len(plans[size].splitlines())
        print(f"{size:5d} tasks ({lines} records), per record (best of {SIZES[size]}):")
        for name, us in figures.items():
            plan_ms = us * lines / 1000
            print(f"  {name:24s} {us:6.2f} us  ratio {us / parse:4.2f}x json parse  ({plan_ms:6.1f} ms/plan)")
        print()
    floor, costs = import_costs(env)
    print(f"import and first use (median of 21, minus python -c pass = {floor * 1000:.1f} ms):")
    for name, seconds in costs.items():
        print(
            f"  {name:24s} {seconds * 1000:6.1f} ms  ratio {(seconds + floor) / floor:4.2f}x python -c pass"
        )
    print()
    results = commands(work, env, plans[1000], done_ids)
    for cached in (True, False):
        label = (
            "valid-plan cache kept (as make bench)" if cached else "valid-plan cache removed before each run"
        )
        print(f"1000 tasks, whole command, median of {COMMAND_REPS}, {label}:")
        for name in ("query next", "task add"):
            base = results[name, "hand", cached]
            for candidate in CANDIDATES:
                ms = results[name, candidate, cached] * 1000
                print(f"  {name:10s} {candidate:16s} {ms:6.1f} ms  ratio {ms / (base * 1000):4.2f}x hand")
        print()
    print(f"(benchmark took {time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
