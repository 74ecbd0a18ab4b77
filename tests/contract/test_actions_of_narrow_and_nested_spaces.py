"""Actions of every space gymnasium can batch reach the envs as sent, on every backend:

- a ``Discrete`` space of a narrow integer dtype (``int8``, ``int16``, ``int32``,
  ``uint8``; with or without ``start``) takes its actions for any number of envs, and
  refuses the ones out of its range naming the env, as an ``int64`` one does (SB3 casts
  its actions to the space's dtype, so its algorithms send exactly these);
- a Dict action space holding a Dict or a Tuple takes gymnasium's batch of it (a dict of
  batches whose nested parts are dicts and tuples of batches), as ``action_space.sample()``
  of ``to_gymnasium`` gives it, and a batch whose nested parts hold another count is
  refused naming the key.
"""
from __future__ import annotations

import functools

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

from tests import backends
from tests.worker_groups import imports_sb3
from vec_envs.interop import to_gymnasium

BACKENDS = [
    pytest.param(backends.dummy, id="dummy"),
    pytest.param(functools.partial(backends.subproc, in_series=1), id="subproc-lanes"),
    pytest.param(functools.partial(backends.subproc, in_series=2, shared_memory=False), id="subproc-pipes"),
]
NARROW = [np.int8, np.int16, np.int32, np.uint8]
NESTED = spaces.Dict({
    "move": spaces.Dict({"dir": spaces.Discrete(4), "speed": spaces.Box(0, 1, (2,), np.float32)}),
    "pair": spaces.Tuple((spaces.Discrete(2), spaces.MultiBinary(3))),
    "fire": spaces.Discrete(2),
})


class RecordingEnv(gym.Env):
    """Keeps every action it is given (``actions``)."""

    observation_space = spaces.Box(0, 1, (1,), np.float32)

    def __init__(self, action_space: spaces.Space) -> None:
        self.action_space = action_space
        self.actions: list = []

    def reset(self, *, seed=None, options=None):
        self.actions = []
        return np.zeros(1, np.float32), {}

    def step(self, action):
        self.actions.append(action)
        return np.zeros(1, np.float32), 0.0, False, False, {}


@pytest.mark.parametrize("make", BACKENDS)
@pytest.mark.parametrize("dtype", NARROW, ids=lambda d: np.dtype(d).name)
def test_a_discrete_space_of_a_narrow_dtype_takes_its_actions(make, dtype, closing):
    space = spaces.Discrete(5, start=2, dtype=dtype)
    venv = closing(make([functools.partial(RecordingEnv, space)] * 3))
    venv.reset()
    actions = np.array([2, 6, 4], dtype)
    venv.step(actions)
    received = [env_actions[0] for env_actions in venv.get_attr("actions")]
    assert [int(a) for a in received] == [2, 6, 4]
    assert all(space.contains(a) for a in received)


@pytest.mark.parametrize("num_envs", [1, 2, 3, 4, 8])
@pytest.mark.parametrize("dtype", NARROW, ids=lambda d: np.dtype(d).name)
def test_a_narrow_discrete_batch_of_any_length_is_checked_in_range(num_envs, dtype, closing):
    space = spaces.Discrete(3, dtype=dtype)
    venv = closing(backends.dummy([functools.partial(RecordingEnv, space)] * num_envs))
    venv.reset()
    venv.step(np.full(num_envs, 2, dtype))
    bad = np.full(num_envs, 1, dtype)
    bad[-1] = 3
    with pytest.raises(ValueError, match=rf"action 3 for env {num_envs - 1} is outside the action space"):
        venv.step(bad)


@imports_sb3
def test_sb3_trains_on_an_env_with_a_narrow_discrete_action_space(closing):
    from stable_baselines3 import PPO

    from vec_envs.interop import to_sb3

    class Narrow(RecordingEnv):
        def step(self, action):
            assert self.action_space.contains(action)
            return super().step(action)

    venv = closing(backends.dummy([functools.partial(Narrow, spaces.Discrete(3, dtype=np.int32))] * 3))
    PPO("MlpPolicy", to_sb3(venv), n_steps=16, batch_size=16, n_epochs=1, device="cpu", seed=0).learn(48)
    assert len(venv.get_attr("actions")[0]) == 16


@pytest.mark.parametrize("make", BACKENDS)
def test_a_dict_of_nested_batches_reaches_each_env_as_its_own_action(make, closing):
    envs = to_gymnasium(closing(make([functools.partial(RecordingEnv, NESTED)] * 3)))
    envs.reset(seed=0)
    envs.action_space.seed(1)
    batch = envs.action_space.sample()
    envs.step(batch)
    for i, env_actions in enumerate(envs.get_attr("actions")):
        action = env_actions[0]
        assert NESTED.contains(action)
        assert int(action["move"]["dir"]) == batch["move"]["dir"][i]
        np.testing.assert_array_equal(action["move"]["speed"], batch["move"]["speed"][i])
        np.testing.assert_array_equal(action["pair"][1], batch["pair"][1][i])


def test_a_nested_batch_of_another_count_is_refused_naming_the_key(closing):
    venv = closing(backends.dummy([functools.partial(RecordingEnv, NESTED)] * 3))
    venv.reset()
    batch = gym.vector.utils.batch_space(NESTED, 3).sample()
    batch["pair"] = (batch["pair"][0][:2], batch["pair"][1])
    with pytest.raises(ValueError, match=r"expected 3 actions per key .*'pair': None"):
        venv.step(batch)
    assert venv.get_attr("actions") == [[]] * 3
