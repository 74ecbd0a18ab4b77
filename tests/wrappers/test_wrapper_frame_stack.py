"""VecFrameStack and StackedObservations: channel orders, RGB, resets, terminal stacks, Dict."""
from __future__ import annotations

import functools

import numpy as np
import pytest
from gymnasium import spaces

from tests.backends import BACKENDS
from tests.envs import DictObsEnv
from tests.wrapper_envs import DictFrameEnv, FrameEnv
from vec_envs import DummyVecEnv
from vec_envs.wrappers import StackedObservations, VecFrameStack


class History:
    """The reference: a plain list of each env's observations in the current episode."""

    def __init__(self, n_stack, axis):
        self.n_stack, self.axis, self.frames = n_stack, axis, []

    def stacked(self, frames):
        frames = frames[-self.n_stack:]
        pad = [np.zeros_like(frames[0])] * (self.n_stack - len(frames))
        return np.concatenate(pad + frames, axis=self.axis)


def run_and_compare(venv, n_envs, n_stack, axis, steps):
    """Step ``venv`` (a VecFrameStack over FrameEnvs) and compare with per-env histories."""
    ref = History(n_stack, axis)
    bare = DummyVecEnv([functools.partial(FrameEnv, length=2 + i, **venv.frame_kwargs) for i in range(n_envs)])
    histories = [[frame] for frame in bare.reset()]
    np.testing.assert_array_equal(venv.reset(), np.stack([ref.stacked(h) for h in histories]))
    ends = 0
    for _ in range(steps):
        raw, _, raw_dones, raw_infos = bare.step(np.zeros(n_envs, np.int64))
        obs, _, dones, infos = venv.step(np.zeros(n_envs, np.int64))
        np.testing.assert_array_equal(dones, raw_dones)
        for i in range(n_envs):
            if dones[i]:
                ends += 1
                expected_terminal = ref.stacked(histories[i] + [raw_infos[i]["terminal_observation"]])
                np.testing.assert_array_equal(infos[i]["terminal_observation"], expected_terminal)
                histories[i] = []
            histories[i].append(raw[i])
            np.testing.assert_array_equal(obs[i], ref.stacked(histories[i]))
    assert ends >= n_envs  # every env went through at least one reset
    return obs


def framed(make, n_envs, **frame_kwargs):
    venv = make([functools.partial(FrameEnv, length=2 + i, **frame_kwargs) for i in range(n_envs)])
    venv.frame_kwargs = frame_kwargs
    return venv


@pytest.mark.parametrize("make", BACKENDS)
def test_rgb_channels_last_with_resets_and_terminal_stacks(make, closing):
    venv = closing(VecFrameStack(framed(make, 3), n_stack=3))
    assert venv.observation_space.shape == (4, 5, 9)
    assert venv.observation_space.dtype == np.uint8
    obs = run_and_compare(venv, 3, 3, axis=2, steps=9)
    assert obs.shape == (3, 4, 5, 9)


@pytest.mark.parametrize("order", [None, "first"])
def test_channels_first(order, closing):
    venv = closing(VecFrameStack(framed(DummyVecEnv, 2, shape=(3, 4, 5), channels_first=True), 4, order))
    assert venv.observation_space.shape == (12, 4, 5)
    run_and_compare(venv, 2, 4, axis=0, steps=7)


def test_an_explicit_order_overrides_the_inference(closing):
    venv = closing(VecFrameStack(framed(DummyVecEnv, 2, shape=(3, 4, 5), channels_first=True), 2, "last"))
    assert venv.observation_space.shape == (3, 4, 10)
    run_and_compare(venv, 2, 2, axis=2, steps=5)


def test_single_channel_frames(closing):
    venv = closing(VecFrameStack(framed(DummyVecEnv, 2, shape=(6, 6, 1)), 4))
    assert venv.observation_space.shape == (6, 6, 4)
    run_and_compare(venv, 2, 4, axis=2, steps=6)


def test_returned_stacks_are_not_changed_by_later_steps(closing):
    venv = closing(VecFrameStack(framed(DummyVecEnv, 2), 3))
    first = venv.reset()
    second, *_ = venv.step([0, 0])
    kept = first.copy(), second.copy()
    third, *_ = venv.step([0, 0])
    np.testing.assert_array_equal(first, kept[0])
    np.testing.assert_array_equal(second, kept[1])
    assert not np.shares_memory(second, third)


def test_dict_observations_stack_per_key(closing):
    venv = closing(VecFrameStack(DummyVecEnv([functools.partial(DictFrameEnv, length=2)] * 2), 2,
                                 channels_order={"image": "last"}))
    assert venv.observation_space["image"].shape == (4, 5, 6)
    assert venv.observation_space["vec"].shape == (4,)
    obs = venv.reset()
    np.testing.assert_array_equal(obs["vec"], [[0, 0, 0, 0]] * 2)
    venv.step([0, 0])
    obs, _, dones, infos = venv.step([0, 0])
    assert dones.tolist() == [True, True]
    terminal = infos[1]["terminal_observation"]
    np.testing.assert_array_equal(terminal["vec"], [1, -1, 2, -2])
    assert terminal["image"][0, 0].tolist() == [11, 12, 13, 21, 22, 23]
    np.testing.assert_array_equal(obs["vec"], [[0, 0, 0, 0]] * 2)
    assert obs["image"][1, 0, 0].tolist() == [0, 0, 0, 1, 2, 3]


def test_reset_single_env_zeroes_only_that_history(closing):
    venv = closing(VecFrameStack(framed(DummyVecEnv, 2, shape=(1, 1, 1)), 3))
    venv.reset()
    venv.step([0, 0])
    fresh = venv.reset_single_env(0)
    assert fresh.ravel().tolist() == [0, 0, 1]
    obs, *_ = venv.step([0, 0])
    assert obs[0].ravel().tolist() == [0, 1, 11]
    assert obs[1].ravel().tolist() == [1, 11, 21]


def test_stacked_space_tiles_per_channel_bounds():
    space = spaces.Box(np.array([0, 1, 2], np.float32), np.array([5, 6, 7], np.float32), dtype=np.float32)
    stack = StackedObservations(1, 2, space)
    np.testing.assert_array_equal(stack.stacked_observation_space.low, [0, 1, 2, 0, 1, 2])
    np.testing.assert_array_equal(stack.stacked_observation_space.high, [5, 6, 7, 5, 6, 7])


def test_bad_arguments_are_clear_errors():
    venv = framed(DummyVecEnv, 1)
    with pytest.raises(ValueError, match="n_stack must be an int >= 1, received 0"):
        VecFrameStack(venv, 0)
    with pytest.raises(ValueError, match="channels_order must be None, 'first' or 'last', received 'middle'"):
        VecFrameStack(venv, 2, "middle")
    with pytest.raises(ValueError, match=r"channels_order has keys \['img'\].*valid keys: \['image', 'vec'\]"):
        VecFrameStack(DummyVecEnv([DictFrameEnv]), 2, {"img": "last"})
    with pytest.raises(ValueError, match=r"observation\['nested'\]\['count'\] is Discrete\(100\)"):
        VecFrameStack(DummyVecEnv([DictObsEnv]), 2)
