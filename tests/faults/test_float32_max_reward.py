"""float32's largest value is a reward: 3.4028235e38 (as ``str()`` prints it; as a Python
float a hair above float32's largest, to which it rounds) is stored as float32's largest,
on every backend, as an observation of that value is; 1e39 is still refused, naming the
env; inf and nan are kept."""
from __future__ import annotations

import functools

import gymnasium as gym
import numpy as np
import pytest

from vec_envs import DummyVecEnv, SubprocVecEnv

BACKENDS = [
    pytest.param(DummyVecEnv, id="dummy"),
    pytest.param(functools.partial(SubprocVecEnv, in_series=1), id="subproc"),
    pytest.param(functools.partial(SubprocVecEnv, in_series=1, shared_memory=False), id="subproc-pipes"),
]


class RewardEnv(gym.Env):
    observation_space = gym.spaces.Box(-np.inf, np.inf, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, reward):
        self.reward = reward

    def reset(self, *, seed=None, options=None):
        return np.zeros(1, np.float32), {}

    def step(self, action):
        return np.array([self.reward], np.float32), self.reward, False, False, {}


@pytest.mark.parametrize("make", BACKENDS)
@pytest.mark.parametrize("reward", [3.4028235e38, float(np.finfo(np.float32).max)], ids=["str-printed", "exact"])
def test_float32s_largest_value_is_a_reward(make, reward):
    venv = make([functools.partial(RewardEnv, reward)])
    try:
        venv.reset()
        obs, rewards, _, _ = venv.step(np.zeros(1, int))
        assert rewards[0] == np.finfo(np.float32).max
        assert obs[0, 0] == np.finfo(np.float32).max
    finally:
        venv.close()


@pytest.mark.parametrize("make", BACKENDS)
def test_a_reward_beyond_float32_is_still_refused(make):
    venv = make([functools.partial(RewardEnv, 1e39)])
    try:
        venv.reset()
        with pytest.raises(Exception, match="float32"):
            venv.step(np.zeros(1, int))
    finally:
        venv.close()
