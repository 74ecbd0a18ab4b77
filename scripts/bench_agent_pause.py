"""Step time of SubprocVecEnv when the agent thinks between steps.

A real agent spends time between ``step()`` calls (a policy forward pass, a learning
update). Meanwhile the workers wait: they spin for a while, then sleep, and how fast a
sleeping worker notices the next step decides what the step costs. This times each
``step()`` alone, with a busy pause of ``--pause-ms`` (the agent) between steps.

Usage:
    python scripts/bench_agent_pause.py                      # pauses 0, 1, 5, 20 ms
    python scripts/bench_agent_pause.py --pause-ms 20 --steps 500
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parent
for _path in (str(SCRIPTS.parent), str(SCRIPTS)):
    if _path not in sys.path:
        sys.path.insert(0, _path)

from functools import partial  # noqa: E402

import numpy as np  # noqa: E402
from bench.args import parse  # noqa: E402
from bench.envs import make_env  # noqa: E402
from bench.table import LatencyStats, markdown_table  # noqa: E402
from bench.timing import time_calls  # noqa: E402

from vec_envs import SubprocVecEnv  # noqa: E402

WARMUP_STEPS = 10


@dataclass
class Args:
    """The command line of ``bench_agent_pause.py``."""

    pause_ms: tuple[float, ...] = field(default=(0.0, 1.0, 5.0, 20.0), metadata={
        "help": "the agent's busy pauses between steps, in ms", "type": float})
    steps: int = field(default=300, metadata={"help": "steps timed per pause"})
    num_envs: int = field(default=8, metadata={"help": "CartPole-v1 envs"})


def _check(args: Args) -> str | None:
    """What is wrong with ``args`` (None: nothing)."""
    if args.steps < 1 or args.num_envs < 1 or not args.pause_ms or min(args.pause_ms) < 0:
        return (f"--steps and --num-envs must be >= 1 and --pause-ms at least one value >= 0; received "
                f"{args.steps}, {args.num_envs}, {list(args.pause_ms)}")
    return None


def step_times(pause_s: float, steps: int, num_envs: int) -> np.ndarray:
    """Seconds of each ``step()`` after a warm-up, with a busy pause after each."""
    with SubprocVecEnv([partial(make_env, "cartpole")] * num_envs) as venv:
        venv.reset()
        actions = np.zeros((WARMUP_STEPS + steps, num_envs), np.int64)
        return time_calls(venv.step, actions, pause_s)[WARMUP_STEPS:]


def main(argv: list[str] | None = None) -> None:
    args = parse(Args, argv, __doc__.splitlines()[0], _check)
    rows = [[f"{pause:g}", *LatencyStats.of(step_times(pause / 1e3, args.steps, args.num_envs)).cells()]
            for pause in args.pause_ms]
    print(f"SubprocVecEnv(), CartPole-v1 x {args.num_envs}, {args.steps} steps timed per pause\n")
    print("\n".join(markdown_table(["agent pause ms", *(f"step {h}" for h in LatencyStats.HEADER)], rows)))


if __name__ == "__main__":
    main()
