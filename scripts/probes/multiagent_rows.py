"""The parent's CPU per agent row: what vec_envs.multiagent's rows layer costs on its own.

    python scripts/probes/multiagent_rows.py --rounds 9

Envs that cost almost nothing to step (``Echo``: 3 agents with simple_spread_v3's spaces
and 25-step episodes, or ``EchoSingle``, its single-agent twin) on SubprocVecEnv with 2
workers and the parent only driving: the parent's CPU per agent-step against its CPU per
env step of a single-agent VecEnv with as many rows, and with as many envs. The same envs
stepped packed (the backend under the rows, one row per env) and both again in-process
(DummyVecEnv) show what the rows layer itself costs. Contenders are built once and timed
in alternated rounds (medians).

What it found: the rows layer adds a small, fixed cost per batch on top of the backend's;
the parent pays per agent row about what it pays per env of a single-agent VecEnv with as
many rows. The figures: scripts/BENCHMARKS.md, "Multi-agent rows".

Example:
    >>> env = Echo()
    >>> obs, infos = env.reset()
    >>> sorted(obs) == env.possible_agents
    True
"""
from __future__ import annotations

import functools
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from vec_envs.cli.args import parse_args

__all__ = ["RowsArgs", "Echo", "EchoSingle", "main"]

#: a contender: (step once, agent-steps per step, close)
Contender = tuple[Callable[[], Any], int, Callable[[], None]]


@dataclass
class RowsArgs:
    """The parent's CPU per agent row on envs that cost nothing, against single-agent VecEnvs."""

    num_envs: int = field(default=8, metadata={"help": "Echo envs (3 agents each) per contender"})
    rounds: int = field(default=7, metadata={"help": "alternated rounds (medians are over these)"})
    steps: int = field(default=200, metadata={"help": "batched steps per contender per round"})


class Echo:
    """A ParallelEnv (3 agents by default) that costs almost nothing: fixed observations,
    25-step episodes truncated together."""

    metadata = {"name": "echo_v0"}

    def __init__(self, n_agents: int = 3) -> None:
        self.possible_agents = [f"agent_{k}" for k in range(n_agents)]
        self.agents: list[str] = []
        self._obs = {a: np.zeros(18, np.float32) for a in self.possible_agents}
        self._zeros = dict.fromkeys(self.possible_agents, 0.0)
        self._false = dict.fromkeys(self.possible_agents, False)
        self._true = dict.fromkeys(self.possible_agents, True)
        self._infos: dict[str, dict] = {a: {} for a in self.possible_agents}
        self.t = 0

    def observation_space(self, agent: str) -> spaces.Space:
        return spaces.Box(-np.inf, np.inf, (18,), np.float32)

    def action_space(self, agent: str) -> spaces.Space:
        return spaces.Discrete(5)

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        self.agents, self.t = list(self.possible_agents), 0
        return self._obs, self._infos

    def step(self, actions: dict) -> tuple[dict, dict, dict, dict, dict]:
        self.t += 1
        over = self.t >= 25
        if over:
            self.agents = []
        return self._obs, self._zeros, self._false, self._true if over else self._false, self._infos


class EchoSingle(gym.Env):
    """Echo's single-agent twin: the same observation, action space and episodes."""

    observation_space = spaces.Box(-np.inf, np.inf, (18,), np.float32)
    action_space = spaces.Discrete(5)

    def __init__(self) -> None:
        self._obs, self.t = np.zeros(18, np.float32), 0

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        self.t = 0
        return self._obs, {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        self.t += 1
        return self._obs, 0.0, False, self.t >= 25, {}


def echo_parallel_env() -> Any:
    """An Echo that is a PettingZoo ParallelEnv."""
    from pettingzoo.utils.env import ParallelEnv

    return type("EchoParallelEnv", (Echo, ParallelEnv), {})()


def echo_rows(args: RowsArgs, backend: str, packed: bool = False) -> Contender:
    """Echo envs as agent rows; ``packed``: step the backend under the rows directly (one
    row per env, the agents packed), so the difference is what the rows layer costs."""
    from vec_envs.multiagent import make_multiagent_vec_env

    kwargs = {"in_series": max(1, args.num_envs // 2), "step_in_parent": False} if backend == "subproc" else {}
    venv = make_multiagent_vec_env(echo_parallel_env, args.num_envs, vec_env_cls=backend, vec_env_kwargs=kwargs)
    venv.reset()
    actions = np.ones(venv.num_envs, np.int64)
    if packed:
        return functools.partial(venv.venv.step, actions.reshape(args.num_envs, -1)), venv.num_envs, venv.close
    return functools.partial(venv.step, actions), venv.num_envs, venv.close


def echo_single(rows: int) -> Contender:
    from vec_envs import SubprocVecEnv

    venv = SubprocVecEnv([EchoSingle] * rows, in_series=max(1, rows // 2), step_in_parent=False)
    venv.reset()
    return functools.partial(venv.step, np.ones(rows, np.int64)), rows, venv.close


def parent_cost_contenders(args: RowsArgs) -> dict[str, Contender]:
    return {f"{args.num_envs} Echo envs x 3 agents (agent rows)": echo_rows(args, "subproc"),
            f"{args.num_envs} Echo envs x 3 agents, packed (the backend under the rows)": echo_rows(
                args, "subproc", packed=True),
            f"{args.num_envs * 3} EchoSingle envs (single-agent, as many rows)": echo_single(args.num_envs * 3),
            f"{args.num_envs} EchoSingle envs (single-agent, as many envs)": echo_single(args.num_envs),
            f"in-process (dummy): {args.num_envs} Echo envs x 3 agents (agent rows)": echo_rows(args, "dummy"),
            f"in-process (dummy): {args.num_envs} Echo envs x 3 agents, packed": echo_rows(args, "dummy", packed=True)}


def time_segment(step: Callable[[], Any], steps: int) -> tuple[float, float]:
    """(wall seconds, driving-thread CPU seconds) of ``steps`` calls to ``step``."""
    step()  # a warm call: the first one after another contender's segment may wake workers
    cpu, wall = time.thread_time(), time.perf_counter()
    for _ in range(steps):
        step()
    return time.perf_counter() - wall, time.thread_time() - cpu


def main(args: RowsArgs) -> int:
    """Time every contender in alternated rounds; print row-steps/s and the parent's CPU per row-step."""
    made = parent_cost_contenders(args)
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in made}
    try:
        for _ in range(args.rounds):
            for name, (step, per_step, _) in made.items():
                wall, cpu = time_segment(step, args.steps)
                rows = args.steps * per_step
                samples[name].append((rows / wall, cpu / rows * 1e6))
    finally:
        for _, _, close in made.values():
            close()
    print(f"The parent's cost per row, envs that cost nothing (SubprocVecEnv, 2 workers, parent drives; the last "
          f"two rows: everything in-process), {args.rounds} rounds of {args.steps} steps (medians)\n")
    print("| rows | row-steps/s | parent CPU us / row-step |\n|---|---:|---:|")
    for name, rounds in samples.items():
        rate, cpu = (statistics.median(column) for column in zip(*rounds))
        print(f"| {name} | {rate:,.0f} | {cpu:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(parse_args(RowsArgs, prog="multiagent_rows.py")))
