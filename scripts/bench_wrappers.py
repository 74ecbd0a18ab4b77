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

import argparse
import statistics
import sys
import time
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402
from gymnasium import spaces  # noqa: E402

from vec_envs import DummyVecEnv, VecEnvBase  # noqa: E402
from wrappers import VecFrameStack, VecMonitor, VecNormalize  # noqa: E402

TARGET_OVERHEAD_PCT = 15.0


@dataclass
class Args:
    """Command-line options (each field is one ``--flag``)."""

    env: str = field(default="synthetic", metadata={"help": "synthetic (84x84x1 uint8 frames) or pong "
                                                             "(ALE/Pong-v5, 84x84 gray, frame skip 4)"})
    backend: str = field(default="subproc", metadata={"help": "dummy or subproc"})
    num_envs: int = field(default=8, metadata={"help": "envs in the batch"})
    steps: int = field(default=20, metadata={"help": "steps timed per round and kind"})
    rounds: int = field(default=100, metadata={"help": "rounds, each timing bare and stack"})
    norm_obs: bool = field(default=True, metadata={"help": "VecNormalize normalizes observations "
                                                           "(--no-norm-obs: rewards only)"})


class SyntheticFrameEnv(gym.Env):
    """84x84x1 uint8 frames cycled from a pre-drawn set: almost no work per step."""

    def __init__(self, episode_length: int = 1000, seed: int = 0):
        self.observation_space = spaces.Box(0, 255, (84, 84, 1), np.uint8)
        self.action_space = spaces.Discrete(6)
        self.frames = np.random.default_rng(seed).integers(0, 256, (16, 84, 84, 1), dtype=np.uint8)
        self.episode_length, self.t = episode_length, 0

    def reset(self, *, seed=None, options=None):
        self.t = 0
        return self.frames[0], {}

    def step(self, action):
        self.t += 1
        reward = float(self.t % 7 == 0)
        return self.frames[self.t % 16], reward, self.t >= self.episode_length, False, {}


def make_pong() -> gym.Env:
    import ale_py

    gym.register_envs(ale_py)
    env = gym.make("ALE/Pong-v5", frameskip=1, repeat_action_probability=0.0)
    return gym.wrappers.AtariPreprocessing(env, frame_skip=4, screen_size=84, grayscale_obs=True,
                                           grayscale_newaxis=True)


def make_backend(args: Args) -> VecEnvBase:
    env_fn: Callable[[], gym.Env] = make_pong if args.env == "pong" else SyntheticFrameEnv
    if args.backend == "subproc":
        try:
            from vec_envs import SubprocVecEnv
        except ImportError:
            print("vec_envs.SubprocVecEnv is not importable yet: measuring DummyVecEnv instead")
            args.backend = "dummy"
        else:
            return SubprocVecEnv([env_fn] * args.num_envs)
    return DummyVecEnv([env_fn] * args.num_envs)


def time_steps(venv: VecEnvBase, actions: np.ndarray) -> float:
    """Seconds per step over ``actions`` (one row per step)."""
    start = time.perf_counter()
    for row in actions:
        venv.step(row)
    return (time.perf_counter() - start) / len(actions)


def measure(args: Args) -> dict[str, list[float]]:
    bare = make_backend(args)
    stack = VecNormalize(VecFrameStack(VecMonitor(bare), 4), norm_obs=args.norm_obs)
    n_actions = bare.action_space.n
    actions = np.random.default_rng(0).integers(0, n_actions, (args.steps, args.num_envs))
    times: dict[str, list[float]] = {"bare": [], "stack": []}
    with stack:
        stack.reset()
        time_steps(stack, actions)  # warm-up
        for k in range(args.rounds):
            for kind in (("bare", "stack") if k % 2 == 0 else ("stack", "bare")):
                times[kind].append(time_steps(bare if kind == "bare" else stack, actions))
    return times


def report(args: Args, times: dict[str, list[float]]) -> None:
    bare, stack = statistics.median(times["bare"]), statistics.median(times["stack"])
    added = statistics.median(s - b for b, s in zip(times["bare"], times["stack"]))
    quartiles = statistics.quantiles([100 * (s / b - 1) for b, s in zip(times["bare"], times["stack"])], n=4)
    print(f"env={args.env} backend={args.backend} num_envs={args.num_envs} steps/round={args.steps} "
          f"rounds={args.rounds} norm_obs={args.norm_obs}")
    print(f"bare backend   : {bare * 1e3:8.3f} ms/step (median)")
    print(f"wrapper stack  : {stack * 1e3:8.3f} ms/step (median)")
    print(f"wrappers add   : {added * 1e3:8.3f} ms/step (median of paired rounds)")
    print(f"per-round overhead quartiles: {', '.join(f'{q:+.1f} %' for q in quartiles)}")
    overhead = 100 * added / bare
    verdict = "meets" if overhead < TARGET_OVERHEAD_PCT else "misses"
    print(f"overhead       : {overhead:+.1f} % ({verdict} the < {TARGET_OVERHEAD_PCT:g} % target)")


def parse_args(argv: list[str] | None = None) -> Args:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for f in fields(Args):
        flag = "--" + f.name.replace("_", "-")
        if f.type in (bool, "bool"):
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=f.default,
                                help=f.metadata["help"])
        else:
            kind: Any = int if f.type in (int, "int") else str
            parser.add_argument(flag, type=kind, default=f.default, help=f.metadata["help"])
    ns = parser.parse_args(argv)
    if ns.env not in ("synthetic", "pong") or ns.backend not in ("dummy", "subproc"):
        parser.error("--env must be synthetic or pong, --backend dummy or subproc")
    if min(ns.num_envs, ns.steps, ns.rounds) < 1:
        parser.error("--num-envs, --steps and --rounds must be >= 1")
    return Args(**vars(ns))


if __name__ == "__main__":
    arguments = parse_args()
    report(arguments, measure(arguments))
