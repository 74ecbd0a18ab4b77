"""A worker restarted under on_error="restart" is announced (one RuntimeWarning naming
its envs, the method and the cause) and counted (``venv.restarts``); nothing is said when
nothing failed."""
from __future__ import annotations

import functools
import warnings

import gymnasium as gym
import numpy as np
import pytest

from vec_envs import SubprocVecEnv

BACKENDS = [
    pytest.param(functools.partial(SubprocVecEnv, in_series=1), id="subproc-series1"),
    pytest.param(functools.partial(SubprocVecEnv, in_series=2, shared_memory=False), id="subproc-pipes"),
]


class BoomEnv(gym.Env):
    """Raises at its third step."""

    observation_space = gym.spaces.Box(0, 10, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        self.t = 0
        return np.zeros(1, np.float32), {}

    def step(self, action):
        self.t += 1
        if self.t == 3 and action == 1:
            raise RuntimeError("boom")
        return np.zeros(1, np.float32), 0.0, False, False, {}


@pytest.mark.parametrize("make", BACKENDS)
def test_each_restart_warns_naming_the_env_and_the_cause_and_is_counted(make):
    venv = make([BoomEnv] * 2, on_error="restart")
    try:
        venv.reset()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for _ in range(3):
                _, _, _, infos = venv.step(np.array([1, 0]))
        assert infos[0].get("env_restarted")
        restarts = [w for w in caught if issubclass(w.category, RuntimeWarning) and "restart" in str(w.message)]
        assert len(restarts) == 1
        assert "env 0" in str(restarts[0].message) and "boom" in str(restarts[0].message)
        assert venv.restarts == 1
    finally:
        venv.close()


@pytest.mark.parametrize("make", BACKENDS)
def test_no_failure_no_warning_and_no_restart(make):
    venv = make([BoomEnv] * 2, on_error="restart")
    try:
        venv.reset()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for _ in range(5):
                venv.step(np.zeros(2, int))
        assert venv.restarts == 0
    finally:
        venv.close()
