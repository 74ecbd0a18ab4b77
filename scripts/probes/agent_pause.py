"""Step time of SubprocVecEnv() (CartPole-v1) when the agent keeps the CPU busy between steps.

    python scripts/probes/agent_pause.py
    python scripts/probes/agent_pause.py --pause-ms 0 1 5 20 --steps 300

Meanwhile the workers wait: they spin for a while, then sleep; how fast a sleeping worker
notices the next step decides what the step costs. Each ``step()`` is timed alone, after a
warm-up; the table gives the median, 90th percentile and mean step time per pause.

What it found: a pause within the workers' spin budget adds little to a step; after a
longer one the step also pays the workers' wake-up. The figures: scripts/BENCHMARKS.md,
"An agent that thinks between steps".

Example:
    >>> row = step_times(pause_s=0.0, steps=3, num_envs=2)
    >>> row.shape
    (3,)
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import gymnasium as gym
import numpy as np

from vec_envs import SubprocVecEnv
from vec_envs.cli.args import parse_args

__all__ = ["AgentPauseArgs", "step_times", "main"]

WARMUP_STEPS = 10


@dataclass
class AgentPauseArgs:
    """Step time of SubprocVecEnv() (CartPole-v1) with a busy pause of the agent between steps."""

    pause_ms: tuple[float, ...] = field(default=(0.0, 1.0, 5.0, 20.0), metadata={
        "help": "the agent's busy pauses between steps, in ms"})
    steps: int = field(default=300, metadata={"help": "steps timed per pause"})
    num_envs: int = field(default=8, metadata={"help": "CartPole-v1 envs"})

    def __post_init__(self) -> None:
        if self.steps < 1 or self.num_envs < 1 or min(self.pause_ms) < 0:
            raise ValueError(f"--steps and --num-envs must be >= 1, --pause-ms >= 0; received {self.steps}, "
                             f"{self.num_envs}, {list(self.pause_ms)}")


def cartpole() -> gym.Env:
    """CartPole-v1."""
    return gym.make("CartPole-v1")


def busy_wait(seconds: float) -> None:
    """Keep this thread on the CPU for ``seconds`` (no sleep: an agent computing)."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def step_times(pause_s: float, steps: int, num_envs: int) -> np.ndarray:
    """Seconds of each timed ``step()``, with a busy pause of ``pause_s`` after each."""
    seconds = np.empty(steps)
    actions = np.zeros(num_envs, np.int64)
    with SubprocVecEnv([cartpole] * num_envs) as venv:
        venv.reset()
        for k in range(WARMUP_STEPS + steps):
            start = time.perf_counter()
            venv.step(actions)
            if k >= WARMUP_STEPS:
                seconds[k - WARMUP_STEPS] = time.perf_counter() - start
            busy_wait(pause_s)
    return seconds


def main(args: AgentPauseArgs) -> int:
    """One row per pause: the median, 90th percentile and mean step time in ms."""
    print(f"SubprocVecEnv(), CartPole-v1 x {args.num_envs}, {args.steps} steps timed per pause\n")
    print("| agent pause ms | step median ms | step p90 ms | step mean ms |\n|---:|---:|---:|---:|")
    for pause in args.pause_ms:
        ms = 1e3 * step_times(pause / 1e3, args.steps, args.num_envs)
        print(f"| {pause:g} | {np.median(ms):.3f} | {np.percentile(ms, 90):.3f} | {ms.mean():.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(parse_args(AgentPauseArgs, prog="agent_pause.py")))
