"""to_gymnasium(autoreset_mode=NEXT_STEP) against gymnasium's own SyncVectorEnv and vector wrappers."""
from __future__ import annotations

import functools

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, SyncVectorEnv

from tests.backends import dummy, needs_ray, ray, subproc
from tests.envs import SeededEnv
from tests.helpers import assert_same
from vec_envs import DummyVecEnv
from vec_envs.interop import to_gymnasium

#: episodes ending by termination (lengths 4, 5) and by truncation (length 3), with step and reset infos
ENV_FNS = [functools.partial(SeededEnv, length=4), functools.partial(SeededEnv, length=3, truncate=True),
           functools.partial(SeededEnv, length=5)]
ACTIONS = np.random.default_rng(0).integers(0, 3, size=(25, 3))

BACKENDS = [
    pytest.param(dummy, id="dummy"),
    pytest.param(functools.partial(subproc, in_series=2, context="fork"), id="subproc-series2"),
    pytest.param(functools.partial(subproc, in_series=1, context="fork"), id="subproc-series1"),
    pytest.param(functools.partial(ray, in_series=2), id="ray-series2", marks=needs_ray),
]


def cartpole():
    return gym.make("CartPole-v1", max_episode_steps=20)


def next_step(venv):
    return to_gymnasium(venv, autoreset_mode=AutoresetMode.NEXT_STEP)


def assert_same_step(got, want):
    obs, rewards, terminations, truncations, infos = got
    ref_obs, ref_rewards, ref_terminations, ref_truncations, ref_infos = want
    assert_same(obs, ref_obs)
    np.testing.assert_array_equal(rewards, ref_rewards)
    # the VecEnv contract keeps truncated-and-terminated as terminated (TimeLimit.truncated is
    # ``truncated and not terminated``): a CartPole pole falling on its time limit's last step
    assert_same((terminations, truncations), (ref_terminations, ref_truncations & ~ref_terminations))
    assert_same(infos, ref_infos)


@pytest.mark.parametrize("make", BACKENDS)
def test_next_step_mode_equals_gymnasiums_sync_vector_env_step_for_step(make, closing):
    ours = closing(next_step(make(ENV_FNS, batch_size=1)))
    ref = closing(SyncVectorEnv(ENV_FNS, autoreset_mode=AutoresetMode.NEXT_STEP))
    assert ours.metadata["autoreset_mode"] is AutoresetMode.NEXT_STEP
    assert (ours.observation_space, ours.action_space) == (ref.observation_space, ref.action_space)
    assert_same(ours.reset(seed=7), ref.reset(seed=7))
    reset_rows = 0
    for actions in ACTIONS:
        got, want = ours.step(actions), ref.step(actions)
        assert_same_step(got, want)
        reset_rows += int(np.sum("reset_count" in got[4] and got[4]["_reset_count"]))
    assert reset_rows >= 10  # the comparison went through many auto-resets of every env
    assert_same(ours.reset(seed=3), ref.reset(seed=3))  # a second reset starts over alike
    for actions in ACTIONS[:8]:
        assert_same_step(ours.step(actions), ref.step(actions))


def test_next_step_mode_on_cartpole_equals_gymnasium_across_time_limits(closing):
    ours = closing(next_step(subproc([cartpole] * 4, batch_size=1, in_series=2, context="fork")))
    ref = closing(SyncVectorEnv([cartpole] * 4, autoreset_mode=AutoresetMode.NEXT_STEP))
    assert_same(ours.reset(seed=11), ref.reset(seed=11))
    ended = 0
    for actions in np.random.default_rng(1).integers(0, 2, size=(80, 4)):
        got, want = ours.step(actions), ref.step(actions)
        assert_same_step(got, want)
        ended += int(np.sum(got[2] | got[3]))
    assert ended >= 8


def test_the_mode_may_be_given_as_its_string_value(closing):
    envs = closing(to_gymnasium(DummyVecEnv(ENV_FNS, batch_size=1), autoreset_mode="NextStep"))
    assert envs.metadata["autoreset_mode"] is AutoresetMode.NEXT_STEP
    same = closing(to_gymnasium(DummyVecEnv(ENV_FNS), autoreset_mode="SameStep"))
    assert same.metadata["autoreset_mode"] is AutoresetMode.SAME_STEP
    default = closing(to_gymnasium(DummyVecEnv(ENV_FNS)))
    assert default.metadata["autoreset_mode"] is AutoresetMode.SAME_STEP


def test_bad_modes_and_batch_sizes_are_named(closing):
    with pytest.raises(ValueError, match=r"autoreset_mode must be .*received 'next'"):
        to_gymnasium(closing(DummyVecEnv(ENV_FNS)), autoreset_mode="next")
    with pytest.raises(ValueError, match=r"autoreset_mode must be .*received <AutoresetMode.DISABLED"):
        to_gymnasium(closing(DummyVecEnv(ENV_FNS)), autoreset_mode=AutoresetMode.DISABLED)
    with pytest.raises(ValueError, match=r"batch_size=3, expected 1.*DummyVecEnv\(env_fns, batch_size=1\)"):
        next_step(closing(DummyVecEnv(ENV_FNS)))


def test_normalize_observation_runs_on_it_and_matches_it_over_sync_vector_env(closing):
    ours = closing(gym.wrappers.vector.NormalizeObservation(
        next_step(DummyVecEnv([cartpole] * 3, batch_size=1))))
    ref = closing(gym.wrappers.vector.NormalizeObservation(
        SyncVectorEnv([cartpole] * 3, autoreset_mode=AutoresetMode.NEXT_STEP)))
    assert_same(ours.reset(seed=5), ref.reset(seed=5))
    for actions in np.random.default_rng(2).integers(0, 2, size=(60, 3)):
        assert_same_step(ours.step(actions), ref.step(actions))
    np.testing.assert_array_equal(ours.obs_rms.mean, ref.obs_rms.mean)


def test_record_episode_statistics_and_clip_reward_run_on_it(closing):
    stats = gym.wrappers.vector.RecordEpisodeStatistics(next_step(DummyVecEnv(ENV_FNS, batch_size=1)))
    envs = closing(gym.wrappers.vector.ClipReward(stats, min_reward=0.0, max_reward=2.5))
    ref = closing(gym.wrappers.vector.ClipReward(gym.wrappers.vector.RecordEpisodeStatistics(
        SyncVectorEnv(ENV_FNS, autoreset_mode=AutoresetMode.NEXT_STEP)), min_reward=0.0, max_reward=2.5))
    envs.reset(seed=0), ref.reset(seed=0)
    lengths = []
    for actions in ACTIONS:
        got, want = envs.step(actions), ref.step(actions)
        assert got[1].max() <= 2.5
        np.testing.assert_array_equal(got[1], want[1])
        if "episode" in got[4]:
            np.testing.assert_array_equal(got[4]["episode"]["r"], want[4]["episode"]["r"])
            lengths += got[4]["episode"]["l"][got[4]["_episode"]].tolist()
    assert sorted(set(lengths)) == [3, 4, 5]  # SeededEnv's episode lengths: the reset rows are no steps
