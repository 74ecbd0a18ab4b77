"""in_series="auto" sees envs that wait: where one env's step is mostly waiting, the constructor's
defaults start more workers than CPUs (up to a bound) and leave the parent to drive; envs that
compute keep one worker per CPU and a slice stepped by the parent. The choice is visible
(``venv.worker_plan``), the probe's throw-away env is the only extra env built, it leaves no
process behind, and the rows are the same as DummyVecEnv's.

The workers import its envs by this module's name.
A plan that ignored waiting would pack 16 waiting envs into 2 workers of 8.
"""
from __future__ import annotations

import functools
import os
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

from tests.helpers import children
from vec_envs import DummyVecEnv, SubprocVecEnv
from vec_envs.worker_plan import WorkerPlan

CPUS = "2"


class SleepyEnv(gym.Env):
    """Sleeps 1 ms per step (a simulator over a socket); writes a line to ``log`` each time it is built."""

    observation_space = gym.spaces.Box(-np.inf, np.inf, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, log: str | None = None, sleep_s: float = 1e-3) -> None:
        self.sleep_s, self.t = sleep_s, 0
        if log is not None:
            with open(log, "a", encoding="ascii") as f:
                f.write(f"{os.getpid()}\n")

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self.np_random.uniform(-1, 1, 2).astype(np.float32), {}

    def step(self, action):
        time.sleep(self.sleep_s)
        self.t += 1
        obs = self.np_random.uniform(-1, 1, 2).astype(np.float32)
        return obs, float(action), False, self.t >= 20, {}


@pytest.fixture
def two_cpus(monkeypatch):
    monkeypatch.setenv("VEC_ENVS_CPUS", CPUS)


def test_waiting_envs_get_a_worker_each_and_the_parent_drives(two_cpus, closing):
    venv = closing(SubprocVecEnv([SleepyEnv] * 16))
    assert isinstance(venv.worker_plan, WorkerPlan)
    assert venv.worker_plan.waiting
    assert (venv.in_series, venv.step_in_parent) == (1, False)
    assert len(venv.workers) == 16


def test_waiting_envs_under_recv_send_get_the_same_layout(two_cpus, closing):
    venv = closing(SubprocVecEnv([SleepyEnv] * 16, batch_size=4))
    assert (venv.in_series, venv.step_in_parent, venv.worker_plan.waiting) == (1, False, True)


def test_computing_envs_keep_one_worker_per_cpu_and_the_parents_slice(two_cpus, closing):
    venv = closing(SubprocVecEnv([lambda: gym.make("CartPole-v1")] * 8))
    assert venv.worker_plan.waiting is False
    assert (venv.in_series, venv.step_in_parent) == (4, True)


def test_a_timeout_still_keeps_every_env_in_a_worker(two_cpus, closing):
    venv = closing(SubprocVecEnv([lambda: gym.make("CartPole-v1")] * 8, timeout=30))
    assert (venv.in_series, venv.step_in_parent) == (4, False)


def test_an_explicit_in_series_builds_no_probe_env_and_has_no_plan(two_cpus, closing, tmp_path):
    log = tmp_path / "built"
    venv = closing(SubprocVecEnv([functools.partial(SleepyEnv, str(log))] * 4, in_series=2))
    assert venv.worker_plan is None
    assert venv.in_series == 2
    assert len(log.read_text().split()) == 4


def test_auto_builds_one_throw_away_env_outside_the_parent(two_cpus, closing, tmp_path):
    log = tmp_path / "built"
    venv = closing(SubprocVecEnv([functools.partial(SleepyEnv, str(log))] * 4))
    builders = log.read_text().split()
    assert len(builders) == 4 + 1  # the envs, and the probe's
    assert str(os.getpid()) not in builders  # neither the probe nor a waiting plan builds an env in the parent
    assert venv.worker_plan.waiting


def test_the_probe_leaves_no_process_and_the_rows_are_dummy_vec_envs(two_cpus):
    before = {p.pid for p in children()}
    fns = [SleepyEnv] * 6
    actions = np.random.default_rng(0).integers(0, 2, (30, 6))
    traces = []
    for venv in (SubprocVecEnv(fns), DummyVecEnv(fns)):
        with venv:
            venv.seed(3)
            trace = [venv.reset()]
            trace += [venv.step(a)[:3] for a in actions]
        traces.append(trace)
    for got, want in zip(*traces):
        for a, b in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
            np.testing.assert_array_equal(a, b)
    deadline = time.monotonic() + 10
    while {p.pid for p in children()} - before and time.monotonic() < deadline:
        time.sleep(0.1)
    assert {p.pid for p in children()} - before == set()


def test_a_factory_the_probe_cannot_run_keeps_todays_layout_and_the_workers_report_the_error(two_cpus, tmp_path):
    from vec_envs.errors import EnvWorkerError

    flag = Path(tmp_path / "fail")
    flag.write_text("x")
    with pytest.raises(EnvWorkerError, match="the env cannot be built"):
        SubprocVecEnv([functools.partial(_fails_to_build, str(flag))] * 4)


def _fails_to_build(flag: str) -> gym.Env:
    if os.path.exists(flag):
        raise RuntimeError("the env cannot be built")
    return SleepyEnv()
