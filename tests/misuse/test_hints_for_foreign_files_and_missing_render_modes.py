"""Mistakes that end in someone else's traceback get our fix instead: an SB3 VecNormalize
pickle given to VecNormalize.load, render() on envs made without a render mode."""
from __future__ import annotations

import functools
import pickle

import gymnasium as gym
import numpy as np
import pytest

from tests.backends import dummy, subproc
from tests.envs import SeededEnv
from tests.worker_groups import imports_sb3
from vec_envs import ALEVecEnv, DummyVecEnv
from vec_envs.interop import to_gymnasium, to_sb3
from vec_envs.rendering.frames import RenderModeError
from vec_envs.wrappers import VecFrameStack, VecNormalize
from vec_envs.wrappers.atari import make_atari_env

BACKENDS = [pytest.param(dummy, id="dummy"),
            pytest.param(functools.partial(subproc, in_series=2, context="fork"), id="subproc")]


@imports_sb3
def test_loading_an_sb3_pickle_names_the_converter(tmp_path):
    from stable_baselines3.common.vec_env import DummyVecEnv as SB3DummyVecEnv
    from stable_baselines3.common.vec_env import VecNormalize as SB3VecNormalize

    theirs = SB3VecNormalize(SB3DummyVecEnv([lambda: gym.make("CartPole-v1")]))
    path = tmp_path / "vecnormalize.pkl"
    theirs.save(str(path))
    theirs.close()
    with pytest.raises(ValueError, match=r"vecnormalize.pkl is a pickle.*vec-envs-convert-vecnormalize from-sb3 "
                                         r".*scripts/convert_vecnormalize.py"):
        VecNormalize.load(path, DummyVecEnv([lambda: gym.make("CartPole-v1")]))


def test_any_pickle_gets_the_hint_and_other_files_keep_their_errors(tmp_path):
    pickled, text = tmp_path / "stats.pkl", tmp_path / "stats.npz"
    pickled.write_bytes(pickle.dumps({"obs_rms": np.zeros(4)}))
    text.write_text("not a VecNormalize file")
    venv = DummyVecEnv([lambda: gym.make("CartPole-v1")])
    with pytest.raises(ValueError, match="is a pickle"):
        VecNormalize.load(pickled, venv)
    with pytest.raises(ValueError, match="is not a readable VecNormalize file"):
        VecNormalize.load(text, venv)
    with pytest.raises(FileNotFoundError):
        VecNormalize.load(tmp_path / "missing.npz", venv)


@pytest.mark.parametrize("make", BACKENDS)
def test_render_without_a_render_mode_says_how_to_ask_for_one(make, closing):
    venv = closing(make([functools.partial(SeededEnv, render_mode=None)] * 3))
    venv.reset()
    with pytest.raises(RenderModeError, match=r"render\(\): env\(s\) \[0, 1, 2\] have render_mode=None.*"
                                              r"gym.make\(env_id, render_mode='rgb_array'\)"):
        venv.render("rgb_array")


def test_atari_render_without_a_render_mode_names_make_atari_envs_argument(closing):
    venv = closing(VecFrameStack(make_atari_env("Pong", n_envs=2, seed=0), n_stack=2))
    venv.reset()
    with pytest.raises(RenderModeError, match=r"make_atari_env\(game, env_kwargs=\{'render_mode': 'rgb_array'\}\)"
                                              r".*The envs raised EnvWorkerError") as caught:
        venv.render("rgb_array")
    assert len(str(caught.value).splitlines()) == 1  # the fix, not ALE's traceback


@imports_sb3
def test_the_adapters_render_with_the_same_hint(closing):
    venv = closing(DummyVecEnv([functools.partial(SeededEnv, render_mode=None)] * 2))
    venv.reset()
    with pytest.raises(RenderModeError, match="render_mode='rgb_array'"):
        to_gymnasium(venv).render()
    with pytest.raises(RenderModeError, match=r"get_images\(\): env\(s\) \[0, 1\].*render_mode='rgb_array'"):
        to_sb3(venv).get_images()  # SB3's render(mode) warns and returns None before asking


def test_envs_with_a_render_mode_still_render_and_other_failures_pass_through(closing):
    venv = closing(DummyVecEnv([functools.partial(SeededEnv, render_mode="rgb_array")] * 2))
    venv.reset()
    assert venv.render("rgb_array").shape == (12, 8, 3)
    engine = closing(ALEVecEnv("Pong", num_envs=2, seed=0))  # no render mode: preprocessed frames
    with pytest.raises(Exception, match="call reset\\(\\) first"):
        engine.render("rgb_array")  # the failure is not about render modes: raised as it is
    engine.reset()
    assert engine.render("rgb_array").shape == (168, 84, 3)
