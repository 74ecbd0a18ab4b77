"""Our errors of the calls out of order, of a closed VecEnv and of a timeout are also
gymnasium's (and multiprocessing's) classes of those names, on every backend, so code
written against gymnasium's vector envs catches them."""
from __future__ import annotations

import functools
import multiprocessing
import time

import gymnasium as gym
import numpy as np
import pytest

from tests import backends

BACKENDS = [
    pytest.param(backends.dummy, id="dummy"),
    pytest.param(functools.partial(backends.subproc, in_series=1), id="subproc"),
]


class SlowEnv(gym.Env):
    observation_space = gym.spaces.Box(0, 1, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        return np.zeros(1, np.float32), {}

    def step(self, action):
        time.sleep(0.5 * int(action))
        return np.zeros(1, np.float32), 0.0, False, False, {}


@pytest.mark.parametrize("make", BACKENDS)
def test_calls_out_of_order_and_after_close_raise_gymnasiums_errors(make):
    venv = make([SlowEnv] * 2)
    venv.reset()
    with pytest.raises(gym.error.NoAsyncCallError):
        venv.step_wait()
    venv.step_async(np.zeros(2, int))
    with pytest.raises(gym.error.AlreadyPendingCallError):
        venv.step_async(np.zeros(2, int))
    venv.step_wait()
    venv.close()
    with pytest.raises(gym.error.ClosedEnvironmentError):
        venv.reset()


def test_a_timeout_is_multiprocessings_timeout_error(closing):
    venv = closing(backends.subproc([SlowEnv] * 2, in_series=1))
    venv.reset()
    venv.step_async(np.ones(2, int))
    with pytest.raises(multiprocessing.TimeoutError):
        venv.step_wait(timeout=0.05)
    venv.step_wait()
