"""Env factories that return one shared env instance are refused where the envs are built,
on every backend, with the ValueError SB3 raises (naming the envs and the fix); factories
that build distinct envs sharing other objects still work."""
from __future__ import annotations

import functools

import gymnasium as gym
import numpy as np
import pytest

from vec_envs import DummyVecEnv, SubprocVecEnv

BACKENDS = [
    pytest.param(DummyVecEnv, id="dummy"),
    pytest.param(functools.partial(SubprocVecEnv, in_series=3), id="subproc-one-slice"),
    pytest.param(functools.partial(SubprocVecEnv, in_series=2, shared_memory=False), id="subproc-pipes"),
]

TABLE = np.arange(4)  # shared by every env: not the env itself


class TableEnv(gym.Env):
    observation_space = gym.spaces.Box(0, 10, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, table=TABLE):
        self.table = table

    def reset(self, *, seed=None, options=None):
        return np.zeros(1, np.float32), {}

    def step(self, action):
        return np.zeros(1, np.float32), 0.0, False, False, {}


@pytest.mark.parametrize("make", BACKENDS)
def test_factories_returning_one_shared_env_are_refused(make):
    shared = TableEnv()
    with pytest.raises(ValueError, match=r"env_fns 0 and 1 returned the same env object"):
        make([lambda: shared] * 3)


@pytest.mark.parametrize("make", BACKENDS)
def test_factories_sharing_something_else_than_the_env_build(make):
    venv = make([TableEnv] * 3)
    try:
        venv.reset()
        venv.step(np.zeros(3, int))
    finally:
        venv.close()
