"""scripts/train_ppo.py as a user runs it: a subprocess with a tiny budget."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from tests.worker_groups import imports_sb3

pytestmark = pytest.mark.slow  # runs console commands or scripts in processes of their own

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(REPO, "scripts", "train_ppo.py")


def run(*args, pythonpath=REPO):
    env = dict(os.environ, PYTHONPATH=pythonpath)
    return subprocess.run([sys.executable, SCRIPT, *args], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=240, check=False)


@imports_sb3
def test_a_tiny_run_trains_evaluates_and_saves_model_and_statistics(tmp_path):
    from stable_baselines3 import PPO

    from vec_envs import DummyVecEnv
    from vec_envs.wrappers import VecNormalize

    done = run("--total-timesteps", "256", "--num-envs", "2", "--n-steps", "64", "--batch-size", "64",
               "--n-epochs", "1", "--eval-episodes", "3", "--output", str(tmp_path / "run"))
    assert done.returncode == 0, done.stderr
    assert "step/s" in done.stderr or "step]" in done.stderr  # the progress bar
    assert done.stdout.startswith("eval: mean return ")
    assert "over 3 episodes" in done.stdout
    model = PPO.load(tmp_path / "run" / "model.zip", device="cpu")
    import gymnasium as gym

    eval_envs = DummyVecEnv([lambda: gym.make("CartPole-v1")])
    with VecNormalize.load(tmp_path / "run" / "vecnormalize.npz", eval_envs) as venv:
        assert venv.obs_rms.count > 256  # the statistics of the training run
        actions, _ = model.predict(venv.reset(), deterministic=True)
    assert np.isin(actions, [0, 1]).all()


def test_without_sb3_it_says_which_extra_to_install(tmp_path):
    stub = tmp_path / "stable_baselines3"  # an installed SB3 is hidden behind a package that fails to import
    stub.mkdir()
    (stub / "__init__.py").write_text("raise ImportError('No module named stable_baselines3 (hidden)')\n")
    done = run("--total-timesteps", "64", pythonpath=os.pathsep.join([str(tmp_path), REPO]))
    assert done.returncode == 1
    assert done.stderr == ('train_ppo.py: error: needs Stable-Baselines3: pip install -e ".[sb3]" (from a checkout) or '
                           'pip install "vec_envs[sb3]"\n')
