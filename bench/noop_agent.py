"""The cheapest possible agent for the construct benchmark: it does each stage's one required
call and nothing else. BENCH_VERIFY_SLEEP makes each VERIFY take that many seconds;
BENCH_BUILD_SLEEP makes each BUILD take that long and write work/<task id>.txt."""

import os
import shlex
import subprocess
import sys
import time

ralph = shlex.split(os.environ["RALPH_BIN"])
stage = os.environ["RALPH_STAGE"]
if stage == "BUILD":
    if os.environ.get("BENCH_BUILD_SLEEP"):
        time.sleep(float(os.environ["BENCH_BUILD_SLEEP"]))
        os.makedirs("work", exist_ok=True)
        with open(os.path.join("work", os.environ["RALPH_TASK_ID"] + ".txt"), "w") as out:
            out.write("built\n")
    subprocess.run([*ralph, "task", "done"], check=True, capture_output=True)
elif stage == "VERIFY":
    time.sleep(float(os.environ.get("BENCH_VERIFY_SLEEP", "0")))
    subprocess.run([*ralph, "task", "accept"], check=True, capture_output=True)
sys.exit(0)
