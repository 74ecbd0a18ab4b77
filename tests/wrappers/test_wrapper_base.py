"""VecEnvWrapper plumbing: timeouts and async resets reach through the wrappers correctly."""
from __future__ import annotations

import functools

import numpy as np
import pytest

from tests.envs import FaultyEnv, SeededEnv
from vec_envs import SubprocVecEnv, VecEnvObservationWrapper
from vec_envs.errors import EnvTimeoutError
from vec_envs.wrappers import VecFrameStack, VecMonitor, VecNormalize


class Doubled(VecEnvObservationWrapper):
    def process(self, obs):
        return obs * 2


def test_step_wait_timeout_reaches_the_backend_through_the_stack():
    fns = [SeededEnv, functools.partial(FaultyEnv, "hang", after=1)]
    venv = VecNormalize(VecFrameStack(VecMonitor(SubprocVecEnv(fns, in_series=1)), 2))
    venv.reset()
    venv.step_async(np.zeros(2, np.int64))
    venv.step_wait(timeout=5)
    venv.step_async(np.zeros(2, np.int64))
    with pytest.raises(EnvTimeoutError, match=r"envs \[1\]"):
        venv.step_wait(timeout=0.5)
    venv.close()


def test_async_reset_is_processed_by_observation_wrappers():
    with Doubled(SubprocVecEnv([SeededEnv] * 2, in_series=1)) as venv:
        venv.seed(3)
        venv.reset_async()
        obs = venv.reset_wait(timeout=10)
        expected = np.stack([SeededEnv().reset(seed=3 + i)[0] for i in range(2)]) * 2
        np.testing.assert_array_equal(obs, expected)


def test_async_reset_through_a_wrapper_with_its_own_reset_is_a_clear_error():
    with VecFrameStack(SubprocVecEnv([SeededEnv] * 2, in_series=1), 2) as venv:
        with pytest.raises(NotImplementedError, match=r"VecFrameStack.reset_async\(\): this wrapper does its own"):
            venv.reset_async()
        assert venv.reset().shape == (2, 6)
