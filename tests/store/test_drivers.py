"""Which commands of git's config (filters, merge drivers, signing, ssh, credentials) run a file an
agent could write (ralph.store.drivers). The run they refuse: tests/loop/process/test_sandbox.py's
test_a_git_driver_running_a_work_tree_script_is_refused_before_any_run."""

from __future__ import annotations

import pytest

from ralph.store.drivers import drivers_in_work_tree, writable_part
from ralph.store.git import Repo
from tests.support.gitrepo import git


@pytest.mark.parametrize(
    ("command", "named"),
    [
        ("./scripts/clean.sh", "./scripts/clean.sh"),
        ("scripts/not-there-yet.sh %f", "scripts/not-there-yet.sh"),
        ("{root}/scripts/clean.sh", "{root}/scripts/clean.sh"),
        ("sh scripts/clean.sh", "scripts/clean.sh"),
        ("python3 -m nbstripout", "python3 -m: modules of the work tree first"),
        ("git-lfs filter-process", None),
        ("python3 -P -m nbstripout", None),
        ("sed -e s/a/b/", None),
        ("/usr/bin/env cat %f", None),
        ("!./scripts/clean.sh get", "./scripts/clean.sh"),
        ("store --file ~/.git-credentials", None),
    ],
)
def test_which_driver_commands_run_a_file_an_agent_could_write(repo, command, named):
    (repo / "scripts").mkdir()
    (repo / "scripts" / "clean.sh").write_text("#!/bin/sh\ncat\n")
    assert writable_part(repo, command.format(root=repo)) == (named.format(root=repo) if named else None)


def test_the_drivers_are_read_from_every_config_file_but_ralphs_own_merge_driver(repo):
    (repo / "scripts").mkdir()
    (repo / "scripts" / "clean.sh").write_text("#!/bin/sh\ncat\n")
    assert drivers_in_work_tree(Repo(repo)) == []
    git(repo, "config", "filter.Strip.clean", "./scripts/clean.sh")
    git(repo, "config", "filter.lfs.process", "git-lfs filter-process")
    git(
        repo, "config", "merge.ralph.driver", "./anything %O %A %B"
    )  # ralph's own (ralph.usecases.mergedriver)
    git(repo, "config", "core.sshCommand", "ssh -F scripts/clean.sh")
    git(repo, "config", "remote.shared.receivepack", "scripts/clean.sh")
    assert sorted(drivers_in_work_tree(Repo(repo))) == [
        "core.sshcommand (scripts/clean.sh)",
        "filter.Strip.clean (./scripts/clean.sh)",
        "remote.shared.receivepack (scripts/clean.sh)",
    ]
