"""`python scripts/benchmark.py step-path` traces a step and a recv/send as a user runs them."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CELLS = ("step(), empty infos", "step(), info every step", "recv() + send(), empty infos",
         "recv() + send(), info every step")


def test_step_path_counts_the_files_and_functions_of_each_call() -> None:
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "benchmark.py"), "step-path", "--num-envs", "4",
                           "--warmup", "40", "--list-functions"],
                          cwd=REPO, capture_output=True, text=True, timeout=240, check=False)
    assert done.returncode == 0, done.stderr
    rows = {line.split(" | ")[0].lstrip("| "): line for line in done.stdout.splitlines() if line.startswith("| ")}
    assert set(rows) >= set(CELLS)
    for cell in CELLS:
        counts = [int(number) for number in rows[cell].strip("| ").split(" | ")[1:]]
        assert min(counts) > 0, cell  # parent and worker files and functions, each traced
    assert "vec_envs/vec_env_base.py: " in done.stdout  # the parent's step() starts in the base class
    assert "vec_envs/stepping/env_slice.py: " in done.stdout  # a worker steps its envs there
