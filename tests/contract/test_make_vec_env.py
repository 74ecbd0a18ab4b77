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
    with pytest.raises(ValueError, match="n_envs must be an int >= 1, received 0"):
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


# ------------------------------------------------------------------ SB3's arguments
def test_backend_by_name_start_index_seeds_and_monitor_files(tmp_path):
    from vec_envs import SubprocVecEnv

    with make_vec_env("CartPole-v1", n_envs=2, seed=10, start_index=3, vec_env_cls="subproc",
                      vec_env_kwargs={"context": "fork"}, monitor_dir=str(tmp_path / "mon")) as venv:
        assert isinstance(venv, SubprocVecEnv)
        obs = venv.reset()
        expected = np.stack([gym.make("CartPole-v1").reset(seed=10 + 3 + i)[0] for i in range(2)])
        np.testing.assert_array_equal(obs, expected)  # env i: seed + start_index + i
        for _ in range(60):
            venv.step(np.zeros(2, int))
    assert sorted(p.name for p in (tmp_path / "mon").iterdir()) == ["3.monitor.csv", "4.monitor.csv"]
    rows = (tmp_path / "mon" / "3.monitor.csv").read_text().splitlines()
    assert rows[0].startswith("#{")
    assert rows[1] == "r,l,t"
    assert len(rows) > 2  # SB3's Monitor format


def test_wrapper_kwargs_reach_the_wrapper():
    with make_vec_env("CartPole-v1", n_envs=2, wrapper_class=gym.wrappers.TimeLimit,
                      wrapper_kwargs={"max_episode_steps": 3}) as venv:
        venv.reset()
        dones = [venv.step(np.zeros(2, int))[2] for _ in range(3)]
    assert [d.all() for d in dones] == [False, False, True]


def test_unknown_backend_name_lists_the_valid_ones():
    with pytest.raises(ValueError, match=r"vec_env_cls='threads' is not a backend name; expected one of "
                                         r"\['dummy', 'ray', 'subproc'\]"):
        make_vec_env("CartPole-v1", n_envs=1, vec_env_cls="threads")
    with pytest.raises(ValueError, match="start_index must be an int >= 0, received -1"):
        make_vec_env("CartPole-v1", n_envs=1, start_index=-1)
