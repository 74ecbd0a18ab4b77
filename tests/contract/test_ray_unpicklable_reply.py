"""A reply RayVecEnv cannot pickle is an EnvWorkerError naming the env and the method, as
on SubprocVecEnv, and the VecEnv recovers at reset(); env access breaks nothing."""
from __future__ import annotations

import threading

import gymnasium as gym
import numpy as np
import pytest

from tests import ray_runtime
from tests.backends import uses_ray_runtime
from vec_envs import RayVecEnv, SubprocVecEnv
from vec_envs.errors import EnvWorkerError

pytestmark = pytest.mark.skipif(not ray_runtime.ray_available(), reason="ray is not installed")


class LockInInfoEnv(gym.Env):
    """Env 1 (``bad``) puts a lock in its info at every step."""

    observation_space = gym.spaces.Box(0, 1, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, bad=False):
        self.bad = bad
        self.lock = threading.Lock()

    def reset(self, *, seed=None, options=None):
        return np.zeros(1, np.float32), {}

    def step(self, action):
        info = {"lock": self.lock} if self.bad and action == 1 else {}
        return np.zeros(1, np.float32), 0.0, False, False, info


@pytest.fixture(scope="module", autouse=True)
def ray_stopped_at_end():
    """In the tree, tests/conftest.py stops the session's runtime; alone, this module does."""
    yield
    ray_runtime.shutdown()


def make_ray(env_fns):
    ray_runtime.ray_runtime()
    return RayVecEnv(env_fns, in_series=1)


#: Ray's variant is slow (it starts actors), as every Ray variant is (tests/backends.py)
MAKERS = [pytest.param(make_ray, id="ray", marks=[pytest.mark.slow, uses_ray_runtime]),
          pytest.param(lambda env_fns: SubprocVecEnv(env_fns, in_series=1), id="subproc")]


@pytest.mark.parametrize("make", MAKERS)
def test_a_reply_that_cannot_be_pickled_names_the_env_and_reset_recovers(make):
    venv = make([LockInInfoEnv, lambda: LockInInfoEnv(bad=True)])
    try:
        venv.reset()
        with pytest.raises(EnvWorkerError, match="pickle") as info:
            venv.step(np.array([1, 1]))
        assert info.value.env_index == 1
        venv.reset()
        venv.step(np.zeros(2, int))
    finally:
        venv.close()


@pytest.mark.parametrize("make", MAKERS)
def test_get_attr_of_what_cannot_be_pickled_names_the_env_and_breaks_nothing(make):
    venv = make([LockInInfoEnv] * 2)
    try:
        venv.reset()
        with pytest.raises(EnvWorkerError, match="get_attr"):
            venv.get_attr("lock")
        venv.step(np.zeros(2, int))
    finally:
        venv.close()
