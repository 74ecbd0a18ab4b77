"""What each interop adapter adds to a step, measured side by side in one run.

Contenders, all over the same envs (CartPole-v1 x ``--num-envs``, random actions):

- ``direct``: ``venv.step(actions)`` on the VecEnv itself;
- ``to_gymnasium``: the same VecEnv through ``to_gymnasium`` (5-tuple, batched infos);
- ``to_sb3``: the same VecEnv through ``to_sb3``;
- ``gymnasium-sync`` / ``from_gymnasium``: gymnasium's ``SyncVectorEnv`` used directly,
  and behind ``from_gymnasium`` (next-step autoreset turned into same-step);
- ``gymnasium-same`` / ``from_gym-same``: the same with ``SyncVectorEnv(...,
  autoreset_mode=AutoresetMode.SAME_STEP)``, which ``from_gymnasium`` takes as it is.

Rounds alternate between the contenders, so machine noise hits them alike; each round
times a block of ``--steps`` steps as one (``bench.timing.time_block``); the table gives
the median microseconds per batch step and the overhead against the direct use.
``--clock cpu`` counts this process's CPU time instead of wall time: on a busy machine it
leaves out the time the process waits for a core, and an adapter's overhead is CPU work
in this process (with the dummy backend, so is all of the step).

Usage:
    python scripts/bench_interop.py                      # DummyVecEnv, 8 envs, wall time
    python scripts/bench_interop.py --clock cpu          # on a busy machine
    python scripts/bench_interop.py --backend subproc --rounds 30
"""
from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

SCRIPTS = Path(__file__).resolve().parent
for _path in (str(SCRIPTS.parent), str(SCRIPTS)):
    if _path not in sys.path:
        sys.path.insert(0, _path)

import numpy as np  # noqa: E402
from bench.args import parse  # noqa: E402
from bench.envs import make_env  # noqa: E402
from bench.timing import time_block  # noqa: E402
from gymnasium.vector import AutoresetMode, SyncVectorEnv  # noqa: E402

from vec_envs import DummyVecEnv, SubprocVecEnv  # noqa: E402
from vec_envs.interop import from_gymnasium, to_gymnasium, to_sb3  # noqa: E402

CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}
BACKENDS = {"dummy": DummyVecEnv, "subproc": SubprocVecEnv}
#: contender -> the contender its overhead is measured against
BASELINE = {"to_gymnasium": "direct", "to_sb3": "direct", "from_gymnasium": "gymnasium-sync",
            "from_gym-same": "gymnasium-same"}


@dataclass
class Args:
    """The command line of ``bench_interop.py``."""

    backend: str = field(default="dummy", metadata={"help": "the VecEnv adapted: dummy or subproc"})
    num_envs: int = field(default=8, metadata={"help": "envs per batch"})
    steps: int = field(default=500, metadata={"help": "batch steps per round"})
    rounds: int = field(default=20, metadata={"help": "rounds per contender (interleaved)"})
    clock: str = field(default="wall", metadata={
        "help": "wall: perf_counter; cpu: this process's CPU time (process_time)"})


def _check(args: Args) -> str | None:
    """What is wrong with ``args`` (None: nothing)."""
    if args.backend not in BACKENDS or args.clock not in CLOCKS:
        return (f"--backend must be one of {list(BACKENDS)}, --clock one of {list(CLOCKS)}; received "
                f"{args.backend!r}, {args.clock!r}")
    if min(args.num_envs, args.steps, args.rounds) < 1:
        return "--num-envs, --steps and --rounds must be >= 1"
    return None


def contenders(args: Args) -> dict[str, tuple[Callable[[np.ndarray], Any], Callable[[], Any]]]:
    """name -> (step, close); the first three share one VecEnv."""
    fns = [partial(make_env, "cartpole")] * args.num_envs
    venv = BACKENDS[args.backend](fns)
    venv.reset()
    gym_view, sb3_view = to_gymnasium(venv), to_sb3(venv)
    sync, same = SyncVectorEnv(fns), SyncVectorEnv(fns, autoreset_mode=AutoresetMode.SAME_STEP)
    adapted = from_gymnasium(SyncVectorEnv(fns))
    adapted_same = from_gymnasium(SyncVectorEnv(fns, autoreset_mode=AutoresetMode.SAME_STEP))
    for vector_env in (sync, same):
        vector_env.reset(seed=0)
    for adapter in (adapted, adapted_same):
        adapter.reset()
    return {"direct": (venv.step, venv.close), "to_gymnasium": (gym_view.step, gym_view.close),
            "to_sb3": (sb3_view.step, sb3_view.close), "gymnasium-sync": (sync.step, sync.close),
            "from_gymnasium": (adapted.step, adapted.close), "gymnasium-same": (same.step, same.close),
            "from_gym-same": (adapted_same.step, adapted_same.close)}


def measure(args: Args) -> dict[str, list[float]]:
    """Microseconds per batch step of every contender, one value per round."""
    rng = np.random.default_rng(0)
    runs = contenders(args)
    times: dict[str, list[float]] = {name: [] for name in runs}
    try:
        for _ in range(args.rounds):
            for name, (step, _) in runs.items():
                actions = rng.integers(0, 2, size=(args.steps, args.num_envs))
                times[name].append(1e6 * time_block(step, actions, CLOCKS[args.clock]))
    finally:
        for _, close in runs.values():
            close()
    return times


def report(args: Args, times: dict[str, list[float]]) -> None:
    """One line per contender: median us per step, and its overhead over its baseline."""
    medians = {name: statistics.median(t) for name, t in times.items()}
    print(f"CartPole-v1 x {args.num_envs}, {args.backend} backend, {args.rounds} rounds of {args.steps} steps, "
          f"{args.clock} clock")
    print(f"{'contender':<16}{'us/step (median)':>18}{'overhead':>22}")
    for name, median in medians.items():
        ref = BASELINE.get(name)
        extra = "" if ref is None else f"{median - medians[ref]:+.1f} us ({median / medians[ref] - 1:+.1%})"
        print(f"{name:<16}{median:>18.1f}{extra:>22}")


if __name__ == "__main__":
    arguments = parse(Args, None, __doc__.split("\n\n")[0], _check)
    report(arguments, measure(arguments))
