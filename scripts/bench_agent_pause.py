"""Step time of SubprocVecEnv when the agent thinks between steps.

A real agent spends time between ``step()`` calls (a policy forward pass, a learning
update). Meanwhile the workers wait: they spin for a while, then sleep, and how fast a
sleeping worker notices the next step decides what the step costs. This times ``step()``
alone, with a busy pause of ``--pause-ms`` (the agent) between steps.

Usage:
    python scripts/bench_agent_pause.py                      # pauses 0, 1, 5, 20 ms
    python scripts/bench_agent_pause.py --pause-ms 20 --steps 500
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402

from vec_envs import SubprocVecEnv  # noqa: E402


def make_env() -> gym.Env:
    return gym.make("CartPole-v1")


def step_times(pause_s: float, steps: int, num_envs: int) -> np.ndarray:
    """Milliseconds of each ``step()`` (the first 10 dropped), with a busy pause between steps."""
    with SubprocVecEnv([make_env] * num_envs) as venv:
        venv.reset()
        actions = np.zeros(num_envs, np.int64)
        times = []
        for _ in range(steps + 10):
            start = time.perf_counter()
            venv.step(actions)
            times.append(time.perf_counter() - start)
            end = time.perf_counter() + pause_s
            while time.perf_counter() < end:  # the agent thinks, on the CPU
                pass
    return 1e3 * np.array(times[10:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pause-ms", type=float, nargs="*", default=[0.0, 1.0, 5.0, 20.0],
                        help="agent pauses between steps, in ms")
    parser.add_argument("--steps", type=int, default=300, help="steps timed per pause")
    parser.add_argument("--num-envs", type=int, default=8, help="CartPole-v1 envs")
    args = parser.parse_args()
    if args.steps < 1 or args.num_envs < 1 or any(p < 0 for p in args.pause_ms):
        parser.error("--steps and --num-envs must be >= 1, pauses >= 0")
    print(f"SubprocVecEnv(), CartPole-v1 x {args.num_envs}, {args.steps} steps per pause")
    for pause in args.pause_ms:
        t = step_times(pause / 1e3, args.steps, args.num_envs)
        print(f"pause {pause:5.1f} ms: step median {np.median(t):.3f} ms, p90 {np.percentile(t, 90):.3f} ms, "
              f"mean {t.mean():.3f} ms")


if __name__ == "__main__":
    main()
