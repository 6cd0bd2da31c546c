"""ralph/plan/generate.py: plan.schema.json and docs/plan-format.md's field tables are derived from
the models, and are current."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from ralph.plan import generate
from ralph.plan.models import RECORD_MODELS, json_schema


def test_the_generated_files_are_current():
    for path, text in generate.outputs().items():
        assert path.read_text(encoding="utf-8") == text, (
            f"{path} is out of date with ralph/plan/models.py: run make schema"
        )


@pytest.mark.parametrize("kind", sorted(RECORD_MODELS))
def test_every_field_says_what_it_means(kind):
    """Each row of the docs' tables has a meaning: a field without a description would show none."""
    schema = json_schema()
    definition = schema["$defs"][schema["x-records"][kind].rsplit("/", 1)[1]]
    undescribed = [
        name for name, sub in definition["properties"].items() if name != "t" and not sub.get("description")
    ]
    assert not undescribed, f"{kind}: give these a Field(description=...) in models.py: {undescribed}"


def _rows(kind: str) -> dict[str, tuple[str, str]]:
    table = generate.field_table(json_schema(), kind)
    rows = [line.strip("|").split(" | ") for line in table.splitlines()[2:]]
    return {name.strip(" `"): (words.strip(), meaning.strip()) for name, words, meaning in rows}


def test_the_type_words_come_from_the_schema():
    task = _rows("task")
    assert task["id"][0] == "task id, required"
    assert task["name"][0] == "non-empty string, required"
    assert task["s"][0] == '`"p"`, `"d"` or `"b"`, default `"p"`'
    assert task["deps"][0] == "list of task ids"
    assert task["questions"][0] == "list of issue ids"
    assert task["tokens"][0] == "integer \u2265 0"
    assert task["attempt_tokens"][0] == "list of integers \u2265 0"
    assert task["accept"][0] == "string or list of strings"
    assert task["deps"][1] == RECORD_MODELS["task"].model_fields["deps"].description
    config = _rows("config")
    assert config["context_warn"][0] == "number in (0, 1], default `0.7`"
    assert config["max_minutes"][0] == "number > 0"  # not "number > 0 or integer > 0"
    assert config["parallel"][0] == "integer > 0, default `4`"  # a config key's x-default
    assert config["timeout_ms"][0].startswith("integer > 0 or duration")
    assert _rows("state")["iteration"][0] == "integer \u2265 0, default `0`"


def test_a_new_field_gets_a_row_without_editing_the_generator():
    schema = json_schema()
    task = schema["$defs"]["Task"]
    task["properties"]["due"] = {
        "anyOf": [{"type": "string", "minLength": 1}, {"type": "null"}],
        "description": "when it must be done | at the latest",
    }
    table = generate.field_table(schema, "task")
    assert "| `due` | non-empty string | when it must be done \\| at the latest |" in table.splitlines()


def test_the_docs_name_a_record_type_without_a_table():
    schema = json_schema()
    docs = generate.DOCS_FILE.read_text(encoding="utf-8")
    schema["x-records"]["due"] = schema["x-records"]["task"]
    with pytest.raises(ValueError, match="record types without a table: due"):
        generate.docs_text(docs, schema)


def test_only_the_tables_between_the_markers_are_rewritten():
    docs = generate.DOCS_FILE.read_text(encoding="utf-8")
    stale = docs.replace("| `name` | non-empty string, required | what to do |", "| `name` | old words |", 1)
    assert stale != docs
    assert generate.docs_text(stale, json_schema()) == docs


@pytest.fixture
def copies(tmp_path, monkeypatch):
    """The generated files copied aside, so that the generator may rewrite them."""
    schema, docs = tmp_path / "plan.schema.json", tmp_path / "plan-format.md"
    shutil.copy(generate.SCHEMA_FILE, schema)
    shutil.copy(generate.DOCS_FILE, docs)
    monkeypatch.setattr(generate, "SCHEMA_FILE", schema)
    monkeypatch.setattr(generate, "DOCS_FILE", docs)
    contract = tmp_path / "agent-contract.md"  # its stage tables are generated too
    shutil.copy(generate.CONTRACT_FILE, contract)
    monkeypatch.setattr(generate, "CONTRACT_FILE", contract)
    return schema, docs


def test_check_names_each_stale_file_and_writing_makes_it_current(copies, capsys):
    schema, docs = copies
    schema.write_text("{}\n", encoding="utf-8")
    docs.write_text(
        docs.read_text(encoding="utf-8").replace("what to do", "what to do (old)"), encoding="utf-8"
    )
    assert generate.main(["--check"]) == 1
    err = capsys.readouterr().err
    assert f"{schema} is out of date" in err and f"{docs} is out of date" in err
    assert schema.read_text(encoding="utf-8") == "{}\n"  # --check writes nothing
    assert generate.main([]) == 0
    assert json.loads(schema.read_text(encoding="utf-8")) == json_schema()
    assert "what to do (old)" not in docs.read_text(encoding="utf-8")
    assert generate.main(["--check"]) == 0


def test_docs_without_a_place_for_a_table_are_refused_in_one_line(copies, capsys):
    _, docs = copies
    text = docs.read_text(encoding="utf-8")
    broken = text.replace("<!-- fields of reject:", "<!-- reject:")
    docs.write_text(broken, encoding="utf-8")
    assert generate.main([]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "record types without a table: reject" in err
    assert docs.read_text(encoding="utf-8") == broken  # nothing written


def test_it_runs_as_a_module():
    done = subprocess.run(
        [sys.executable, "-m", "ralph.plan.generate", "--check"], capture_output=True, text=True
    )
    assert (done.returncode, done.stderr) == (0, "")


def test_a_new_stage_gets_rows_in_the_agent_contract_without_editing_the_generator(monkeypatch):
    from dataclasses import replace

    from ralph.plan import stage_declarations

    review = replace(stage_declarations.BY_NAME["VERIFY"], name="REVIEW", template="review.md")
    monkeypatch.setattr(stage_declarations, "STAGES", (*stage_declarations.STAGES, review))
    overview, may = generate.stage_table("overview"), generate.stage_table("may")
    assert "| REVIEW | accepts or rejects a built task, in a checkout of its own |" in overview
    assert "| `review.md` |" in overview
    assert (
        "| REVIEW | add tasks, add issues, give a verdict on its own task, change its own task's status |"
        in may
    )
    current = generate.CONTRACT_FILE.read_text(encoding="utf-8")
    assert generate.contract_text(current) != current  # the committed doc is now stale: make schema
