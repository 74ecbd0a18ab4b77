"""scripts/run_atari.py --batch-size K: the async path, as a user runs it."""
from __future__ import annotations

import csv
import glob

import pytest

pytest.importorskip("ale_py", reason="the Atari tests need ale-py: pip install -e '.[atari]'")

from tests.scripts.test_run_atari import SUMMARY, error_lines, run_script  # noqa: E402

pytestmark = pytest.mark.slow  # runs console commands or scripts in processes of their own

POLICY = (
    "import numpy as np\n"
    "def act(obs):\n"
    "    assert obs.shape == (2, 84, 84, 4), obs.shape\n"
    "    print('batch', len(obs), flush=True)\n"
    "    return np.ones(len(obs), dtype=int)\n")


def test_batch_size_runs_recv_send_and_counts_scores_per_env(tmp_path):
    (tmp_path / "my_agent.py").write_text(POLICY)
    monitors = tmp_path / "monitors"
    proc = run_script("--backend", "subproc", "--in-series", "2", "--num-envs", "3", "--batch-size", "2",
                      "--steps", "1200", "--policy", "my_agent:act",
                      "--monitor-dir", str(monitors), cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert "ALE/Breakout-v5: 3 envs on subproc in async batches of 2, obs (84, 84, 4)" in proc.stdout
    match = SUMMARY.search(proc.stdout)
    assert match, proc.stdout
    steps = int(match.group(1))
    batches = proc.stdout.count("batch 2")
    assert 1200 <= steps <= 1201
    assert batches == (steps + 3) // 2  # reset rows are not steps
    episodes = 0
    for path in glob.glob(str(monitors / "*.monitor.csv")):
        with open(path) as f:
            f.readline()
            episodes += len(list(csv.DictReader(f)))
    # every game recv returned as finished is counted, once; the 3 envs still in flight at the
    # end may finish a game in their last step (in the monitor CSV, never returned by recv)
    assert 0 < int(match.group(2)) <= episodes <= int(match.group(2)) + 3
    assert "step/s" in proc.stderr


@pytest.mark.parametrize("args, message", [
    (["--num-envs", "4", "--batch-size", "5"], "--batch-size must be at most --num-envs (4), received 5"),
    (["--batch-size", "2", "--render"], "--render shows all envs at one step, which needs lock-step batches; "
                                        "drop --batch-size or --render"),
    (["--batch-size", "0"], "argument --batch-size: expected a positive int, received '0'"),
])
def test_bad_batch_size_is_one_clear_line(args, message):
    proc = run_script(*args)
    assert proc.returncode == 2
    (line,) = error_lines(proc.stderr)
    assert message in line, line
