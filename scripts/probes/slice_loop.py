"""CPU per env step of one slice of envs: a plain loop over ``env.step`` against EnvSlice,
the loop every backend steps its envs with (vec_envs/workers/env_slice.py).

    python scripts/probes/slice_loop.py --env cartpole --rounds 21      # EnvSlice's C loop
    VEC_ENVS_KERNELS=0 python scripts/probes/slice_loop.py --env cartpole --rounds 21   # its Python loop

EnvSlice steps its envs in C (vec_envs/workers/_step_kernel.c) where the kernel is built
and not switched off (``VEC_ENVS_KERNELS=0``), else in Python. The two loops take turns,
round after round, in this thread (``time.thread_time()``); "over the plain loop" is the
median of the per-round differences.

What it found: the C loop adds a small fraction of a CartPole step to a plain loop, the
Python loop several times as much; on an env that costs nothing the Python loop is most
of what a step costs. The figures: scripts/BENCHMARKS.md, "The step loop of a slice, C
and Python".

Example:
    >>> loops = slice_loops(SliceLoopArgs(env="zero", num_envs=2))
    >>> sorted(loops)
    ['EnvSlice', 'plain loop']
"""
from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Literal

import gymnasium as gym
import numpy as np

from vec_envs import kernels
from vec_envs.cli.args import parse_args
from vec_envs.spaces.batching import BatchBuffers
from vec_envs.workers.env_slice import EnvSlice

__all__ = ["SliceLoopArgs", "ZeroCostEnv", "slice_loops", "main"]


@dataclass
class SliceLoopArgs:
    """CPU per env step of a plain loop and of EnvSlice over one slice of envs, taking turns."""

    env: Literal["cartpole", "zero"] = field(default="cartpole", metadata={"help": "the env of every slot"})
    num_envs: int = field(default=16, metadata={"help": "envs in the slice (a worker's in_series)"})
    episode_length: int = field(default=500, metadata={"help": "steps per episode of the zero-cost env"})
    rounds: int = field(default=15, metadata={"help": "rounds; each times every loop once"})
    steps: int = field(default=300, metadata={"help": "batches per loop and round"})

    def __post_init__(self) -> None:
        if min(self.num_envs, self.episode_length, self.rounds, self.steps) < 1:
            raise ValueError(f"--num-envs, --episode-length, --rounds and --steps must be >= 1; received "
                             f"{self.num_envs}, {self.episode_length}, {self.rounds}, {self.steps}")


class ZeroCostEnv(gym.Env):
    """CartPole's spaces and a step that does nothing; truncated every ``episode_length`` steps."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, episode_length: int = 500) -> None:
        self.obs, self.t, self.episode_length = np.zeros(4, np.float32), 0, episode_length

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        self.t = 0
        return self.obs, {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        self.t += 1
        return self.obs, 1.0, False, self.t >= self.episode_length, {}


def make_env(env: str, episode_length: int) -> gym.Env:
    """CartPole-v1 or the zero-cost env."""
    return gym.make("CartPole-v1") if env == "cartpole" else ZeroCostEnv(episode_length)


def slice_loops(args: SliceLoopArgs) -> dict[str, Callable[[Any], Any]]:
    """One batch step of each loop, on envs of their own."""
    fns = [partial(make_env, args.env, args.episode_length)] * args.num_envs
    raw = [fn() for fn in fns]
    for i, env in enumerate(raw):
        env.reset(seed=i)

    def plain(actions: np.ndarray) -> None:
        for env, action in zip(raw, actions):
            _, _, terminated, truncated, _ = env.step(action)
            if terminated or truncated:
                env.reset()

    envs = EnvSlice(fns)
    envs.attach(BatchBuffers.allocate(envs.observation_space, len(fns), terminal=True))
    envs.reset(list(range(len(fns))))
    return {"plain loop": plain, "EnvSlice": envs.step}


def main(args: SliceLoopArgs) -> int:
    """A row per loop: median and best us of CPU per env step, and the median over the plain loop."""
    loops = slice_loops(args)
    actions = np.random.default_rng(0).integers(0, 2, (args.steps, args.num_envs))
    cpu: dict[str, list[float]] = {name: [] for name in loops}
    for _ in range(args.rounds):
        for name, step in loops.items():
            start = time.thread_time()
            for batch in actions:
                step(batch)
            cpu[name].append(1e6 * (time.thread_time() - start) / (args.steps * args.num_envs))
    plain = cpu["plain loop"]
    loop = "C" if kernels.report()["step"]["running"] else "Python"
    print(f"{args.env} x {args.num_envs} in one slice, EnvSlice's {loop} loop, {args.rounds} rounds of "
          f"{args.steps} batches, loops taking turns; us of CPU per env step\n")
    print("| loop | median us | best us | over the plain loop (median) |\n|---|---:|---:|---:|")
    for name, us in cpu.items():
        over = statistics.median(a - b for a, b in zip(us, plain))
        print(f"| {name} | {statistics.median(us):.2f} | {min(us):.2f} | {over:+.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(parse_args(SliceLoopArgs, prog="slice_loop.py")))
