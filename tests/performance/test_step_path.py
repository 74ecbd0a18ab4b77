"""`python scripts/benchmark.py step-path` traces one SubprocVecEnv.step() as a user runs it."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_step_path_counts_the_files_and_functions_of_a_step() -> None:
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "benchmark.py"), "step-path", "--cpus", "4",
                           "--num-envs", "8", "--warmup", "20", "--list-functions"],
                          cwd=REPO, capture_output=True, text=True, timeout=240, check=False)
    assert done.returncode == 0, done.stderr
    rows = {line.split(" | ")[0].lstrip("| "): line for line in done.stdout.splitlines() if line.startswith("| ")}
    assert set(rows) >= {"parent", "worker", "together"}
    counts = {side: [int(cell) for cell in rows[side].strip("| ").split(" | ")[1:]] for side in ("parent", "worker")}
    assert min(counts["parent"] + counts["worker"]) > 0
    assert "vec_envs/vec_env_base.py: " in done.stdout  # the parent's step() starts in the base class
    assert "vec_envs/stepping/env_slice.py: " in done.stdout  # a worker steps its envs there
