"""vec-envs-check and vec-envs-tune, run as a user runs them from a checkout: the report on stdout,
the commands' exit statuses (0 nothing found, 1 findings or a setup they cannot run with, 2 a bad
command line, 130 Ctrl-C with every process they started ended)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from tests.helpers import children

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow  # runs the console commands, each in a process of its own

CHECK, TUNE = REPO / "scripts" / "check_env.py", REPO / "scripts" / "tune.py"


def run(script: Path, *args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True, cwd=REPO,
                          timeout=timeout, check=False)


def test_check_exits_0_when_nothing_is_found():
    done = run(CHECK, "tests.checking.bad_envs:CountingEnv", "--steps", "12")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("check_env(tests.checking.bad_envs:CountingEnv): 2 envs, 12 steps each, seed 0: "
                                  "16 checks, 0 findings in ")


def test_check_exits_1_with_each_finding_and_its_fix():
    done = run(CHECK, "tests.checking.bad_envs:WrapsUint8", "--steps", "12")
    assert done.returncode == 1
    assert "1. [spaces: observations] env 0, step 4: obs[1] = 300 (int64) does not fit uint8" in done.stdout
    assert "   fix: declare the Box with a dtype that holds these values" in done.stdout
    assert done.stderr == ""


@pytest.mark.parametrize("script, args, status, message", [
    (CHECK, ["NoSuchEnv-v0"], 1, "check_env.py: error: ENV 'NoSuchEnv-v0': "),
    (CHECK, ["no_such_module:make"], 1, "check_env.py: error: ENV 'no_such_module:make': module 'no_such_module' "
                                        "does not import"),
    (CHECK, ["CartPole-v1", "--steps", "0"], 2, "check_env.py: error: argument --steps: expected a positive int, "
                                                "received '0' (see --help)"),
    (TUNE, ["CartPole-v1", "--seconds", "-1"], 2, "tune.py: error: argument --seconds: expected a number of "
                                                  "seconds > 0, received '-1' (see --help)"),
    (TUNE, ["tests.checking.bad_envs:nothing"], 1, "tune.py: error: ENV 'tests.checking.bad_envs:nothing': module "
                                                   "'tests.checking.bad_envs' has no callable 'nothing'"),
], ids=["unknown-id", "unknown-module", "bad-steps", "bad-seconds", "no-such-factory"])
def test_a_bad_command_line_or_env_is_one_line(script, args, status, message):
    done = run(script, *args)
    assert done.returncode == status, done.stderr
    assert done.stderr.startswith(message), done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and done.stdout == ""


def test_tune_prints_the_table_and_the_fastest_line():
    done = run(TUNE, "CartPole-v1", "--num-envs", "2", "--seconds", "3", "--rounds", "1")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "| configuration | env steps/s | CPU us per env step | build s | note |" in done.stdout
    assert "use: venv = " in done.stdout


@pytest.mark.parametrize("script, args", [
    (CHECK, ["vec_envs.timing.synthetic:WaitingEnv", "--steps", "4000"]),  # sleeps about 1 ms a step
    (TUNE, ["CartPole-v1", "--num-envs", "2", "--seconds", "60"]),
], ids=["check", "tune"])
def test_ctrl_c_exits_130_and_ends_every_process_it_started(script, args):
    before = {p.pid for p in children()}
    proc = subprocess.Popen([sys.executable, str(script), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=REPO)
    # in the middle of its work: a second into a process it started (tune's timed cell), else 6 s
    # into its run (check steps its envs in its own process first)
    deadline = time.monotonic() + 5
    while not psutil.Process(proc.pid).children() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(1.0)
    os.kill(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err[-2000:]
    assert err.strip().splitlines()[-1].startswith(f"{script.name}: interrupted"), err[-2000:]
    deadline = time.monotonic() + 15
    while {p.pid for p in children()} - before and time.monotonic() < deadline:
        time.sleep(0.2)
    assert {p.pid for p in children()} - before == set()
