"""A make gate's Makefile read as text (ralph.loop.process.makefile): the targets it has, through plain
variables and literal includes; what text cannot settle is never refused; only regular files of a
makefile's size are read. (That the probe runs nothing from it: tests/loop/process/test_gate.py.)"""

from __future__ import annotations

import pytest

from ralph.loop.process.makefile import missing_targets


@pytest.mark.parametrize(
    ("makefile", "argv", "missing"),
    [
        ("verify test: build\n\ttrue\n", ["verify"], None),
        ("verify:: a\n\ttrue\n", ["-k", "-j", "4", "--no-print-directory", "verify", "V=1"], None),
        ("X := 1\nY ::= 2\nverify: ; true\n", ["-j4", "verify", "lint"], ("Makefile", ["lint"])),
        ("include rules.mk\n", ["verify"], ("Makefile", ["verify"])),  # rules.mk: test only
        ("include $(RULES)\n", ["verify"], None),  # a variable: text cannot tell
        ("%.out: %.in\n\ttrue\n", ["verify"], None),  # a pattern rule
        ("$(eval $(call rule,verify))\n", ["verify"], None),
        ("all:\n\ttrue\n", [], None),  # the default goal
        ("X = 1\n", [], ("Makefile", ["(the default goal)"])),
        ("all:\n", ["--eval=verify:", "verify"], None),  # an option read here as unknown
        ("all:\n", ["-C", "sub", "verify"], None),  # sub/Makefile has it
        ("all:\n", ["-f", "other.mk", "verify"], ("other.mk", ["verify"])),
    ],
)
def test_a_make_gates_targets_are_read_from_its_makefile(tmp_path, makefile, argv, missing):
    (tmp_path / "Makefile").write_text(makefile)
    (tmp_path / "rules.mk").write_text("test:\n\ttrue\n")
    (tmp_path / "other.mk").write_text("other:\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "Makefile").write_text("verify:\n")
    assert missing_targets(argv, tmp_path) == missing


def test_a_rule_named_by_plain_variables_is_read_through_them(tmp_path):
    (tmp_path / "Makefile").write_text(
        "VENV ?= .venv\nSTAMP := $(VENV)/.installed\nGOALS = test\nGOALS += verify\n"
        "$(STAMP): x\n\ttrue\n$(GOALS): $(STAMP)\n\ttrue\n"
    )
    assert missing_targets(["verify", ".venv/.installed"], tmp_path) is None
    assert missing_targets(["lint"], tmp_path) == ("Makefile", ["lint"])
    (tmp_path / "Makefile").write_text("GOALS := $(shell ls)\n$(GOALS):\n\ttrue\n")
    assert missing_targets(["lint"], tmp_path) is None  # a function: text cannot tell


def test_the_probe_reads_only_regular_files_of_a_makefiles_size(tmp_path):
    """An include a build committed that names /dev/zero (or a FIFO) never hangs the start."""
    (tmp_path / "Makefile").write_text("include /dev/zero\nall:\n")
    assert missing_targets(["verify"], tmp_path) is None  # cannot tell: never refused, never read
