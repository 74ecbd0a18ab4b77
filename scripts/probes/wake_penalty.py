"""What a sleep costs the code run after it: the CPU of one parent-like batch of
bookkeeping right after sleeping, against the same work back to back.

    python scripts/probes/wake_penalty.py
    python scripts/probes/wake_penalty.py --busy 16   # 16 processes stepping CartPole meanwhile

The work is what a parent does per batch for ``--num-envs`` envs, with no system call: a
comparison and a bytes comparison over the lanes, empty infos, a ``nonzero``, two row
copies. The sleeps take turns, round after round, so drift hits them alike.

What it found: on a shared two-vCPU VM the same work costs several times its back-to-back
CPU after any sleep while other processes run, and after a sleep of a few milliseconds
with none (caches and branch predictors cold again): every line a parent or a worker runs
per batch pays it once it has slept. The figures: scripts/BENCHMARKS.md, "What a sleep costs
the code after it".

Example:
    >>> work = bookkeeping(4)
    >>> len(work())
    6
"""
from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vec_envs.cli.args import parse_args

__all__ = ["WakePenaltyArgs", "bookkeeping", "main"]

BUSY_LOOP = """import os
import gymnasium as gym
parent = os.getppid()
env = gym.make("CartPole-v1"); env.reset(seed=0)
while os.getppid() == parent:  # ends with the probe, however the probe ends
    for _ in range(1000):
        if any(env.step(0)[2:4]):
            env.reset()
"""


@dataclass
class WakePenaltyArgs:
    """The CPU of a parent's per-batch bookkeeping right after a sleep, against back to back."""

    sleeps_ms: str = field(default="0,0.05,0.3,1,3", metadata={"help": "comma-separated sleeps before each batch "
                                                                       "of work, in ms (0: back to back)"})
    busy: int = field(default=0, metadata={"help": "processes stepping CartPole-v1 meanwhile, as workers do"})
    num_envs: int = field(default=256, metadata={"help": "envs the bookkeeping is for (N)"})
    rounds: int = field(default=300, metadata={"help": "batches of work per sleep"})

    def __post_init__(self) -> None:
        if self.num_envs < 1 or self.rounds < 1 or self.busy < 0 or any(
                float(ms) < 0 for ms in self.sleeps_ms.split(",")):
            raise ValueError(f"--num-envs and --rounds must be >= 1, --busy and --sleeps-ms >= 0; received "
                             f"{self.num_envs}, {self.rounds}, {self.busy}, {self.sleeps_ms!r}")


def bookkeeping(num_envs: int) -> Callable[[], Any]:
    """A parent's per-batch work: NumPy over the lanes, the infos, the rows (no syscalls)."""
    answered, expected = np.zeros(num_envs, np.int64), np.zeros(num_envs, np.int64)
    rows, dones = np.zeros((num_envs, 4), np.float32), np.zeros(num_envs, np.bool_)
    quiet = bytes(8 * num_envs)

    def work() -> Any:
        finished = (answered >> 1) == expected
        same = answered.tobytes() == quiet
        infos: list[dict[str, Any]] = [{} for _ in range(num_envs)]
        return finished, same, infos, dones.nonzero()[0], rows.copy(), dones.copy()
    return work


def work_after_sleeps(sleeps: list[float], args: WakePenaltyArgs) -> dict[float, list[float]]:
    """Microseconds of CPU of each batch of work, by the sleep before it."""
    work = bookkeeping(args.num_envs)
    cpu: dict[float, list[float]] = {s: [] for s in sleeps}
    for _ in range(args.rounds):
        for s in sleeps:
            if s:
                time.sleep(s)
            start = time.thread_time()
            work()
            cpu[s].append(1e6 * (time.thread_time() - start))
    return cpu


def main(args: WakePenaltyArgs) -> int:
    """A row per sleep: median us of CPU of the work after it, and its ratio to back to back."""
    sleeps = [float(ms) / 1000 for ms in args.sleeps_ms.split(",")]
    busy = [subprocess.Popen([sys.executable, "-c", BUSY_LOOP]) for _ in range(args.busy)]
    try:
        time.sleep(2.0 if busy else 0.0)  # the busy processes import gymnasium first
        cpu = work_after_sleeps(sleeps, args)
    finally:
        for process in busy:
            process.kill()
            process.wait()
    hot = statistics.median(cpu[0.0]) if 0.0 in cpu else None
    print(f"a parent's bookkeeping for {args.num_envs} envs after each sleep, {args.rounds} rounds, "
          f"{args.busy} processes stepping CartPole-v1 meanwhile, {os.cpu_count()} CPUs; us of CPU\n")
    print("| sleep ms | work us (median) | x back to back |\n|---|---:|---:|")
    for s, us in cpu.items():
        ratio = "n/a" if hot is None else f"{statistics.median(us) / hot:.2f}"
        print(f"| {1000 * s:g} | {statistics.median(us):.1f} | {ratio} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(parse_args(WakePenaltyArgs, prog="wake_penalty.py")))
