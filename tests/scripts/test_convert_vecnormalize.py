"""vec-envs-convert-vecnormalize (scripts/convert_vecnormalize.py) against Stable-Baselines3's real VecNormalize."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest

from tests.worker_groups import imports_sb3
from vec_envs import DummyVecEnv
from vec_envs.wrappers import VecNormalize

pytestmark = [pytest.mark.slow, imports_sb3]  # slow: runs console commands or scripts in processes of their own

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(REPO, "scripts", "convert_vecnormalize.py")
ENV_ID = "Pendulum-v1"  # observations of unequal scales: statistics that matter


def load_script():
    return importlib.import_module("vec_envs.cli.convert_vecnormalize")


def random_steps(venv, steps=150, seed=0):
    rng = np.random.default_rng(seed)
    venv.seed(seed)
    venv.reset()
    for _ in range(steps):
        venv.step(rng.uniform(-2, 2, size=(venv.num_envs, 1)).astype(np.float32))


def probe_batch():
    rng = np.random.default_rng(9)
    return np.stack([gym.make(ENV_ID).observation_space.sample() for _ in range(6)]) * rng.uniform(0.5, 2.0)


def test_from_sb3_matches_sb3s_normalized_observations(tmp_path):
    from stable_baselines3.common.vec_env import DummyVecEnv as SB3DummyVecEnv
    from stable_baselines3.common.vec_env import VecNormalize as SB3VecNormalize

    theirs = SB3VecNormalize(SB3DummyVecEnv([lambda: gym.make(ENV_ID)] * 3), gamma=0.95, clip_obs=5.0)
    random_steps(theirs)
    theirs.save(str(tmp_path / "sb3.pkl"))
    done = subprocess.run([sys.executable, SCRIPT, "from-sb3", str(tmp_path / "sb3.pkl"), str(tmp_path / "ours.npz"),
                           "--env-id", ENV_ID], capture_output=True, text=True, timeout=120, check=True)
    assert "unpickles it" in done.stderr
    assert "only" in done.stderr
    ours = VecNormalize.load(tmp_path / "ours.npz", DummyVecEnv([lambda: gym.make(ENV_ID)]))
    assert (ours.gamma, ours.clip_obs) == (0.95, 5.0)
    obs = probe_batch()
    np.testing.assert_allclose(ours.normalize_obs(obs), theirs.normalize_obs(obs), rtol=1e-6, atol=1e-6)
    assert np.abs(theirs.normalize_obs(obs) - obs).max() > 0.1  # the statistics are not the identity
    rewards = np.array([-3.0, -0.5, -10.0], np.float32)
    np.testing.assert_allclose(ours.normalize_reward(rewards), theirs.normalize_reward(rewards), rtol=1e-6)
    ours.close(), theirs.close()


def test_to_sb3_gives_sb3_our_statistics(tmp_path):
    from stable_baselines3.common.vec_env import DummyVecEnv as SB3DummyVecEnv
    from stable_baselines3.common.vec_env import VecNormalize as SB3VecNormalize

    ours = VecNormalize(DummyVecEnv([lambda: gym.make(ENV_ID)] * 3), clip_reward=3.0)
    random_steps(ours, seed=4)
    ours.save(tmp_path / "ours.npz")
    load_script().npz_to_sb3(str(tmp_path / "ours.npz"), str(tmp_path / "sb3.pkl"), ENV_ID)
    theirs = SB3VecNormalize.load(str(tmp_path / "sb3.pkl"), SB3DummyVecEnv([lambda: gym.make(ENV_ID)]))
    assert theirs.clip_reward == 3.0
    assert theirs.training
    obs = probe_batch()
    np.testing.assert_allclose(theirs.normalize_obs(obs), ours.normalize_obs(obs), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(theirs.ret_rms.var, ours.ret_rms.var)
    ours.close(), theirs.close()


def test_a_statistics_file_for_another_env_is_refused(tmp_path):
    ours = VecNormalize(DummyVecEnv([lambda: gym.make(ENV_ID)]))
    ours.save(tmp_path / "ours.npz")
    ours.close()
    with pytest.raises(ValueError, match="observation space"):
        load_script().npz_to_sb3(str(tmp_path / "ours.npz"), str(tmp_path / "sb3.pkl"), "CartPole-v1")
