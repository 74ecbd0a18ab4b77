"""Under autoreset_mode="disabled", recv/send never leave the VecEnv with no call that
leads forward: envs that ended and wait for their reset (returned by recv) are reset by
``reset_envs`` while other envs are in flight, and can then be sent to."""
from __future__ import annotations

import functools

import gymnasium as gym
import numpy as np
import pytest

from vec_envs import DummyVecEnv, SubprocVecEnv

BACKENDS = [
    pytest.param(DummyVecEnv, id="dummy"),
    pytest.param(functools.partial(SubprocVecEnv, in_series=1), id="subproc"),
]


class EndsEnv(gym.Env):
    observation_space = gym.spaces.Box(0, 10, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, ends_at_first_step):
        self.ends = ends_at_first_step

    def reset(self, *, seed=None, options=None):
        return np.zeros(1, np.float32), {}

    def step(self, action):
        return np.ones(1, np.float32), 1.0, self.ends, False, {}


def _stuck(make):
    """Envs 0 and 2 end at their first step, env 1 never: send every env returned but the
    ended ones (an agent waits to reset those) until env 1 is in flight and envs 0 and 2
    ended and were returned: too few in flight for a batch, and they are not reset."""
    venv = make([functools.partial(EndsEnv, True), functools.partial(EndsEnv, False),
                 functools.partial(EndsEnv, True)], batch_size=2, autoreset_mode="disabled")
    venv.async_reset()
    ended: set[int] = set()
    while ended != {0, 2}:
        _, _, dones, _, env_ids = venv.recv()
        ended |= set(env_ids[dones].tolist())
        go = env_ids[~dones]
        venv.send(np.zeros(len(go), int), go)
    assert venv._states.in_flight().tolist() == [1]
    return venv


@pytest.mark.parametrize("make", BACKENDS)
def test_envs_that_ended_can_be_reset_while_another_is_in_flight(make):
    venv = _stuck(make)
    try:
        rows = venv.reset_envs([0, 2])
        assert rows.shape == (2, 1)
        venv.send(np.zeros(2, int), np.array([0, 2]))
        obs, rewards, dones, infos, env_ids = venv.recv()
        assert len(env_ids) == 2
    finally:
        venv.close()
