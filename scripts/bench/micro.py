"""The focused measurements: the wrapper stack, the interop adapters, Ray.
Each is an ``Args`` dataclass (a subcommand of
``scripts/benchmark.py``) and a ``run_*`` function that measures and prints its table.

Contenders that are compared take turns (rounds alternate, repeats go round-robin), so
drift and the load of a shared machine hit them alike.

Example:
    >>> WrappersArgs(rounds=0)
    Traceback (most recent call last):
    ...
    ValueError: --num-envs, --steps and --rounds must be >= 1; received 8, 20, 0
"""
from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Literal

import numpy as np

from bench.envs import ENVS, SyntheticFrameEnv, make_env, make_pong
from bench.report import LatencyStats, fmt, markdown_table
from vec_envs import DummyVecEnv, SubprocVecEnv, VecEnvBase
from vec_envs.cli.args import in_series_arg
from vec_envs.timing.loops import presample, time_block, time_calls

__all__ = ["WrappersArgs", "run_wrappers", "InteropArgs", "run_interop", "RayArgs", "run_ray"]

BACKENDS: dict[str, Any] = {"dummy": DummyVecEnv, "subproc": SubprocVecEnv}
CELL_TIMEOUT_S = 300.0


def _at_least_one(**values: int) -> None:
    """Raise ValueError naming the options below 1."""
    if min(values.values()) < 1:
        names = [f"--{k.replace('_', '-')}" for k in values]
        raise ValueError(f"{', '.join(names[:-1])} and {names[-1]} must be >= 1; received "
                         f"{', '.join(map(str, values.values()))}")


# ---------------------------------------------------------------- the wrapper stack
WRAPPERS_TARGET_PCT = 15.0


@dataclass
class WrappersArgs:
    """What VecNormalize(VecFrameStack(VecMonitor(backend), 4)) adds to a step of the bare backend.

    Rounds time a block of --steps steps on both, on the same backend object, alternating which goes first.
    """

    env: Literal["synthetic", "pong"] = field(default="synthetic", metadata={
        "help": "synthetic (84x84x1 uint8 frames) or pong (ALE/Pong-v5, 84x84 gray, frame skip 4)"})
    backend: Literal["dummy", "subproc"] = field(default="subproc", metadata={"help": "the backend wrapped"})
    num_envs: int = field(default=8, metadata={"help": "envs in the batch"})
    steps: int = field(default=20, metadata={"help": "steps timed per round and kind"})
    rounds: int = field(default=100, metadata={"help": "rounds, each timing bare and stack"})
    norm_obs: bool = field(default=True, metadata={"help": "VecNormalize normalizes observations (else rewards only)"})

    def __post_init__(self) -> None:
        _at_least_one(num_envs=self.num_envs, steps=self.steps, rounds=self.rounds)


def _wrapper_times(args: WrappersArgs) -> dict[str, list[float]]:
    """Seconds per step of the bare backend and of the stack, one value per round each."""
    from vec_envs.wrappers import VecFrameStack, VecMonitor, VecNormalize

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


def run_wrappers(args: WrappersArgs) -> int:
    """The table of step times, and the overhead against its target."""
    times = _wrapper_times(args)
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
    verdict = "meets" if pct < WRAPPERS_TARGET_PCT else "misses"
    print(f"overhead: {pct:+.1f} % ({verdict} the < {WRAPPERS_TARGET_PCT:g} % target)")
    return 0


# ---------------------------------------------------------------- the interop adapters
CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}
INTEROP_BASELINE = {"to_gymnasium": "direct", "to_sb3": "direct", "from_gymnasium": "gymnasium-sync",
                    "from_gym-same": "gymnasium-same"}  # contender -> what its overhead is measured against


@dataclass
class InteropArgs:
    """What each interop adapter adds to a step (CartPole-v1, random actions), side by side.

    direct: venv.step; to_gymnasium / to_sb3: the same VecEnv adapted; gymnasium-sync / from_gymnasium:
    SyncVectorEnv alone and adapted; gymnasium-same / from_gym-same: the same with same-step autoreset.
    --clock cpu counts this process's CPU time: on a busy machine it leaves out waiting for a core.
    """

    backend: Literal["dummy", "subproc"] = field(default="dummy", metadata={"help": "the VecEnv adapted"})
    num_envs: int = field(default=8, metadata={"help": "envs per batch"})
    steps: int = field(default=500, metadata={"help": "batch steps per round"})
    rounds: int = field(default=20, metadata={"help": "rounds per contender (interleaved)"})
    clock: Literal["wall", "cpu"] = field(default="wall", metadata={
        "help": "wall: perf_counter; cpu: this process's CPU time (process_time)"})

    def __post_init__(self) -> None:
        _at_least_one(num_envs=self.num_envs, steps=self.steps, rounds=self.rounds)


def _interop_contenders(args: InteropArgs) -> dict[str, tuple[Callable[[Any], Any], Callable[[], Any]]]:
    """name -> (step, close); the first three share one VecEnv."""
    from gymnasium.vector import AutoresetMode, SyncVectorEnv

    from vec_envs.interop import from_gymnasium, to_gymnasium, to_sb3

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


def run_interop(args: InteropArgs) -> int:
    """One line per contender: median us per batch step, and its overhead over its baseline."""
    rng = np.random.default_rng(0)
    runs = _interop_contenders(args)
    times: dict[str, list[float]] = {name: [] for name in runs}
    try:
        for _ in range(args.rounds):
            for name, (step, _) in runs.items():
                actions = rng.integers(0, 2, size=(args.steps, args.num_envs))
                times[name].append(1e6 * time_block(step, actions, CLOCKS[args.clock]))
    finally:
        for _, close in runs.values():
            close()
    medians = {name: statistics.median(t) for name, t in times.items()}
    print(f"CartPole-v1 x {args.num_envs}, {args.backend} backend, {args.rounds} rounds of {args.steps} steps, "
          f"{args.clock} clock")
    print(f"{'contender':<16}{'us/step (median)':>18}{'overhead':>22}")
    for name, median in medians.items():
        ref = INTEROP_BASELINE.get(name)
        extra = "" if ref is None else f"{median - medians[ref]:+.1f} us ({median / medians[ref] - 1:+.1%})"
        print(f"{name:<16}{median:>18.1f}{extra:>22}")
    return 0


# ---------------------------------------------------------------- RayVecEnv against SubprocVecEnv
RAY_WORKLOADS = {"cartpole": 64, "pong": 8}  # env of bench.envs -> envs in the batch


@dataclass
class RayArgs:
    """RayVecEnv against SubprocVecEnv: per-step latency and env steps/s, and the bare Ray round trip.

    Ray runs locally (started by the first RayVecEnv, stopped at the end); set
    RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 RAY_AUTH_MODE=disabled to keep it on loopback.
    """

    workloads: str = field(default="cartpole,pong", metadata={
        "help": "comma-separated: cartpole (CartPole-v1 x 64), pong (ALE/Pong-v5 x 8)"})
    steps: int = field(default=300, metadata={"help": "timed step() calls per measurement"})
    warmup: int = field(default=30, metadata={"help": "untimed step() calls before each measurement"})
    repeats: int = field(default=3, metadata={"help": "measurements per (workload, backend), round-robin"})
    in_series: int | str = field(default="auto", metadata={
        "help": "envs per worker, both backends: an int or 'auto'", "type": in_series_arg})
    pings: int = field(default=300, metadata={"help": "no-op Ray actor calls timed for the bare round trip"})

    def __post_init__(self) -> None:
        unknown = set(self.workloads.split(",")) - set(RAY_WORKLOADS)
        if unknown:
            raise ValueError(f"--workloads: unknown {sorted(unknown)}; expected a comma-separated subset of "
                             f"{list(RAY_WORKLOADS)}")
        _at_least_one(steps=self.steps, repeats=self.repeats, pings=self.pings)


def _ray_cell(backend: Any, env: str, args: RayArgs) -> dict[str, Any]:
    """Build and reset (timed), warm up, then time ``args.steps`` single steps."""
    num_envs = RAY_WORKLOADS[env]
    start = time.perf_counter()
    venv = backend([partial(make_env, env)] * num_envs, in_series=args.in_series)
    try:
        venv.seed(0)
        venv.reset()
        build_s = time.perf_counter() - start
        actions = presample(venv.action_space, num_envs, args.warmup + args.steps, seed=0)
        time_calls(venv.step, actions[:args.warmup])
        seconds = time_calls(venv.step, actions[args.warmup:])
        workers = len(venv.workers)
    finally:
        venv.close()
    return {"build_s": build_s, "workers": workers, "latency": LatencyStats.of(seconds),
            "steps_per_s": num_envs * len(seconds) / seconds.sum()}


def _ray_round_trip(pings: int) -> LatencyStats:
    """Call times of a no-op method on a fresh RayVecEnv actor."""
    import ray

    from vec_envs import RayVecEnv

    venv: Any = RayVecEnv([partial(make_env, "cartpole")])
    with venv:
        actor = venv.workers[0].actor
        ray.get(actor.where.remote())
        return LatencyStats.of(time_calls(lambda _: ray.get(actor.where.remote()), range(pings)))


def _ray_rows(results: dict[tuple[str, str], list[dict[str, Any]]]) -> list[list[str]]:
    """One row per (workload, backend): medians over the repeats."""
    rows = []
    for (env, backend), runs in results.items():
        latency = statistics.median(run["latency"].median_ms for run in runs)
        p90 = statistics.median(run["latency"].p90_ms for run in runs)
        rows.append([f"{ENVS[env]} x {RAY_WORKLOADS[env]}", backend, str(runs[0]["workers"]),
                     fmt(statistics.median(r["build_s"] for r in runs), ".1f"), f"{latency:.2f} ({p90:.2f})",
                     fmt(statistics.median(r["steps_per_s"] for r in runs))])
    return rows


def run_ray(args: RayArgs) -> int:
    """Measure every (workload, backend) round-robin, then the bare round trip; print the table."""
    import ray

    from vec_envs import RayVecEnv

    backends: dict[str, Any] = {"SubprocVecEnv": SubprocVecEnv, "RayVecEnv": RayVecEnv}
    results: dict[tuple[str, str], list[dict[str, Any]]] = {}
    try:
        for env in args.workloads.split(","):
            for _ in range(args.repeats):
                for name, backend in backends.items():
                    results.setdefault((env, name), []).append(_ray_cell(backend, env, args))
        round_trip = _ray_round_trip(args.pings)
    finally:
        ray.shutdown()  # the runtime the first RayVecEnv started
    print(f"\n{os.cpu_count()} CPUs, in_series={args.in_series!r}, {args.steps} timed steps, "
          f"median of {args.repeats} repeat(s)\n")
    header = ["workload", "backend", "workers", "build s", "step latency ms (p90)", "env steps/s"]
    print("\n".join(markdown_table(header, _ray_rows(results), "llrrrr")))
    print(f"\nbare Ray round trip (no-op actor call): {round_trip.median_ms:.2f} ms median")
    return 0
