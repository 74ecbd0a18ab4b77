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

import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, cast

import gymnasium as gym
import numpy as np
from gymnasium.spaces import Discrete

from vec_envs import DummyVecEnv, SubprocVecEnv, VecEnvBase
from vec_envs.ale.games import import_ale
from vec_envs.cli.args import parse_args


@dataclass
class Args:
    """Random-shooting planning on an Atari game with VecEnvBase.step_batch, against a random policy."""

    env_id: str = field(default="ALE/Boxing-v5", metadata={"help": "an ALE game id"})
    steps: int = field(default=400, metadata={"help": "env steps the planner (and random) play"})
    num_envs: int = field(default=18, metadata={"help": "rollouts per decision (one env each)"})
    horizon: int = field(default=8, metadata={"help": "decisions per rollout"})
    action_repeat: int = field(default=4, metadata={"help": "env steps per decision (step_batch dt)"})
    gamma: float = field(default=0.98, metadata={"help": "discount per decision within a rollout"})
    sticky: float = field(default=0.25, metadata={"help": "repeat_action_probability of the game"})
    backend: Literal["subproc", "dummy"] = field(default="subproc", metadata={"help": "VecEnv backend"})
    seed: int = field(default=1, metadata={"help": "seed of the game and of the planner"})


def make_env(env_id: str, sticky: float) -> Callable[[], gym.Env]:
    def thunk() -> gym.Env:
        import_ale()  # registers the ALE ids, also in a spawned worker
        return gym.make(env_id, repeat_action_probability=sticky)
    return thunk


def n_actions(venv: VecEnvBase) -> int:
    """The number of actions of an Atari game (a Discrete action space)."""
    return int(cast(Discrete, venv.action_space).n)


def rollout_returns(venv: VecEnvBase, root: Any, first: np.ndarray, args: Args,
                    rng: np.random.Generator) -> tuple[np.ndarray, tuple]:
    """Discounted return of every rollout from ``root``, and the result of its first decision."""
    n, k = venv.num_envs, args.action_repeat
    first_step = venv.step_batch(first, states=[root] * n, dt=k)
    states, _, rewards, terminated, truncated, _ = first_step
    returns, alive = rewards.astype(np.float64), ~(terminated | truncated)
    for h in range(1, args.horizon):
        _, rewards, terminated, truncated, _ = venv.step_batch(rng.integers(n_actions(venv), size=n), dt=k)
        returns += args.gamma ** h * rewards * alive
        alive &= ~(terminated | truncated)
    return returns, first_step


def plan(venv: VecEnvBase, args: Args) -> tuple[float, int]:
    """Play ``args.steps`` env steps by random shooting; returns (score, simulated env steps)."""
    rng = np.random.default_rng(args.seed)
    venv.seed(args.seed)
    venv.reset()
    state, score, simulated = venv.get_states([0])[0], 0.0, 0
    for _ in range(args.steps // args.action_repeat):
        first = np.resize(rng.permutation(n_actions(venv)), venv.num_envs)
        returns, (states, _, rewards, terminated, truncated, _) = rollout_returns(venv, state, first, args, rng)
        simulated += venv.num_envs * args.horizon * args.action_repeat
        best = rng.choice(np.flatnonzero(returns == returns.max()))
        state, score = states[best], score + float(rewards[best])
        if terminated[best] or truncated[best]:
            break
    return score, simulated


def play_random(venv: VecEnvBase, args: Args) -> np.ndarray:
    """Each env's score over the first ``args.steps`` env steps of a random policy."""
    rng = np.random.default_rng(args.seed + 1)
    venv.seed(args.seed)
    venv.reset()
    scores, alive = np.zeros(venv.num_envs), np.ones(venv.num_envs, bool)
    for _ in range(args.steps):
        _, rewards, dones, _ = venv.step(rng.integers(n_actions(venv), size=venv.num_envs))
        scores += rewards * alive
        alive &= ~dones
    return scores


def compare(args: Args) -> None:
    """Play with the planner, then randomly; print both scores."""
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


def main(argv: list[str] | None = None) -> int:
    """Run the comparison; returns the exit status (1: ale-py is not installed)."""
    args = parse_args(Args, argv, __doc__.split("\n\n")[0])
    try:
        import_ale()
    except ImportError as exc:
        print(f"{os.path.basename(sys.argv[0])}: {exc}", file=sys.stderr)
        return 1
    compare(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
