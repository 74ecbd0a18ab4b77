"""Through ``to_gymnasium``, an env whose worker was replaced is reported consistently: no
mask without its row (CleanRL-style code copying ``final_obs`` for every masked env gets
real rows, never None turned NaN), ``env_restarted`` with its own mask, terminated; in
next-step mode its last known observation, then its reset at the next step."""
from __future__ import annotations

import functools

import numpy as np
import pytest

from tests import backends
from tests.envs import FaultyEnv, SeededEnv
from vec_envs.interop import to_gymnasium

N = 4
BACKENDS = [
    pytest.param(functools.partial(backends.subproc, in_series=1), id="subproc-series1"),
    pytest.param(functools.partial(backends.subproc, in_series=2), id="subproc-series2"),
    pytest.param(functools.partial(backends.subproc, in_series=2, shared_memory=False), id="subproc-pipes"),
    pytest.param(functools.partial(backends.ray, in_series=2), id="ray", marks=backends.ray_marks),
]
#: env 0 fails at its 3rd step, when the others end their first episode normally
FNS = [functools.partial(FaultyEnv, "step", after=2)] + [functools.partial(SeededEnv, length=3)] * (N - 1)
ZEROS = np.zeros(N, np.int64)


def _restarted_envs(venv):
    """The envs that share env 0's worker (all flagged when it is replaced)."""
    return list(range(venv.workers[0].stop))


def _same_step_failure(make, closing):
    venv = closing(make(FNS, on_error="restart"))
    envs = to_gymnasium(venv)
    envs.reset(seed=0)
    envs.step(ZEROS)
    envs.step(ZEROS)
    return _restarted_envs(venv), envs.step(ZEROS)


@pytest.mark.parametrize("make", BACKENDS)
def test_every_final_obs_mask_has_its_row(make, closing):
    restarted, (obs, rewards, terminations, truncations, infos) = _same_step_failure(make, closing)
    masked = np.flatnonzero(infos["_final_obs"]).tolist()
    assert masked == [i for i in range(N) if i not in restarted]  # the others ended normally
    assert all(infos["final_obs"][i] is not None for i in masked)
    real_next_obs = obs.copy()
    for i in masked:  # what CleanRL does with every masked env
        real_next_obs[i] = infos["final_obs"][i]
    assert np.isfinite(real_next_obs).all()


@pytest.mark.parametrize("make", BACKENDS)
def test_a_restarted_env_is_flagged_with_its_own_mask(make, closing):
    restarted, (obs, rewards, terminations, truncations, infos) = _same_step_failure(make, closing)
    assert np.flatnonzero(infos["_env_restarted"]).tolist() == restarted
    assert np.flatnonzero(infos["_final_info"]).tolist() == [i for i in range(N) if i not in restarted]
    assert all("raised in step()" in infos["error"][i] for i in restarted)


@pytest.mark.parametrize("make", BACKENDS)
def test_a_restarted_env_is_terminated_with_reward_zero(make, closing):
    restarted, (obs, rewards, terminations, truncations, infos) = _same_step_failure(make, closing)
    assert terminations[restarted].all()
    assert not truncations[restarted].any()
    assert rewards[restarted].tolist() == [0.0] * len(restarted)


@pytest.mark.parametrize("make", BACKENDS)
def test_next_step_shows_the_last_known_row_then_the_reset(make, closing):
    venv = closing(make(FNS, on_error="restart", autoreset_mode="next_step"))
    envs = to_gymnasium(venv)
    restarted = _restarted_envs(venv)
    envs.reset(seed=0)
    envs.step(ZEROS)
    before = envs.step(ZEROS)[0]
    obs, rewards, terminations, truncations, infos = envs.step(ZEROS)
    assert np.flatnonzero(infos["_env_restarted"]).tolist() == restarted
    assert terminations[restarted].all()
    np.testing.assert_array_equal(obs[0], before[0])  # the env whose step failed: its last row
    obs, rewards, terminations, truncations, infos = envs.step(ZEROS)
    assert rewards[restarted].tolist() == [0.0] * len(restarted)
    assert not (terminations[restarted] | truncations[restarted]).any()
    assert not np.array_equal(obs[0], before[0])
