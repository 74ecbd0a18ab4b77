"""What each interop adapter adds to a step, measured side by side in one run.

Contenders, all over the same envs (CartPole-v1 x ``--num-envs``, random actions):

- ``direct``: ``venv.step(actions)`` on the VecEnv itself;
- ``to_gymnasium``: the same VecEnv through ``to_gymnasium`` (5-tuple, batched infos);
- ``to_sb3``: the same VecEnv through ``to_sb3``;
- ``gymnasium-sync`` / ``from_gymnasium``: gymnasium's ``SyncVectorEnv`` used directly,
  and behind ``from_gymnasium`` (next-step autoreset turned into same-step);
- ``gymnasium-same`` / ``from_gym-same``: the same with ``SyncVectorEnv(...,
  autoreset_mode=AutoresetMode.SAME_STEP)``, which ``from_gymnasium`` takes as it is.

Rounds alternate between the contenders, so machine noise hits them alike; the table
gives the median microseconds per batch step and the overhead against the direct use.
``--clock cpu`` counts this process's CPU time instead of wall time: on a busy machine it
leaves out the time the process waits for a core, and an adapter's overhead is CPU work
in this process (with the dummy backend, so is all of the step).

    python scripts/bench_interop.py                      # DummyVecEnv, 8 envs, wall time
    python scripts/bench_interop.py --clock cpu          # on a busy machine
    python scripts/bench_interop.py --backend subproc --rounds 30
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402
from gymnasium.vector import AutoresetMode, SyncVectorEnv  # noqa: E402

from vec_envs import DummyVecEnv, SubprocVecEnv  # noqa: E402
from vec_envs.interop import from_gymnasium, to_gymnasium, to_sb3  # noqa: E402


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=("dummy", "subproc"), default="dummy", help="the VecEnv adapted")
    parser.add_argument("--num-envs", type=int, default=8, help="envs per batch")
    parser.add_argument("--steps", type=int, default=500, help="batch steps per round")
    parser.add_argument("--rounds", type=int, default=20, help="rounds per contender (interleaved)")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="wall: perf_counter; cpu: this process's CPU time (process_time)")
    return parser.parse_args(argv)


def make_cartpole() -> gym.Env:
    return gym.make("CartPole-v1")


def timed_round(step: Callable[[np.ndarray], Any], actions: np.ndarray, clock: Callable[[], float]) -> float:
    """Microseconds per batch step over one round."""
    start = clock()
    for row in actions:
        step(row)
    return (clock() - start) / len(actions) * 1e6


def contenders(args: argparse.Namespace) -> dict[str, tuple[Callable[[np.ndarray], Any], Callable[[], Any]]]:
    """name -> (step, close); the first three share one VecEnv."""
    fns = [make_cartpole] * args.num_envs
    venv = DummyVecEnv(fns) if args.backend == "dummy" else SubprocVecEnv(fns)
    venv.reset()
    gym_view, sb3_view = to_gymnasium(venv), to_sb3(venv)
    sync = SyncVectorEnv(fns)
    sync.reset(seed=0)
    adapted = from_gymnasium(SyncVectorEnv(fns))
    adapted.reset()
    same = SyncVectorEnv(fns, autoreset_mode=AutoresetMode.SAME_STEP)
    same.reset(seed=0)
    adapted_same = from_gymnasium(SyncVectorEnv(fns, autoreset_mode=AutoresetMode.SAME_STEP))
    adapted_same.reset()
    return {"direct": (venv.step, venv.close), "to_gymnasium": (gym_view.step, gym_view.close),
            "to_sb3": (sb3_view.step, sb3_view.close), "gymnasium-sync": (sync.step, sync.close),
            "from_gymnasium": (adapted.step, adapted.close), "gymnasium-same": (same.step, same.close),
            "from_gym-same": (adapted_same.step, adapted_same.close)}


def main(args: argparse.Namespace) -> None:
    rng = np.random.default_rng(0)
    clock = time.perf_counter if args.clock == "wall" else time.process_time
    runs = contenders(args)
    times: dict[str, list[float]] = {name: [] for name in runs}
    try:
        for _ in range(args.rounds):
            for name, (step, _) in runs.items():
                times[name].append(timed_round(step, rng.integers(0, 2, size=(args.steps, args.num_envs)), clock))
    finally:
        for _, close in runs.values():
            close()
    medians = {name: statistics.median(t) for name, t in times.items()}
    base = {"to_gymnasium": "direct", "to_sb3": "direct", "from_gymnasium": "gymnasium-sync",
            "from_gym-same": "gymnasium-same"}
    print(f"CartPole-v1 x {args.num_envs}, {args.backend} backend, {args.rounds} rounds of {args.steps} steps, "
          f"{args.clock} clock")
    print(f"{'contender':<16}{'us/step (median)':>18}{'overhead':>22}")
    for name, median in medians.items():
        ref = base.get(name)
        extra = "" if ref is None else f"{median - medians[ref]:+.1f} us ({median / medians[ref] - 1:+.1%})"
        print(f"{name:<16}{median:>18.1f}{extra:>22}")


if __name__ == "__main__":
    main(parse_args())
