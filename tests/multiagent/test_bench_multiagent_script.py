"""`scripts/benchmark.py multiagent` runs as a user runs it, with a tiny budget, and prints both tables."""
from __future__ import annotations

import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_bench_multiagent_prints_every_contender() -> None:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (REPO, os.environ.get("PYTHONPATH")) if p))
    done = subprocess.run([sys.executable, os.path.join(REPO, "scripts", "benchmark.py"), "multiagent",
                           "--rounds", "1", "--steps", "3", "--num-envs", "2"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=240, check=False)
    assert done.returncode == 0, done.stderr
    rows = [line for line in done.stdout.splitlines() if line.startswith("| ") and "---" not in line]
    names = [row.split(" | ")[0].lstrip("| ") for row in rows]
    assert names[1:5] == ["raw loop (ParallelEnv.step in series)", "vec_envs dummy",
                          "vec_envs subproc (auto: 1 worker + parent)", "vec_envs subproc (2 workers, parent drives)"]
    assert any(name.startswith("2 Echo envs x 3 agents") for name in names)
    assert all(float(row.split(" | ")[1].replace(",", "")) > 0 for row in rows if not row.startswith("| contender")
               and not row.startswith("| rows"))
