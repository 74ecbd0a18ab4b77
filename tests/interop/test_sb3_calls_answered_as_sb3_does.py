"""What SB3's users call on a VecEnv and its wrappers is answered as SB3 answers it, on
every backend (without ``to_sb3``): ``render_mode``, ``has_attr`` (asked where the envs
run, so an attribute that cannot be pickled is found), ``render()`` with no mode,
``VecNormalize.normalize_reward`` of one reward, ``unnormalize_obs`` /
``unnormalize_reward``, ``RunningMeanStd(epsilon=)`` and ``combine``,
``StackedObservations.compute_stacking``, VecMonitor's warning over envs in SB3's
``Monitor``, a wrapper's refusal of an attribute two VecEnvs beneath it hold, and
``make_vec_env`` making registered ids with ``render_mode="rgb_array"``.
"""
from __future__ import annotations

import functools
import threading
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

from tests import backends
from tests.worker_groups import imports_sb3
from vec_envs import make_vec_env
from vec_envs.wrappers import RunningMeanStd, StackedObservations, VecFrameStack, VecMonitor, VecNormalize

BACKENDS = [
    pytest.param(backends.dummy, id="dummy"),
    pytest.param(functools.partial(backends.subproc, in_series=1), id="subproc"),
]


def cartpole(render_mode=None):
    env = gym.make("CartPole-v1", render_mode=render_mode)
    env.unwrapped.lock = threading.Lock()  # no pickle takes it
    return env


@pytest.fixture(params=BACKENDS)
def make(request):
    return request.param


@pytest.mark.parametrize("render_mode", [None, "rgb_array"])
def test_render_mode_is_the_envs_through_every_wrapper(make, render_mode, closing):
    venv = closing(make([functools.partial(cartpole, render_mode)] * 2))
    assert venv.render_mode == render_mode
    assert VecNormalize(VecFrameStack(venv, 2)).render_mode == render_mode


def test_has_attr_finds_what_every_env_has_even_unpicklable(make, closing):
    venv = VecNormalize(closing(make([cartpole] * 2)))
    assert venv.has_attr("lock")
    assert venv.has_attr("gravity")
    assert not venv.has_attr("no_such_attribute")


def test_render_with_no_mode_gives_the_frames_of_rgb_array_envs(make, closing):
    venv = closing(make([functools.partial(cartpole, "rgb_array")] * 2))
    venv.reset()
    np.testing.assert_array_equal(venv.render(), venv.render("rgb_array"))


def test_normalize_reward_takes_one_reward_as_a_batch_does(closing):
    venv = VecNormalize(closing(backends.dummy([cartpole])))
    venv.reset()
    for _ in range(20):
        venv.step([1])
    one = venv.normalize_reward(1.0)
    assert isinstance(one, np.float32)
    assert one == venv.normalize_reward(np.array([1.0]))[0]


def test_unnormalize_undoes_normalize(closing):
    venv = VecNormalize(closing(backends.dummy([cartpole] * 2)))
    venv.reset()
    for _ in range(20):
        obs, rewards, _, _ = venv.step([1, 0])
    np.testing.assert_allclose(venv.unnormalize_obs(obs), venv.get_original_obs(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(venv.unnormalize_reward(rewards), venv.get_original_reward(), rtol=1e-5)


def test_running_mean_std_starts_from_epsilon_and_combines_another():
    rng = np.random.default_rng(0)
    a, b, both = RunningMeanStd((3,)), RunningMeanStd((3,)), RunningMeanStd((3,))
    first, second = rng.normal(size=(15, 3)), rng.normal(1.0, 2.0, size=(19, 3))
    a.update(first)
    b.update(second)
    both.update(np.concatenate([first, second]))
    a.combine(b)
    np.testing.assert_allclose(a.mean, both.mean)
    np.testing.assert_allclose(a.var, both.var)
    assert a.count == 34
    assert RunningMeanStd(shape=(2,), epsilon=1e-4).count == 1e-4
    with pytest.raises(ValueError, match=r"combine\(\): expected statistics of shape \(3,\), received shape \(2,\)"):
        a.combine(RunningMeanStd((2,)))


@pytest.mark.parametrize(("shape", "order", "expected"), [
    ((4,), None, (False, -1, (16,), -1)),
    ((3, 16, 24), None, (True, 1, (12, 16, 24), 0)),
    ((16, 24, 3), None, (False, -1, (16, 24, 12), -1)),
    ((16, 24, 3), "first", (True, 1, (64, 24, 3), 0)),
])
def test_compute_stacking_says_where_observations_stack(shape, order, expected):
    space = spaces.Box(0, 255, shape, np.uint8)
    assert StackedObservations.compute_stacking(4, space, order) == expected
    assert StackedObservations(2, 4, space, order).stacked_observation_space.shape == expected[2]


def in_sb3_monitor():
    from stable_baselines3.common.monitor import Monitor

    return Monitor(cartpole())


@imports_sb3
def test_vec_monitor_warns_of_envs_in_sb3_monitor(make, closing):
    venv = closing(make([cartpole, in_sb3_monitor]))
    with pytest.warns(UserWarning, match=r"env\(s\) \[1\] are wrapped in Stable-Baselines3's Monitor"):
        VecMonitor(VecNormalize(venv))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        VecMonitor(closing(make([cartpole])))


def test_an_attribute_two_vec_envs_beneath_hold_is_refused_as_ambiguous(closing):
    inner = VecNormalize(closing(backends.dummy([cartpole])))
    stack = VecFrameStack(VecNormalize(inner), 2)
    with pytest.raises(AttributeError, match=r"VecFrameStack has no attribute 'obs_rms', and more than one VecEnv "
                                             r"beneath it has one: VecNormalize \(venv\), VecNormalize \(venv.venv\)"):
        _ = stack.obs_rms
    assert stack.venv.obs_rms is not inner.obs_rms
    assert VecFrameStack(inner, 2).obs_rms is inner.obs_rms


def test_make_vec_env_makes_registered_ids_with_frames(closing):
    venv = closing(make_vec_env("CartPole-v1", n_envs=2))
    assert venv.render_mode == "rgb_array"
    venv.reset()
    assert venv.render().ndim == 3
    assert closing(make_vec_env("CartPole-v1", env_kwargs={"render_mode": None})).render_mode is None


class HumanEnv(gym.Env):
    """Draws its own window (counted in ``drawn``), as an env made with ``render_mode="human"``."""

    metadata = {"render_modes": ["human"]}
    observation_space = spaces.Box(0, 1, (1,), np.float32)
    action_space = spaces.Discrete(2)

    def __init__(self):
        self.render_mode, self.drawn = "human", 0

    def reset(self, *, seed=None, options=None):
        return np.zeros(1, np.float32), {}

    def step(self, action):
        return np.zeros(1, np.float32), 0.0, False, False, {}

    def render(self):
        self.drawn += 1


def test_render_of_envs_made_for_humans_lets_each_draw_itself(make, closing):
    venv = closing(make([HumanEnv] * 2))
    venv.reset()
    assert venv.render() is None
    assert venv.render("human") is None
    assert venv.get_attr("drawn") == [2, 2]
    with pytest.raises(ValueError, match=r"render\(\): mode must be one of"):
        venv.render("something_else")


def test_vec_normalize_refuses_what_it_cannot_normalize_in_sb3s_words(closing):
    with pytest.raises(ValueError, match=r"VecNormalize\(norm_obs=True\) only supports Box or Dict observation "
                                         r"spaces, received Discrete\(48\); pass norm_obs=False"):
        VecNormalize(closing(backends.dummy([lambda: gym.make("CliffWalking-v1")])))
    with pytest.raises(ValueError, match=r"norm_obs_keys=\['key'\] is applicable only to a Dict observation space"):
        VecNormalize(closing(backends.dummy([cartpole])), norm_obs_keys=["key"])
