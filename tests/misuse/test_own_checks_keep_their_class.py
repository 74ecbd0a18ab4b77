"""An error our own checks raise inside a worker reaches the user as the class it has in
process, on every backend: envs (or a multi-agent env's agents) whose spaces differ are a
ValueError with the same message everywhere; an env's own exception inside a worker is
still an EnvWorkerError."""
from __future__ import annotations

import functools

import gymnasium as gym
import numpy as np
import pytest

from vec_envs import DummyVecEnv, SubprocVecEnv
from vec_envs.errors import EnvWorkerError

BACKENDS = [
    pytest.param(DummyVecEnv, id="dummy"),
    pytest.param(functools.partial(SubprocVecEnv, in_series=1), id="subproc-series1"),
    pytest.param(functools.partial(SubprocVecEnv, in_series=2, shared_memory=False), id="subproc-pipes"),
]


class SizedEnv(gym.Env):
    action_space = gym.spaces.Discrete(2)

    def __init__(self, size):
        self.observation_space = gym.spaces.Box(0, 1, (size,), np.float32)

    def reset(self, *, seed=None, options=None):
        return np.zeros(self.observation_space.shape, np.float32), {}

    def step(self, action):
        raise RuntimeError("the env's own failure")


def _error(make, env_fns):
    with pytest.raises(Exception) as info:
        make(env_fns).close()
    return info.value


@pytest.mark.parametrize("make", BACKENDS)
def test_envs_with_different_spaces_raise_what_dummy_raises(make):
    env_fns = [functools.partial(SizedEnv, 2), functools.partial(SizedEnv, 3)]
    expected = _error(DummyVecEnv, env_fns)
    got = _error(make, env_fns)
    assert type(got) is type(expected) is ValueError
    assert "env 1 has observation_space" in str(got)


def test_agents_with_different_spaces_raise_what_dummy_raises():
    from tests.multiagent.parallel_envs import MixedSpaces  # agents of different observation spaces
    from vec_envs.multiagent import make_multiagent_vec_env

    with pytest.raises(Exception) as dummy:
        make_multiagent_vec_env(MixedSpaces, n_envs=2, vec_env_cls="dummy")
    with pytest.raises(Exception) as subproc:
        make_multiagent_vec_env(MixedSpaces, n_envs=2, vec_env_cls="subproc")
    assert type(subproc.value) is type(dummy.value) is ValueError


def test_an_envs_own_error_in_a_worker_is_still_env_worker_error():
    venv = SubprocVecEnv([functools.partial(SizedEnv, 2)] * 2, in_series=1)
    try:
        venv.reset()
        with pytest.raises(EnvWorkerError, match="the env's own failure"):
            venv.step(np.zeros(2, int))
    finally:
        venv.close()
