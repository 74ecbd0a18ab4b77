"""Step-time overhead of the wrapper stack over the bare backend, with Atari-sized frames.

Measures ``VecNormalize(VecFrameStack(VecMonitor(backend), 4))`` against ``backend``
itself, on the same backend object. Each round times a block of ``--steps`` steps on
both (pre-sampled actions; which goes first alternates), so drift and the load of a
shared machine hit both alike. Reports the median step time of each, the median of the
paired per-round differences (the time the wrappers add), and that as a percentage of
the bare step.

Usage:
    python scripts/bench_wrappers.py                          # synthetic 84x84x1, subproc
    python scripts/bench_wrappers.py --env pong --backend subproc
    python scripts/bench_wrappers.py --env synthetic --backend dummy --no-norm-obs
"""
from __future__ import annotations

import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SCRIPTS = Path(__file__).resolve().parent
for _path in (str(SCRIPTS.parent), str(SCRIPTS)):
    if _path not in sys.path:
        sys.path.insert(0, _path)

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402
from bench.args import parse  # noqa: E402
from bench.envs import make_ale  # noqa: E402
from bench.extras import require  # noqa: E402
from bench.table import fmt, markdown_table  # noqa: E402
from bench.timing import presample, time_block  # noqa: E402
from gymnasium import spaces  # noqa: E402

from vec_envs import DummyVecEnv, SubprocVecEnv, VecEnvBase  # noqa: E402
from wrappers import VecFrameStack, VecMonitor, VecNormalize  # noqa: E402

TARGET_OVERHEAD_PCT = 15.0
ENVS = ("synthetic", "pong")
BACKENDS = {"dummy": DummyVecEnv, "subproc": SubprocVecEnv}


@dataclass
class Args:
    """The command line of ``bench_wrappers.py``."""

    env: str = field(default="synthetic", metadata={
        "help": "synthetic (84x84x1 uint8 frames) or pong (ALE/Pong-v5, 84x84 gray, frame skip 4)"})
    backend: str = field(default="subproc", metadata={"help": "dummy or subproc"})
    num_envs: int = field(default=8, metadata={"help": "envs in the batch"})
    steps: int = field(default=20, metadata={"help": "steps timed per round and kind"})
    rounds: int = field(default=100, metadata={"help": "rounds, each timing bare and stack"})
    norm_obs: bool = field(default=True, metadata={
        "help": "VecNormalize normalizes observations (--no-norm-obs: rewards only)"})


def _check(args: Args) -> str | None:
    """What is wrong with ``args`` (None: nothing)."""
    if args.env not in ENVS or args.backend not in BACKENDS:
        return f"--env must be one of {ENVS}, --backend one of {tuple(BACKENDS)}; received {args.env!r}, " \
               f"{args.backend!r}"
    if min(args.num_envs, args.steps, args.rounds) < 1:
        return f"--num-envs, --steps and --rounds must be >= 1; received {args.num_envs}, {args.steps}, " \
               f"{args.rounds}"
    return None


class SyntheticFrameEnv(gym.Env):
    """84x84x1 uint8 frames cycled from a pre-drawn set: almost no work per step."""

    def __init__(self, episode_length: int = 1000, seed: int = 0) -> None:
        self.observation_space = spaces.Box(0, 255, (84, 84, 1), np.uint8)
        self.action_space = spaces.Discrete(6)
        self.frames = np.random.default_rng(seed).integers(0, 256, (16, 84, 84, 1), dtype=np.uint8)
        self.episode_length, self.t = episode_length, 0

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        self.t = 0
        return self.frames[0], {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        self.t += 1
        reward = float(self.t % 7 == 0)
        return self.frames[self.t % 16], reward, self.t >= self.episode_length, False, {}


def make_pong() -> gym.Env:
    """ALE/Pong-v5 with frame skip 4 and 84x84 gray frames (no sticky actions)."""
    env = make_ale("ALE/Pong-v5", frameskip=1, repeat_action_probability=0.0)
    return gym.wrappers.AtariPreprocessing(env, frame_skip=4, screen_size=84, grayscale_obs=True,
                                           grayscale_newaxis=True)


def measure(args: Args) -> dict[str, list[float]]:
    """Seconds per step of the bare backend and of the stack, one value per round each."""
    env_fn = make_pong if args.env == "pong" else SyntheticFrameEnv
    bare: VecEnvBase = BACKENDS[args.backend]([env_fn] * args.num_envs)
    stack = VecNormalize(VecFrameStack(VecMonitor(bare), 4), norm_obs=args.norm_obs)
    actions = presample(bare.action_space, args.num_envs, args.steps, seed=0)
    times: dict[str, list[float]] = {"bare": [], "stack": []}
    with stack:
        stack.reset()
        time_block(stack.step, actions)  # warm-up
        for k in range(args.rounds):
            for kind in (("bare", "stack") if k % 2 == 0 else ("stack", "bare")):
                times[kind].append(time_block((bare if kind == "bare" else stack).step, actions))
    return times


def report(args: Args, times: dict[str, list[float]]) -> None:
    """The table of step times, and the overhead against its target."""
    bare, stack = statistics.median(times["bare"]), statistics.median(times["stack"])
    added = statistics.median(s - b for b, s in zip(times["bare"], times["stack"], strict=True))
    overhead = [100 * (s / b - 1) for b, s in zip(times["bare"], times["stack"], strict=True)]
    quartiles = statistics.quantiles(overhead, n=4) if len(overhead) > 1 else overhead * 3
    print(f"env={args.env} backend={args.backend} num_envs={args.num_envs} steps/round={args.steps} "
          f"rounds={args.rounds} norm_obs={args.norm_obs}\n")
    print("\n".join(markdown_table(["", "ms/step (median)"], [
        ["bare backend", fmt(1e3 * bare, ".3f")], ["wrapper stack", fmt(1e3 * stack, ".3f")],
        ["wrappers add (median of paired rounds)", fmt(1e3 * added, "+.3f")]])))
    print(f"\nper-round overhead quartiles: {', '.join(f'{q:+.1f} %' for q in quartiles)}")
    pct = 100 * added / bare
    verdict = "meets" if pct < TARGET_OVERHEAD_PCT else "misses"
    print(f"overhead: {pct:+.1f} % ({verdict} the < {TARGET_OVERHEAD_PCT:g} % target)")


if __name__ == "__main__":
    arguments = parse(Args, None, __doc__.splitlines()[0], _check)
    if arguments.env == "pong":
        require("bench_wrappers.py --env pong", ["ale_py"], "atari")
    report(arguments, measure(arguments))
