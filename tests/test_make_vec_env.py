from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from vec_envs import DummyVecEnv, make_vec_env


def test_from_id_with_seed_and_wrapper():
    venv = make_vec_env("CartPole-v1", n_envs=3, seed=4, wrapper_class=gym.wrappers.RecordEpisodeStatistics)
    with venv:
        obs = venv.reset()
        expected = np.stack([gym.make("CartPole-v1").reset(seed=4 + i)[0] for i in range(3)])
        np.testing.assert_array_equal(obs, expected)
        assert isinstance(venv, DummyVecEnv)
        assert venv.env_is_wrapped(gym.wrappers.RecordEpisodeStatistics) == [True] * 3


def test_from_callable_with_env_kwargs():
    from tests.envs import SeededEnv

    with make_vec_env(SeededEnv, n_envs=2, env_kwargs={"length": 9}) as venv:
        assert venv.get_attr("length") == [9, 9]


def test_bad_n_envs_is_a_clear_error():
    with pytest.raises(ValueError, match="n_envs must be a positive int, received 0"):
        make_vec_env("CartPole-v1", n_envs=0)


def test_factory_that_returns_no_env_is_a_clear_error():
    with pytest.raises(TypeError, match="not an env: it lacks reset, step"):
        DummyVecEnv([lambda: 42])


def test_env_exception_in_dummy_keeps_its_type_and_names_the_env():
    from tests.envs import FaultyEnv

    venv = DummyVecEnv([lambda: FaultyEnv("reset")])
    with pytest.raises(RuntimeError, match="fails in reset") as info:
        venv.reset()
    assert "env 0" in "".join(info.value.__notes__)
