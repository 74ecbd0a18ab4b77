"""The infos a caller receives are its own: an env that updates one info dict in place
cannot change what the caller kept, and what the caller adds never reaches the env.

Copies are shallow: values inside an info (nested dicts, arrays) stay the env's.
"""
from __future__ import annotations

import functools

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

from tests import backends

N = 4


class ReusedInfoEnv(gym.Env):
    """Returns the same info dict from every step and reset, updated in place."""

    def __init__(self, length: int = 1000):
        self.observation_space = spaces.Box(-1.0, 1.0, (2,), np.float32)
        self.action_space = spaces.Discrete(2)
        self.length, self.t, self.info = length, 0, {}

    def reset(self, *, seed=None, options=None):
        self.t = 0
        self.info["t"] = 0
        return np.zeros(2, np.float32), self.info

    def step(self, action):
        self.t += 1
        self.info["t"] = self.t
        return np.zeros(2, np.float32), 1.0, self.t >= self.length, False, self.info


BACKENDS = [
    pytest.param(backends.dummy, id="dummy"),
    pytest.param(functools.partial(backends.subproc, in_series=1), id="subproc-series1"),
    pytest.param(functools.partial(backends.subproc, in_series="auto", step_in_parent=True),
                 id="subproc-auto-step-in-parent"),
]


@pytest.mark.parametrize("make", BACKENDS)
def test_kept_step_infos_do_not_change(make, closing):
    venv = closing(make([ReusedInfoEnv] * N))
    venv.reset()
    kept = [venv.step(np.zeros(N, np.int64))[3] for _ in range(3)]
    assert [[info["t"] for info in infos] for infos in kept] == [[1] * N, [2] * N, [3] * N]


@pytest.mark.parametrize("make", BACKENDS)
def test_what_the_caller_adds_never_reaches_the_env(make, closing):
    venv = closing(make([ReusedInfoEnv] * N))
    venv.reset()
    for info in venv.step(np.zeros(N, np.int64))[3]:
        info["mine"] = True
    assert not any("mine" in info for info in venv.step(np.zeros(N, np.int64))[3])
    assert not any("mine" in info for info in venv.get_attr("info"))


@pytest.mark.parametrize("make", BACKENDS)
def test_kept_infos_of_ended_episodes_and_resets_do_not_change(make, closing):
    venv = closing(make([functools.partial(ReusedInfoEnv, length=1)] * N))
    venv.reset()
    kept_reset = [dict(info) for info in venv.reset_infos]
    first = venv.step(np.zeros(N, np.int64))[3]  # every episode ends: terminal info, then reset
    assert [info["t"] for info in first] == [1] * N
    assert "terminal_observation" in first[0]
    venv.step(np.zeros(N, np.int64))
    assert [info["t"] for info in first] == [1] * N
    assert [dict(info) for info in venv.reset_infos] == kept_reset


def test_recv_infos_are_the_callers(closing):
    venv = closing(backends.dummy([ReusedInfoEnv] * N, batch_size=2))
    venv.async_reset()
    kept = []
    for _ in range(4):
        obs, rewards, dones, infos, env_ids = venv.recv()
        kept.append(([info["t"] for info in infos], infos))
        venv.send(np.zeros(2, np.int64), env_ids)
    assert [[info["t"] for info in infos] for _, infos in kept] == [ts for ts, _ in kept]
