"""VecTransposeImage and VecExtractDictObs: reset, step, terminal observations, errors."""
from __future__ import annotations

import functools

import numpy as np
import pytest

from tests.backends import BACKENDS
from tests.envs import SeededEnv
from tests.wrapper_envs import DictFrameEnv, FrameEnv, frame_value
from vec_envs import DummyVecEnv
from vec_envs.wrappers import VecExtractDictObs, VecTransposeImage

N = 2


def assert_chw_frame(obs, t):
    assert obs.shape == (3, 4, 5)
    assert obs.flags.c_contiguous
    for c in range(3):
        assert np.all(obs[c] == frame_value(t, c))


@pytest.mark.parametrize("make", BACKENDS)
def test_extract_then_transpose_on_every_backend(make, closing):
    fns = [functools.partial(DictFrameEnv, length=2 + i) for i in range(N)]
    venv = closing(VecTransposeImage(VecExtractDictObs(make(fns), "image")))
    assert venv.observation_space.shape == (3, 4, 5)
    assert venv.observation_space.dtype == np.uint8
    obs = venv.reset()
    assert obs.shape == (N, 3, 4, 5)
    assert obs.flags.c_contiguous
    assert_chw_frame(obs[1], 0)
    venv.step([0, 0])
    obs, _, dones, infos = venv.step([0, 0])
    assert dones.tolist() == [True, False]
    assert_chw_frame(infos[0]["terminal_observation"], 2)
    assert_chw_frame(obs[0], 0)
    assert_chw_frame(obs[1], 2)
    assert_chw_frame(venv.reset_single_env(1), 0)


def test_transpose_image_hwc_to_chw(closing):
    venv = closing(VecTransposeImage(DummyVecEnv([functools.partial(FrameEnv, length=2)])))
    assert venv.observation_space.shape == (3, 4, 5)
    venv.reset()
    venv.step([0])
    obs, _, dones, infos = venv.step([0])
    assert dones.tolist() == [True]
    assert_chw_frame(infos[0]["terminal_observation"], 2)
    assert_chw_frame(obs[0], 0)


def test_transpose_image_per_dict_key(closing):
    venv = closing(VecTransposeImage(DummyVecEnv([functools.partial(DictFrameEnv, length=1)])))
    assert venv.observation_space["image"].shape == (3, 4, 5)
    assert venv.observation_space["vec"].shape == (2,)
    obs, _, _, infos = venv.step([0])
    assert_chw_frame(obs["image"][0], 0)
    assert_chw_frame(infos[0]["terminal_observation"]["image"], 1)
    np.testing.assert_array_equal(infos[0]["terminal_observation"]["vec"], [1, -1])


def test_transpose_image_errors_and_skip(closing):
    with pytest.raises(ValueError, match=r"transposes image spaces \(uint8 Box of rank 3.*received Box\(-1.0, 1.0"):
        VecTransposeImage(DummyVecEnv([SeededEnv]))
    channels_first = functools.partial(FrameEnv, shape=(3, 4, 5), channels_first=True)
    with pytest.raises(ValueError, match=r"shape \(3, 4, 5\) looks channels-first already.*skip=True"):
        VecTransposeImage(DummyVecEnv([channels_first]))
    venv = closing(VecTransposeImage(DummyVecEnv([channels_first]), skip=True))
    assert venv.observation_space.shape == (3, 4, 5)
    assert_chw_frame(venv.reset()[0], 0)


def test_extract_dict_obs(closing):
    venv = closing(VecExtractDictObs(DummyVecEnv([functools.partial(DictFrameEnv, length=2 + i) for i in range(N)]),
                                     "vec"))
    assert venv.observation_space.shape == (2,)
    np.testing.assert_array_equal(venv.reset(), [[0, 0], [0, 0]])
    venv.step([0, 0])
    obs, _, dones, infos = venv.step([0, 0])
    assert dones.tolist() == [True, False]
    np.testing.assert_array_equal(infos[0]["terminal_observation"], [2, -2])
    np.testing.assert_array_equal(obs, [[0, 0], [2, -2]])
    np.testing.assert_array_equal(venv.reset_single_env(1), [0, 0])


def test_extract_dict_obs_errors():
    valid = r"key 'pixels' is not in the observation space \(valid keys: \['image', 'vec'\]\)"
    with pytest.raises(ValueError, match=valid):
        VecExtractDictObs(DummyVecEnv([DictFrameEnv]), "pixels")
    with pytest.raises(ValueError, match=r"needs a Dict observation space, received Box"):
        VecExtractDictObs(DummyVecEnv([SeededEnv]), "pos")
