"""An env may itself be a SubprocVecEnv (a vectorised simulator) inside a SubprocVecEnv's
worker: it steps as with DummyVecEnv inside, and every process of both levels leaves with
the parent, closed or killed. A daemonic process that is not a worker (a
``multiprocessing.Pool`` worker) cannot have children: there SubprocVecEnv says so and
names the fix (DummyVecEnv) instead of multiprocessing's bare AssertionError."""
from __future__ import annotations

import functools
import multiprocessing as mp
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.envs import BatchEnv
from tests.helpers import assert_same, run_trace, still_running
from vec_envs import SubprocVecEnv

REPO = Path(__file__).resolve().parents[2]
STEPS = 12


@pytest.mark.parametrize("inner_context", [None, "fork", "spawn"], ids=["forkserver", "fork", "spawn"])
def test_an_env_that_is_a_subproc_vec_env_steps_as_with_dummy_vec_env_inside(inner_context):
    actions = np.random.default_rng(0).integers(0, 3, (STEPS, 2, 2))
    nested = run_trace(SubprocVecEnv([functools.partial(BatchEnv, "subproc", context=inner_context)] * 2,
                                     in_series=1), actions)
    reference = run_trace(SubprocVecEnv([functools.partial(BatchEnv, "dummy")] * 2, in_series=1), actions)
    assert_same(nested, reference)


NESTED_SCRIPT = """
import sys, time, psutil
from tests.envs import BatchEnv
from vec_envs import SubprocVecEnv

if __name__ == "__main__":
    venv = SubprocVecEnv([BatchEnv] * 2, in_series=1)
    venv.reset()
    print(" ".join(str(p.pid) for p in psutil.Process().children(recursive=True)), flush=True)
    if sys.argv[1] == "wait":
        time.sleep(60)
"""


def _start(how: str) -> tuple[subprocess.Popen, list[int]]:
    """A parent process that builds nested SubprocVecEnvs; it and the pids below it."""
    parent = subprocess.Popen([sys.executable, "-c", NESTED_SCRIPT, how], cwd=REPO, stdout=subprocess.PIPE,
                              text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    line = parent.stdout.readline() if parent.stdout else ""
    return parent, [int(pid) for pid in line.split()]


@pytest.mark.parametrize("how", ["exit without close", "killed"])
def test_every_process_of_both_levels_leaves_with_the_parent(how):
    parent, pids = _start("exit" if how == "exit without close" else "wait")
    assert len(pids) >= 6, pids  # 2 outer workers, 2 inner workers each (and any fork servers)
    if how == "killed":
        os.kill(parent.pid, signal.SIGKILL)
    assert parent.wait(30) in (0, -signal.SIGKILL)
    assert still_running(pids, 5.0) == []


def _build_in_daemon(queue) -> None:
    try:
        SubprocVecEnv([functools.partial(BatchEnv, "dummy")], context="fork").close()
        queue.put("built")
    except Exception as exc:  # what a user would see there
        queue.put(f"{type(exc).__name__}: {exc}")


def test_a_daemonic_process_that_is_no_worker_is_told_to_use_dummy_vec_env():
    ctx = mp.get_context("fork")
    queue = ctx.Queue()
    process = ctx.Process(target=_build_in_daemon, args=(queue,), daemon=True)
    process.start()
    said = queue.get(timeout=60)
    process.join(30)
    assert said.startswith("RuntimeError: SubprocVecEnv cannot start worker processes from ForkProcess-")
    assert "a daemonic process" in said and "Use DummyVecEnv there" in said


def test_the_worker_of_a_nested_env_runs_in_a_process_of_its_own():
    with SubprocVecEnv([BatchEnv] * 2, in_series=1) as venv:
        venv.reset()
        outer = [pids[0] for pids in venv.env_method("pids")]
        inner = [pids[1:] for pids in venv.env_method("pids")]
    assert len(set(outer)) == 2 and os.getpid() not in outer
    assert all(len(pids) >= 2 for pids in inner)


def test_the_inner_workers_leave_with_an_outer_worker_that_is_killed():
    with SubprocVecEnv([BatchEnv] * 2, in_series=1) as venv:
        venv.reset()
        worker, *inner = venv.env_method("pids", indices=0)[0]
        os.kill(worker, signal.SIGKILL)
        assert still_running(inner, 5.0) == []
