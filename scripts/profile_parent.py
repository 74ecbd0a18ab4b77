"""Where the parent's time goes: SubprocVecEnv on CartPole, lock-step or recv/send.

Runs ``--num-envs`` CartPole-v1 envs for ``--seconds`` with random actions and prints the
steps per second and the wall time per batch; ``--profile`` adds the parent's top
functions by own time (cProfile). Lock-step ``step()`` by default, ``recv``/``send`` with
``--batch-size K``. ``--busy-ms 0.2`` adds pure-Python work to each step, 0.2 to 10 times
that, drawn per step (stragglers: what asynchronous batches are for). ``--env zero``
steps envs that cost nothing instead of CartPole, so the time per batch is what
SubprocVecEnv itself costs (with ``--in-series N --step-in-parent``, N = ``--num-envs``, the
parent steps them all itself and no worker process runs: its bookkeeping alone);
``--backend dummy`` times DummyVecEnv instead, the floor for that bookkeeping. The actions
are drawn before the clock starts, so the time per batch is the VecEnv's alone. To compare
two versions of the code, run this script with each on ``PYTHONPATH`` in turn (the package
is installed from /work/main in editable mode), alternating, in one shell command.

    python scripts/profile_parent.py --num-envs 256 --in-series 16 --profile
    python scripts/profile_parent.py --num-envs 8 --env zero
    python scripts/profile_parent.py --num-envs 8 --env zero --in-series 8 --step-in-parent
    python scripts/profile_parent.py --num-envs 8 --env zero --backend dummy
    python scripts/profile_parent.py --num-envs 256 --batch-size 128
    python scripts/profile_parent.py --num-envs 8 --busy-ms 0.2 --batch-size 4
"""
from __future__ import annotations

import argparse
import cProfile
import pstats
import time
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from vec_envs import DummyVecEnv, SubprocVecEnv
from vec_envs.vec_env_base import VecEnvBase


@dataclass
class Args:
    num_envs: int = 256  #: CartPole-v1 envs
    env: str = "cartpole"  #: cartpole, or zero: an env whose step costs nothing (SubprocVecEnv's own cost)
    backend: str = "subproc"  #: subproc, or dummy: DummyVecEnv (the parent's bookkeeping without workers)
    in_series: str = "auto"  #: envs per worker process: an int or "auto"
    step_in_parent: bool = False  #: the parent steps the last slice itself (default: SubprocVecEnv's choice)
    batch_size: int | None = None  #: recv/send batches of this many envs (default: lock-step step())
    busy_ms: float = 0.0  #: pure-Python work per step: 1 to 10 times this many milliseconds
    agent_ms: float = 0.0  #: pure-Python work in the parent per batch (an agent choosing actions)
    seconds: float = 3.0  #: how long to measure (after a short warm-up)
    profile: bool = False  #: print the parent's top functions by own time
    top: int = 15  #: how many functions to print


def parse_args() -> Args:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for name, default in vars(Args()).items():
        kind = int if name in ("num_envs", "top", "batch_size") else float if name.endswith(("seconds", "_ms")) else str
        if isinstance(default, bool):
            parser.add_argument(f"--{name.replace('_', '-')}", action="store_true")
        else:
            parser.add_argument(f"--{name.replace('_', '-')}", type=kind, default=default)
    return Args(**vars(parser.parse_args()))


WARM_UP_S = 0.5  # spin budgets settle before the measurement starts
ACTION_BATCHES = 1024  # drawn before the clock starts, then used in turn


class BusyCartPole(gym.Wrapper):
    """CartPole whose every step also burns ``busy_ms`` x (1 to 10) of CPU in pure Python."""

    def __init__(self, busy_ms: float) -> None:
        super().__init__(gym.make("CartPole-v1"))
        self.busy_s = busy_ms / 1000
        self.rng = np.random.default_rng()

    def step(self, action: int) -> tuple:
        end = time.perf_counter() + self.busy_s * self.rng.uniform(1, 10)
        while time.perf_counter() < end:
            pass
        return self.env.step(action)


class ZeroCostEnv(gym.Env):
    """CartPole's spaces, a step that does nothing: episodes of 500 steps, then truncated."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self) -> None:
        self.obs, self.t = np.zeros(4, np.float32), 0

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple:
        self.t = 0
        return self.obs, {}

    def step(self, action: int) -> tuple:
        self.t += 1
        return self.obs, 1.0, False, self.t >= 500, {}


def make_env(busy_ms: float, env: str = "cartpole") -> gym.Env:
    if env == "zero":
        return ZeroCostEnv()
    return BusyCartPole(busy_ms) if busy_ms > 0 else gym.make("CartPole-v1")


def burn(seconds: float) -> None:
    """Keep the CPU busy for ``seconds`` (pure Python, as an agent's own work would)."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def run(venv: VecEnvBase, batch_size: int | None, seconds: float, agent_s: float,
        profiler: cProfile.Profile | None) -> tuple[int, int, float]:
    """Lock-step steps, or recv/send, for ``seconds`` after a warm-up: (env steps, batches, wall)."""
    actions = np.random.default_rng(0).integers(0, 2, (ACTION_BATCHES, venv.num_envs))
    if batch_size is None:
        venv.reset()
        env_ids = np.arange(venv.num_envs)
    else:
        venv.async_reset()
        env_ids = venv.recv()[4]
    batches, start, end = 0, 0.0, time.perf_counter() + WARM_UP_S
    while time.perf_counter() < end + seconds:
        if batches == 0 and time.perf_counter() >= end:
            start, batches = time.perf_counter(), 1
            if profiler is not None:
                profiler.enable()
        burn(agent_s)
        if batch_size is None:
            venv.step(actions[batches % ACTION_BATCHES])
        else:
            venv.send(actions[batches % ACTION_BATCHES, :len(env_ids)], env_ids)
            env_ids = venv.recv()[4]
        batches += batches > 0
    if profiler is not None:
        profiler.disable()
    return (batches - 1) * len(env_ids), batches - 1, time.perf_counter() - start


def measure(args: Args) -> None:
    in_series: int | str = args.in_series if args.in_series == "auto" else int(args.in_series)
    profiler = cProfile.Profile() if args.profile else None
    options: dict[str, Any] = {} if args.batch_size is None else {"batch_size": args.batch_size}  # older: none
    if args.step_in_parent:
        options["step_in_parent"] = True
    busy_ms, env = args.busy_ms, args.env
    if env not in ("cartpole", "zero"):
        raise SystemExit(f"--env must be cartpole or zero, received {env!r}")
    if args.backend not in ("subproc", "dummy"):
        raise SystemExit(f"--backend must be subproc or dummy, received {args.backend!r}")
    env_fns = [lambda: make_env(busy_ms, env)] * args.num_envs
    if args.backend == "dummy":
        options.pop("step_in_parent", None)
        venv: VecEnvBase = DummyVecEnv(env_fns, **options)
    else:
        venv = SubprocVecEnv(env_fns, in_series=in_series, **options)
    try:
        steps, batches, wall = run(venv, args.batch_size, args.seconds, args.agent_ms / 1000, profiler)
        mode = "step()" if args.batch_size is None else f"recv/send batch {args.batch_size}"
        busy = f" (+ {busy_ms:g}-{10 * busy_ms:g} ms work per step)" if busy_ms else ""
        busy += f" (+ {args.agent_ms:g} ms agent work per batch)" if args.agent_ms else ""
        name = "zero-cost env" if env == "zero" else "CartPole-v1"
        where = f"{len(venv.workers)} workers" if isinstance(venv, SubprocVecEnv) else "DummyVecEnv"
        print(f"{name}{busy} x {args.num_envs}, {where}, {mode}: {steps / wall:,.0f} steps/s, "
              f"{wall / batches * 1e6:,.1f} us per batch")
    finally:
        venv.close()
    if profiler is not None:
        pstats.Stats(profiler).sort_stats("tottime").print_stats(args.top)


if __name__ == "__main__":
    measure(parse_args())
