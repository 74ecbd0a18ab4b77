"""A bad seed given to ``reset_envs`` is refused naming ``reset_envs()`` (not ``seed()``),
on every backend, and the VecEnv stays usable."""
from __future__ import annotations

import functools

import gymnasium as gym
import pytest

from tests import backends

BACKENDS = [
    pytest.param(backends.dummy, id="dummy"),
    pytest.param(functools.partial(backends.subproc, in_series=1), id="subproc"),
]


@pytest.mark.parametrize("make", BACKENDS)
@pytest.mark.parametrize(("seed", "error", "message"), [
    (-1, ValueError, r"reset_envs\(\): seed must be an int >= 0 or None, received -1"),
    (1.5, TypeError, r"reset_envs\(\): seed must be an int >= 0 or None, received 1\.5 \(float\)"),
    ([1, 2], ValueError, r"reset_envs\(\): expected 1 seeds \(one per env named\), received 2"),
    ([-4], ValueError, r"reset_envs\(\): seed\[0\] must be an int >= 0 or None, received -4"),
])
def test_a_bad_seed_names_reset_envs(make, seed, error, message, closing):
    venv = closing(make([lambda: gym.make("CartPole-v1")] * 3, autoreset_mode="disabled"))
    venv.reset()
    with pytest.raises(error, match=message):
        venv.reset_envs([0], seed=seed)
    assert venv.reset_envs([0], seed=[5]).shape == (1, 4)
