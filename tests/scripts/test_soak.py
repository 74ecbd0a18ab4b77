"""scripts/soak.py runs a few seconds of random calls and faults and reports every checked
row matched and nothing leaked (the 10-minute run is done by hand)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # runs console commands or scripts in processes of their own

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.timeout(180)
def test_a_short_soak_checks_rows_survives_its_faults_and_leaks_nothing(tmp_path):
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "soak.py"), "--seconds", "4", "--num-envs", "4",
                           "--batch-size", "2", "--seed", "1"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=150, check=False, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stdout + done.stderr
    summary = re.search(r"^done in \d+ s: (.*)$", done.stdout, re.M)
    assert summary is not None, done.stdout
    counts = dict(re.findall(r"([a-zA-Z -9]+?) (\d+)(?:, |$)", summary[1]))
    assert int(counts["rows checked"]) > 100 and int(counts["mismatches"]) == 0, summary[1]
    assert int(counts["step"]) > 0 and int(counts["recv"]) > 0
    assert re.search(r"^at end 0 processes below this one, (\d+) fds \(start: 0, \1\)$", done.stdout, re.M), \
        done.stdout
