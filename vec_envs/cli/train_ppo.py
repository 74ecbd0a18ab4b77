"""Train Stable-Baselines3's PPO on vec_envs: CartPole-v1 x 8 in worker processes.

The envs are ``VecNormalize(VecMonitor(SubprocVecEnv(...)))`` handed to SB3 through
``vec_envs.interop.to_sb3``. At the end the policy is evaluated (deterministic actions,
``--eval-episodes`` episodes, frozen normalization statistics) and saved with its
VecNormalize statistics: ``<output>/model.zip`` and ``<output>/vecnormalize.npz``.

    pip install -e ".[sb3]"                              # or: pip install "vec_envs[sb3]"
    vec-envs-train-ppo                                   # the installed command; or:
    python scripts/train_ppo.py                          # 150 k steps, reaches 500
    python scripts/train_ppo.py --total-timesteps 20000 --num-envs 4
"""
from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np

from vec_envs import DummyVecEnv, SubprocVecEnv, VecEnvBase
from vec_envs.cli.args import (
    check_env_id,
    check_writable_dir,
    non_negative_int,
    parse_args,
    positive_float,
    positive_int,
    require_extra,
    run_command,
    unit_float,
)
from vec_envs.interop import to_sb3
from vec_envs.wrappers import VecMonitor, VecNormalize

__all__ = ["Args", "main", "train_and_evaluate"]


@dataclass
class Args:
    """Train Stable-Baselines3's PPO on vec_envs: CartPole-v1 x 8 in worker processes."""

    env_id: str = field(default="CartPole-v1", metadata={"help": "a registered gymnasium env id"})
    num_envs: int = field(default=8, metadata={"help": "envs stepped as one batch (in worker processes)",
                                               "type": positive_int})
    total_timesteps: int = field(default=150_000, metadata={"help": "env steps of training, over all envs",
                                                            "type": positive_int})
    seed: int = field(default=0, metadata={"help": "seeds the envs (env i gets seed + i) and the policy",
                                           "type": non_negative_int})
    eval_episodes: int = field(default=20, metadata={"type": positive_int, "help": "episodes of the final evaluation"})
    output: str = field(default="runs/ppo_cartpole", metadata={"help": "folder for model.zip and vecnormalize.npz"})
    progress_bar: bool = field(default=True, metadata={"help": "show a progress bar (--no-progress-bar: none)"})
    # PPO's hyperparameters, as tuned for CartPole-v1 in rl-baselines3-zoo
    n_steps: int = field(default=32, metadata={"type": positive_int, "help": "steps per env per rollout"})
    batch_size: int = field(default=256, metadata={"type": positive_int, "help": "minibatch size"})
    n_epochs: int = field(default=20, metadata={"type": positive_int, "help": "passes over each rollout"})
    learning_rate: float = field(default=1e-3, metadata={"help": "initial learning rate, decayed linearly to 0",
                                                         "type": positive_float})
    clip_range: float = field(default=0.2, metadata={"help": "initial PPO clip range, decayed linearly to 0",
                                                     "type": positive_float})
    gamma: float = field(default=0.98, metadata={"help": "discount (also VecNormalize's reward discount)",
                                                 "type": unit_float})
    gae_lambda: float = field(default=0.8, metadata={"type": unit_float, "help": "GAE lambda"})


def make_env(env_id: str) -> Callable[[], gym.Env]:
    """A thunk that makes one env (a closure over ``env_id``; cloudpickle takes it to any worker)."""

    def thunk() -> gym.Env:
        return gym.make(env_id)

    return thunk


def linear(initial: float) -> Any:
    """SB3 schedule: ``initial`` at the start of training, 0 at the end."""
    return lambda progress_remaining: progress_remaining * initial


def progress_callback(total: int) -> Any:
    """An SB3 callback drawing a tqdm bar: steps, steps/s and the mean episode return."""
    from stable_baselines3.common.callbacks import BaseCallback
    from tqdm import tqdm

    class ProgressBar(BaseCallback):
        def _on_training_start(self) -> None:
            self.bar = tqdm(total=total, unit="step", dynamic_ncols=True)

        def _on_step(self) -> bool:
            self.bar.update(min(self.model.num_timesteps, total) - self.bar.n)  # SB3 ends on a full rollout
            episodes = self.model.ep_info_buffer
            if episodes and self.n_calls % 50 == 0:
                self.bar.set_postfix(ep_return=f"{np.mean([e['r'] for e in episodes]):.1f}")
            return True

        def _on_training_end(self) -> None:
            self.bar.close()

    return ProgressBar()


def evaluate(model: Any, venv: VecEnvBase, episodes: int) -> np.ndarray:
    """Returns of ``episodes`` episodes with deterministic actions, spread evenly over the
    envs (each env plays its share in full, so short episodes are not favoured)."""
    wanted = np.array([(episodes + i) // venv.num_envs for i in range(venv.num_envs)])
    returns: list[list[float]] = [[] for _ in range(venv.num_envs)]
    obs = venv.reset()
    while any(len(r) < w for r, w in zip(returns, wanted)):
        actions, _ = model.predict(obs, deterministic=True)
        obs, _, dones, infos = venv.step(actions)
        for i in np.flatnonzero(dones):
            if len(returns[i]) < wanted[i]:
                returns[i].append(infos[i]["episode"]["r"])
    return np.array([r for env_returns in returns for r in env_returns])


def train(args: Args) -> Any:
    """Train PPO on ``VecNormalize(VecMonitor(SubprocVecEnv))``; saves model and statistics."""
    import torch
    from stable_baselines3 import PPO

    torch.set_num_threads(1)  # a small MLP: more threads only contend with the env workers
    venv = VecNormalize(VecMonitor(SubprocVecEnv([make_env(args.env_id)] * args.num_envs)),
                        gamma=args.gamma)
    try:  # closed whatever happens, Ctrl-C included
        venv.seed(args.seed)
        model = PPO("MlpPolicy", to_sb3(venv), n_steps=args.n_steps, batch_size=args.batch_size,
                    n_epochs=args.n_epochs, learning_rate=linear(args.learning_rate),
                    clip_range=linear(args.clip_range), gamma=args.gamma, gae_lambda=args.gae_lambda,
                    ent_coef=0.0, seed=args.seed, device="cpu")
        callback = progress_callback(args.total_timesteps) if args.progress_bar else None
        model.learn(args.total_timesteps, callback=callback)
    finally:
        venv.close()
    os.makedirs(args.output, exist_ok=True)
    model.save(os.path.join(args.output, "model.zip"))
    venv.save(os.path.join(args.output, "vecnormalize.npz"))
    return model


def main(argv: list[str] | None = None) -> int:
    """Train, evaluate and save; returns the exit status (2: a bad command line; 1: an unknown
    env id, an unwritable output folder, Stable-Baselines3 not installed; 130: Ctrl-C)."""
    args = parse_args(Args, argv, __doc__.split("\n\n")[0])
    start = time.time()

    def so_far() -> str:
        stats = os.path.join(args.output, "vecnormalize.npz")
        saved = os.path.isfile(stats) and os.path.getmtime(stats) >= start
        return (f"after {time.time() - start:.1f} s; the envs are closed; "
                + (f"saved to {args.output}/" if saved else "nothing saved"))

    return run_command(lambda: train_and_evaluate(args), so_far)


def train_and_evaluate(args: Args) -> int:
    """Check the setup, train, evaluate and save (raises ``CommandError``)."""
    require_extra("stable_baselines3", "sb3", "Stable-Baselines3")
    check_env_id(args.env_id)
    check_writable_dir(args.output, "--output")
    start = time.perf_counter()
    model = train(args)
    wall = time.perf_counter() - start
    eval_envs = DummyVecEnv([make_env(args.env_id)] * min(4, args.eval_episodes))
    venv = VecNormalize.load(os.path.join(args.output, "vecnormalize.npz"), VecMonitor(eval_envs))
    venv.training, venv.norm_reward = False, False  # frozen statistics, the real rewards
    venv.seed(args.seed + 10_000)
    try:
        returns = evaluate(model, venv, args.eval_episodes)
    finally:
        venv.close()
    print(f"eval: mean return {returns.mean():.1f} +- {returns.std():.1f} over {len(returns)} episodes | "
          f"training {args.total_timesteps} steps in {wall:.1f} s | saved to {args.output}/")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
