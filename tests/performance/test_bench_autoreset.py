"""``benchmark.py autoreset``: a smoke run with tiny windows prints both modes side by side
and their ratios (nothing here is timed: the numbers only have to be numbers)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # times, probes or plots the benchmark

pytest.importorskip("psutil")

REPO = Path(__file__).resolve().parents[2]
NUMBER = r"[\d,.]+"


@pytest.mark.timeout(120)
def test_autoreset_prints_each_mode_and_next_step_over_same_step():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "benchmark.py"), "autoreset", "--envs", "cartpole",
                           "--rounds", "1", "--seconds", "0.1", "--warmup", "0", "--num-envs", "2"],
                          env=env, capture_output=True, text=True, timeout=110, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    for cell in ("subproc same_step", "subproc next_step", "to_gymnasium same_step", "to_gymnasium next_step"):
        assert re.search(rf"\| {cell} \| {NUMBER} \| {NUMBER}-{NUMBER} \| {NUMBER} \|", done.stdout), done.stdout
    assert re.search(rf"to_gymnasium: next-step / same-step: env-steps/s {NUMBER}x, CPU per env step {NUMBER}x",
                     done.stdout), done.stdout
