"""SB3 trains one shared policy on every agent row; its VecMonitor and evaluate_policy see
per-agent episodes; scripts/train_multiagent.py runs as a user runs it."""
from __future__ import annotations

import functools
import importlib.util
import os
import subprocess
import sys

import numpy as np
import pytest
from mpe2 import simple_spread_v3

from tests.multiagent.parallel_envs import Relay
from tests.worker_groups import imports_sb3
from vec_envs.interop import to_sb3
from vec_envs.multiagent import make_multiagent_vec_env

pytestmark = [pytest.mark.slow,  # trains SB3's PPO
              pytest.mark.skipif(importlib.util.find_spec("stable_baselines3") is None,
                                 reason="stable_baselines3 is not installed"),
              imports_sb3]

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SPREAD = functools.partial(simple_spread_v3.parallel_env, max_cycles=10)


def test_ppo_trains_on_agent_rows_and_evaluate_policy_counts_agent_episodes() -> None:
    from stable_baselines3 import PPO
    from stable_baselines3.common.evaluation import evaluate_policy
    from stable_baselines3.common.vec_env import VecMonitor

    env = VecMonitor(to_sb3(make_multiagent_vec_env(SPREAD, 4, vec_env_cls="subproc",
                                                    vec_env_kwargs={"in_series": 2})))
    env.seed(0)
    model = PPO("MlpPolicy", env, n_steps=64, batch_size=256, n_epochs=2, seed=0, device="cpu")
    model.learn(3072)
    assert model.num_timesteps >= 3072
    lengths = [e["l"] for e in model.ep_info_buffer]
    assert len(lengths) == 100
    assert set(lengths) == {10}  # SB3 keeps the last 100 agent episodes
    returns, episode_lengths = evaluate_policy(model, env, n_eval_episodes=24, return_episode_rewards=True)
    env.close()
    assert len(returns) == 24
    assert set(episode_lengths) == {10}
    assert all(np.isfinite(returns))


def test_sb3_vec_monitor_ends_an_agent_episode_when_it_leaves() -> None:
    from stable_baselines3.common.vec_env import VecMonitor

    lifetimes = []
    for e in range(2):
        env = Relay()
        env.reset(seed=e)
        lifetimes += [env.lifetimes[a] for a in env.possible_agents]
    env = VecMonitor(to_sb3(make_multiagent_vec_env(Relay, 2)))
    env.seed(0)
    env.reset()
    first: dict[int, int] = {}
    for _ in range(6):
        _, _, dones, infos = env.step(np.ones(6, np.int64))
        for i in np.flatnonzero(dones):
            first.setdefault(int(i), infos[i]["episode"]["l"])
    env.close()
    assert [first[i] for i in range(6)] == lifetimes


def test_train_multiagent_script_runs_with_a_tiny_budget() -> None:
    pytest.importorskip("vec_envs.cli.args", reason="the script parses its Args with vec_envs.cli.args")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (REPO, os.environ.get("PYTHONPATH")) if p))
    done = subprocess.run([sys.executable, os.path.join(REPO, "scripts", "train_multiagent.py"),
                           "--total-timesteps", "1536", "--num-envs", "2", "--n-steps", "128",
                           "--batch-size", "256", "--n-epochs", "1", "--eval-episodes", "6", "--max-cycles", "8"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=240, check=False)
    assert done.returncode == 0, done.stderr
    assert "step/s" in done.stderr  # the progress bar
    assert done.stdout.startswith("mean agent episode return: before ")
    assert "1536 agent-steps on 2 envs x 3 agents" in done.stdout
