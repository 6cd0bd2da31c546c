"""ralph/cli/reference.py: docs/cli.md holds every command's --help and docs/config.md every config
key, both as the code has them now."""

from __future__ import annotations

import runpy
import subprocess
import sys
import warnings

import pytest
from click.testing import CliRunner

from ralph.cli import reference
from ralph.cli.main import cli
from ralph.plan.declared import CONFIG_KEYS
from tests.support.cli import leaf_commands


def test_the_generated_docs_are_current():
    for path, text in reference.outputs().items():
        assert path.read_text(encoding="utf-8") == text, f"{path} is out of date with the code: run make docs"


def test_every_command_has_its_help_in_the_cli_reference():
    text = reference.CLI_FILE.read_text(encoding="utf-8")
    assert len(leaf_commands()) >= 30
    for path in ["", "spec", *leaf_commands()]:
        name = " ".join(("ralph", path)).strip()
        assert f"\n## {name}\n" in text, name
        shown = CliRunner().invoke(cli, [*path.split(), "--help"], prog_name="ralph", terminal_width=80)
        section = text.split(f"\n## {name}\n", 1)[1].split("\n## ", 1)[0]
        # The same words as `ralph ... --help` prints (a terminal's width wraps them differently).
        assert section.split() == ["```text", *shown.stdout.split(), "```"], name


def test_a_changed_help_text_makes_the_cli_reference_stale(monkeypatch):
    spec_new = leaf_commands()["spec new"]
    monkeypatch.setattr(spec_new, "help", f"{spec_new.help} A sentence added today.")
    assert "A sentence added today." in reference.cli_text()
    assert reference.cli_text() != reference.CLI_FILE.read_text(encoding="utf-8")


def test_every_config_key_has_a_row_with_its_default_and_meaning():
    table = reference.config_table()
    rows = {line.split(" | ")[0].strip("| `"): line for line in table.splitlines()[2:]}
    assert list(rows) == list(CONFIG_KEYS)  # each key once, in declaration order
    for name, key in CONFIG_KEYS.items():
        assert key.description.replace("|", "\\|") in rows[name], name
        if key.default is not None and key.default != []:
            assert "default `" in rows[name], name
    assert "| `parallel` | integer > 0, default `4` |" in table


def test_check_names_a_stale_file_and_writes_nothing(tmp_path, monkeypatch):
    stale = tmp_path / "cli.md"
    stale.write_text("old\n")
    config = tmp_path / "config.md"
    config.write_text(reference.CONFIG_FILE.read_text(encoding="utf-8"))
    monkeypatch.setattr(reference, "CLI_FILE", stale)
    monkeypatch.setattr(reference, "CONFIG_FILE", config)
    assert reference.main(["--check"]) == 1
    assert stale.read_text() == "old\n"
    assert reference.main([]) == 0 and stale.read_text() == reference.cli_text()
    assert reference.main(["--check"]) == 0


def test_a_config_doc_without_the_tables_place_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys):
    config = tmp_path / "config.md"
    config.write_text("# Settings\n")
    monkeypatch.setattr(reference, "CONFIG_FILE", config)
    assert reference.main(["--check"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("ralph.cli.reference: config.md: no place for the table")


def test_the_module_run_as_main_checks_the_docs_exits_0_and_says_nothing(monkeypatch, capsys):
    """`make docs` runs `python -m ralph.cli.reference`: run as __main__ (a fresh copy of the module,
    as -m makes), it reads its command line and exits with main's answer; the docs are current,
    so --check says nothing and exits 0."""
    monkeypatch.setattr(sys, "argv", ["reference", "--check"])
    monkeypatch.delitem(sys.modules, "ralph.cli.reference")  # else runpy runs it beside the one imported
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a warning the process would print on its stderr
        with pytest.raises(SystemExit) as exited:
            runpy.run_module("ralph.cli.reference", run_name="__main__")
    assert exited.value.code == 0
    assert capsys.readouterr() == ("", "")


# `make test` has it in process, in test_the_module_run_as_main_checks_the_docs_exits_0_and_says_nothing
# (Python's own -m start is the difference)
@pytest.mark.slow
def test_the_module_runs_as_make_docs_runs_it():
    done = subprocess.run(
        [sys.executable, "-m", "ralph.cli.reference", "--check"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and done.stderr == "", done.stderr
