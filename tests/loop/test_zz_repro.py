import shlex, sys, os
from pathlib import Path
import pytest
from tests.support.construct import add_tasks, construct, with_app_spec, plan_records, events
from tests.support.gitrepo import git

ODD = Path("/work/wt/oddmoves/tests/loop/odd_agent.py")
AGENT = f"{shlex.quote(sys.executable)} {shlex.quote(str(ODD))}"

@pytest.fixture
def project(repo):
    return with_app_spec(repo, "# App\n")

def test_repro(project):
    odd, plain = add_tasks(project, f"Odd [remove-worktree]", "Plain")
    (project / "slow_gate.py").write_text("import time, subprocess, sys\ntime.sleep(3)\nsys.exit(subprocess.run([sys.executable, 'check_work.py']).returncode)\n")
    git(project, "add", "slow_gate.py"); git(project, "commit", "-qm", "g")
    for run in range(4):
        (project.parent / "agent-state" / f"{odd}.odd").unlink(missing_ok=True)
        done = construct(project, "--parallel", "2", "--max-iterations", "8", "--gate", f"{sys.executable} slow_gate.py", agent=AGENT)
        print("EXIT", done.returncode, done.stderr.strip().splitlines()[-1])
        for r in plan_records(project):
            if r.get("t") == "task": print({k: r.get(k) for k in ("id","name","s","verdict","kill_reason","attempts")})
    print([ (e["item"], e.get("verdict")) for e in events(project) if e["event"] in ("build_failed", "task_killed")])
    assert 0
