"""Random-shooting planning on an Atari game with ``VecEnvBase.step_batch``.

Every decision starts ``num_envs`` rollouts from the current state: the first actions
cover the action set, the rest are random; each of the ``horizon`` rollout decisions
repeats its action ``action_repeat`` env steps. The first action of the rollout with the
best discounted return is played. The script prints the planner's score and that of a
random policy over the same number of env steps.

    python scripts/plan_atari.py                       # ALE/Boxing-v5, 400 env steps
    python scripts/plan_atari.py --env-id ALE/Pong-v5 --steps 800 --horizon 16
"""
from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

from vec_envs import DummyVecEnv, SubprocVecEnv, VecEnvBase

NO_ALE = 'plan_atari.py needs ale-py (the Atari emulator): pip install -e ".[atari]"'


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env-id", default="ALE/Boxing-v5", help="an ALE game id")
    parser.add_argument("--steps", type=int, default=400, help="env steps the planner (and random) play")
    parser.add_argument("--num-envs", type=int, default=18, help="rollouts per decision (one env each)")
    parser.add_argument("--horizon", type=int, default=8, help="decisions per rollout")
    parser.add_argument("--action-repeat", type=int, default=4, help="env steps per decision (step_batch dt)")
    parser.add_argument("--gamma", type=float, default=0.98, help="discount per decision within a rollout")
    parser.add_argument("--sticky", type=float, default=0.25, help="repeat_action_probability of the game")
    parser.add_argument("--backend", choices=("subproc", "dummy"), default="subproc", help="VecEnv backend")
    parser.add_argument("--seed", type=int, default=1, help="seed of the game and of the planner")
    return parser.parse_args(argv)


def make_env(env_id: str, sticky: float) -> Callable[[], gym.Env]:
    def thunk() -> gym.Env:
        import ale_py

        gym.register_envs(ale_py)
        return gym.make(env_id, repeat_action_probability=sticky)
    return thunk


def rollout_returns(venv: VecEnvBase, root: Any, first: np.ndarray, args: argparse.Namespace,
                    rng: np.random.Generator) -> tuple[np.ndarray, tuple]:
    """Discounted return of every rollout from ``root``, and the result of its first decision."""
    n, k = venv.num_envs, args.action_repeat
    first_step = venv.step_batch(first, states=[root] * n, dt=k)
    states, _, rewards, terminated, truncated, _ = first_step
    returns, alive = rewards.astype(np.float64), ~(terminated | truncated)
    for h in range(1, args.horizon):
        _, rewards, terminated, truncated, _ = venv.step_batch(rng.integers(venv.action_space.n, size=n), dt=k)
        returns += args.gamma ** h * rewards * alive
        alive &= ~(terminated | truncated)
    return returns, first_step


def plan(venv: VecEnvBase, args: argparse.Namespace) -> tuple[float, int]:
    """Play ``args.steps`` env steps by random shooting; returns (score, simulated env steps)."""
    rng = np.random.default_rng(args.seed)
    venv.seed(args.seed)
    venv.reset()
    state, score, simulated = venv.get_states([0])[0], 0.0, 0
    for _ in range(args.steps // args.action_repeat):
        first = np.resize(rng.permutation(venv.action_space.n), venv.num_envs)
        returns, (states, _, rewards, terminated, truncated, _) = rollout_returns(venv, state, first, args, rng)
        simulated += venv.num_envs * args.horizon * args.action_repeat
        best = rng.choice(np.flatnonzero(returns == returns.max()))
        state, score = states[best], score + float(rewards[best])
        if terminated[best] or truncated[best]:
            break
    return score, simulated


def play_random(venv: VecEnvBase, args: argparse.Namespace) -> np.ndarray:
    """Each env's score over the first ``args.steps`` env steps of a random policy."""
    rng = np.random.default_rng(args.seed + 1)
    venv.seed(args.seed)
    venv.reset()
    scores, alive = np.zeros(venv.num_envs), np.ones(venv.num_envs, bool)
    for _ in range(args.steps):
        _, rewards, dones, _ = venv.step(rng.integers(venv.action_space.n, size=venv.num_envs))
        scores += rewards * alive
        alive &= ~dones
    return scores


def main(args: argparse.Namespace) -> None:
    backend = SubprocVecEnv if args.backend == "subproc" else DummyVecEnv
    with backend([make_env(args.env_id, args.sticky)] * args.num_envs) as venv:
        start = time.perf_counter()
        score, simulated = plan(venv, args)
        planned_s = time.perf_counter() - start
        random_scores = play_random(venv, args)
        random_s = time.perf_counter() - start - planned_s
    print(f"{args.env_id}, {args.steps} env steps, sticky actions {args.sticky}:")
    print(f"  planner: {score:7.1f}   ({args.num_envs} rollouts x {args.horizon} decisions x "
          f"{args.action_repeat} steps per decision, {simulated} simulated steps, {planned_s:.1f} s)")
    print(f"  random : {random_scores.mean():7.1f} +- {random_scores.std():.1f}   "
          f"(mean of {venv.num_envs} episodes, {random_s:.1f} s)")


if __name__ == "__main__":
    arguments = parse_args()
    try:
        import ale_py  # noqa: F401
    except ImportError:
        sys.exit(NO_ALE)
    main(arguments)
