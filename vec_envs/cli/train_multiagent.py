"""Train one shared PPO policy on every agent of PettingZoo's simple_spread_v3 (mpe2).

``make_multiagent_vec_env`` runs ``--num-envs`` copies of the ParallelEnv on a vec_envs
backend as one VecEnv with a row per agent (8 envs x 3 agents = 24 rows); SB3's PPO
trains one policy on all rows through ``vec_envs.interop.to_sb3`` (IPPO-style: every
agent acts on its own observation with the same weights). The mean per-agent episode
return is measured before and after training (SB3's ``evaluate_policy``, deterministic
actions, SB3's ``VecMonitor``).

    pip install -e ".[multiagent,sb3]"
    vec-envs-train-multiagent                                 # 300 k agent-steps
    python scripts/train_multiagent.py --total-timesteps 20000 --backend dummy   # the same
"""
from __future__ import annotations

import functools
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vec_envs.cli.args import (
    non_negative_float,
    non_negative_int,
    parse_args,
    positive_float,
    positive_int,
    require_extra,
    run_command,
    unit_float,
)
from vec_envs.interop import to_sb3
from vec_envs.multiagent import make_multiagent_vec_env

__all__ = ["Args", "main", "train_and_evaluate"]


@dataclass
class Args:
    """Train one shared PPO policy on every agent of PettingZoo's simple_spread_v3 (mpe2)."""

    num_envs: int = field(default=8, metadata={"help": "copies of simple_spread_v3 (each gives 3 agent rows)",
                                               "type": positive_int})
    backend: str = field(default="subproc", metadata={"help": "vec_envs backend", "choices": ("dummy", "subproc")})
    total_timesteps: int = field(default=300_000, metadata={"help": "agent-steps of training, over all rows",
                                                            "type": positive_int})
    max_cycles: int = field(default=25, metadata={"type": positive_int, "help": "steps per simple_spread episode"})
    seed: int = field(default=0, metadata={"help": "seeds the envs (env e gets seed + e) and the policy",
                                           "type": non_negative_int})
    eval_episodes: int = field(default=48, metadata={"type": positive_int, "help": "agent episodes of each evaluation"})
    progress_bar: bool = field(default=True, metadata={"help": "show a progress bar (--no-progress-bar: none)"})
    n_steps: int = field(default=128, metadata={"type": positive_int, "help": "steps per row per rollout"})
    batch_size: int = field(default=768, metadata={"type": positive_int, "help": "minibatch size"})
    n_epochs: int = field(default=10, metadata={"type": positive_int, "help": "passes over each rollout"})
    learning_rate: float = field(default=1e-3, metadata={"type": positive_float, "help": "Adam learning rate"})
    gamma: float = field(default=0.95, metadata={"type": unit_float, "help": "discount"})
    gae_lambda: float = field(default=0.95, metadata={"type": unit_float, "help": "GAE lambda"})
    ent_coef: float = field(default=0.01, metadata={"type": non_negative_float, "help": "entropy bonus"})


def make_venv(args: Args, backend: str, num_envs: int) -> Any:
    """``num_envs`` simple_spread_v3 envs, a row per agent, as SB3 sees them (with SB3's VecMonitor)."""
    from mpe2 import simple_spread_v3
    from stable_baselines3.common.vec_env import VecMonitor

    env_fn = functools.partial(simple_spread_v3.parallel_env, max_cycles=args.max_cycles)
    return VecMonitor(to_sb3(make_multiagent_vec_env(env_fn, num_envs, vec_env_cls=backend)))


def progress_callback(total: int) -> Any:
    """An SB3 callback drawing a tqdm bar: agent-steps, steps/s and the mean episode return."""
    from stable_baselines3.common.callbacks import BaseCallback
    from tqdm import tqdm

    class ProgressBar(BaseCallback):
        def _on_training_start(self) -> None:
            self.bar = tqdm(total=total, unit="step", dynamic_ncols=True)

        def _on_step(self) -> bool:
            self.bar.update(min(self.model.num_timesteps, total) - self.bar.n)
            episodes = self.model.ep_info_buffer
            if episodes and self.n_calls % 20 == 0:
                self.bar.set_postfix(ep_return=f"{np.mean([e['r'] for e in episodes]):.1f}")
            return True

        def _on_training_end(self) -> None:
            self.bar.close()

    return ProgressBar()


def mean_return(model: Any, args: Args, seed: int) -> float:
    """Mean per-agent episode return of ``model`` (deterministic), over ``args.eval_episodes``."""
    from stable_baselines3.common.evaluation import evaluate_policy

    env = make_venv(args, "dummy", 2)
    env.seed(seed)
    try:
        returns, _ = evaluate_policy(model, env, n_eval_episodes=args.eval_episodes, deterministic=True,
                                     return_episode_rewards=True)
    finally:
        env.close()
    return float(np.mean(returns))


def main(argv: list[str] | None = None) -> int:
    """Train and evaluate; returns the exit status (2: a bad command line; 1: the multiagent
    or sb3 extra not installed; 130: Ctrl-C)."""
    args = parse_args(Args, argv, __doc__.split("\n\n")[0])
    start = time.perf_counter()
    return run_command(lambda: train_and_evaluate(args),
                       lambda: f"after {time.perf_counter() - start:.1f} s; the envs are closed")


def train_and_evaluate(args: Args) -> int:
    """Train one shared policy and print the mean return before and after (raises ``CommandError``)."""
    require_extra("mpe2", "multiagent", "PettingZoo's mpe2 (simple_spread_v3)")
    require_extra("stable_baselines3", "sb3", "Stable-Baselines3")
    import torch
    from stable_baselines3 import PPO

    torch.set_num_threads(1)  # a small MLP: more threads only contend with the env workers
    env = make_venv(args, args.backend, args.num_envs)
    try:  # closed whatever happens, Ctrl-C included
        env.seed(args.seed)
        model = PPO("MlpPolicy", env, n_steps=args.n_steps, batch_size=args.batch_size, n_epochs=args.n_epochs,
                    learning_rate=args.learning_rate, gamma=args.gamma, gae_lambda=args.gae_lambda,
                    ent_coef=args.ent_coef, seed=args.seed, device="cpu")
        before = mean_return(model, args, args.seed + 10_000)
        start = time.perf_counter()
        callback = progress_callback(args.total_timesteps) if args.progress_bar else None
        model.learn(args.total_timesteps, callback=callback)
    finally:
        env.close()
    wall = time.perf_counter() - start
    after = mean_return(model, args, args.seed + 10_000)
    print(f"mean agent episode return: before {before:.1f}, after {after:.1f} ({args.eval_episodes} agent "
          f"episodes each) | {args.total_timesteps} agent-steps on {args.num_envs} envs x 3 agents in {wall:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
