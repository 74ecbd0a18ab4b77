"""VecCheckNan: actions, observations, rewards and terminal observations, raise or warn."""
from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest

from tests.backends import BACKENDS
from tests.wrapper_envs import NanEnv
from vec_envs import DummyVecEnv
from vec_envs.wrappers import VecCheckNan

N = 4
INF = float("inf")


def nan_fns(bad_env, **kwargs):
    return [functools.partial(NanEnv, **kwargs) if i == bad_env else NanEnv for i in range(N)]


def zeros():
    return np.zeros((N, 1), np.float32)


@pytest.mark.parametrize("make", BACKENDS)
def test_observation_nan_names_the_key_and_the_env(make, closing):
    venv = closing(VecCheckNan(make(nan_fns(3, bad_step=2))))
    venv.reset()
    venv.step(zeros())
    with pytest.raises(ValueError, match=r"^observation\['pos'\] of env 3 contains NaN after step$"):
        venv.step(zeros())


def test_reward_inf_and_the_check_inf_switch(closing):
    venv = closing(VecCheckNan(DummyVecEnv(nan_fns(1, bad_step=1, field="reward", value=INF))))
    venv.reset()
    with pytest.raises(ValueError, match=r"^reward of env 1 contains inf after step$"):
        venv.step(zeros())
    quiet = closing(VecCheckNan(DummyVecEnv(nan_fns(1, bad_step=1, field="reward", value=INF)), check_inf=False))
    quiet.reset()
    assert quiet.step(zeros())[1][1] == INF


def test_actions_are_checked_before_the_step(closing):
    venv = closing(VecCheckNan(DummyVecEnv(nan_fns(0))))
    venv.reset()
    actions = zeros()
    actions[[1, 2]] = np.nan
    with pytest.raises(ValueError, match=r"^action of env 1 contains NaN before step \(envs with NaN: \[1, 2\]\)$"):
        venv.step(actions)
    assert venv.get_attr("t") == [0] * N  # nothing was stepped
    venv.step(zeros())  # and nothing is left pending


def test_terminal_observation_and_reset_are_checked(closing):
    venv = closing(VecCheckNan(DummyVecEnv(nan_fns(2, bad_step=1, field="terminal", length=2))))
    venv.reset()
    venv.step(zeros())
    with pytest.raises(ValueError, match=r"^terminal_observation\['pos'\] of env 2 contains NaN after step$"):
        venv.step(zeros())
    at_reset = closing(VecCheckNan(DummyVecEnv(nan_fns(0, bad_step=0, value=-INF))))
    with pytest.raises(ValueError, match=r"^observation\['pos'\] of env 0 contains inf after reset$"):
        at_reset.reset()


def test_warn_once_or_every_time(closing):
    venv = closing(VecCheckNan(DummyVecEnv(nan_fns(3, bad_step=1)), raise_exception=False))
    venv.reset()
    with pytest.warns(UserWarning, match=r"observation\['pos'\] of env 3 contains NaN after step"):
        venv.step(zeros())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        venv.step(zeros())  # warned once already: silent
    noisy = closing(VecCheckNan(DummyVecEnv(nan_fns(3, bad_step=1)), raise_exception=False, warn_once=False))
    noisy.reset()
    for _ in range(2):
        with pytest.warns(UserWarning, match="of env 3 contains NaN"):
            noisy.step(zeros())
