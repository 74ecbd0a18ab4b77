"""Infos of one schema every step (the same keys, each a number of the same type, NumPy's
scalars included) arrive exactly as the env returned them, types included, however they
travel; so do the infos that leave the schema now and then (another key, another type, an
int beyond int64, an empty info), the reset infos and the terminal observations that go
with episode ends.

Each env's infos, in the order it made them, are compared with DummyVecEnv's, under
lock-step and under recv/send, so the scheduling of the steps cannot matter.
"""
from __future__ import annotations

import functools

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

from vec_envs import DummyVecEnv, SubprocVecEnv

N, STEPS = 6, 40


class SchemaInfoEnv(gym.Env):
    """Steps return an info of one schema, but every few steps one that leaves it."""

    def __init__(self, index: int = 0, length: int = 9):
        self.observation_space = spaces.Box(-1.0, 1.0, (2,), np.float32)
        self.action_space = spaces.Discrete(2)
        self.index, self.length, self.t, self.total, self.resets = index, length, 0, 0, 0

    def reset(self, *, seed=None, options=None):
        self.t, self.resets = 0, self.resets + 1
        return np.full(2, self.index / 10, np.float32), ({"resets": self.resets} if self.resets % 2 else {})

    def step(self, action):
        self.t += 1
        self.total += 1
        n = self.total + self.index
        info = {"lives": n % 4, "score": n / 3, "flag": bool(n % 2), "x": np.float32(n / 7), "k": np.int32(-n),
                "ok": np.bool_(n % 3 == 0)}
        if n % 5 == 0:
            info["bonus"] = 1  # another key
        if n % 7 == 0:
            info["lives"] = 2 ** 70  # beyond int64
        if n % 11 == 0:
            info = {}
        if n % 13 == 0:
            info["score"] = n  # an int where a float was
        obs = np.full(2, (self.t % 10) / 10, np.float32)
        return obs, 1.0, self.t >= self.length, False, info


def typed(info):
    """An info with each value's type beside it (arrays as lists)."""
    return {key: (type(value).__name__, value.tolist() if isinstance(value, np.ndarray) else value)
            for key, value in info.items()}


def per_env_infos(venv, recv_send: bool):
    """Each env's STEPS infos and reset infos after each, in its own order."""
    seen: list[list] = [[] for _ in range(N)]
    actions = np.zeros(N, np.int64)
    if not recv_send:
        venv.reset()
        for _ in range(STEPS):
            infos = venv.step(actions)[3]
            for i in range(N):
                seen[i].append((typed(infos[i]), typed(venv.reset_infos[i])))
        return seen
    venv.async_reset()
    while min(len(s) for s in seen) < STEPS + 1:
        _, _, _, infos, env_ids = venv.recv()
        for info, i in zip(infos, env_ids.tolist()):
            seen[i].append((typed(info), typed(venv.reset_infos[i])))
        venv.send(actions[:len(env_ids)], env_ids)
    return [s[1:STEPS + 1] for s in seen]  # the first entry answers the reset


VARIANTS = [
    pytest.param(functools.partial(SubprocVecEnv, in_series=2), id="series2"),
    pytest.param(functools.partial(SubprocVecEnv, in_series=3, step_in_parent=True), id="parent-slice"),
    pytest.param(SubprocVecEnv, id="default"),
    pytest.param(functools.partial(SubprocVecEnv, in_series=2, shared_memory=False), id="pipes"),
]


@pytest.mark.parametrize("make", VARIANTS)
@pytest.mark.parametrize("recv_send", [False, True], ids=["lock-step", "recv-send"])
def test_infos_of_a_schema_arrive_as_returned(make, recv_send, closing):
    fns = [functools.partial(SchemaInfoEnv, i) for i in range(N)]
    expected = per_env_infos(closing(DummyVecEnv(fns)), recv_send=False)
    venv = closing(make(fns, **({"batch_size": 2} if recv_send else {})))
    got = per_env_infos(venv, recv_send)
    lanes = getattr(venv.scheduler, "lanes", None)
    assert lanes is None or lanes.schemas, "the infos of the schema did not travel in the info columns"
    for i in range(N):
        for t, (want, have) in enumerate(zip(expected[i], got[i])):
            want_info, have_info = dict(want[0]), dict(have[0])
            want_obs = want_info.pop("terminal_observation", None)
            have_obs = have_info.pop("terminal_observation", None)
            assert have_info == want_info, f"env {i}, step {t + 1}"
            assert have_obs == want_obs, f"env {i}, step {t + 1}"
            assert have[1] == want[1], f"env {i}, step {t + 1}: reset info"
