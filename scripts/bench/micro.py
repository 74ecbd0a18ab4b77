"""The focused measurements: ALEVecEnv on W4, the wrapper stack, the interop adapters, Ray,
an agent that pauses between steps, the slice's step loop, what a sleep costs the code run
after it. Each is an ``Args`` dataclass (a subcommand of
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
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Literal

import numpy as np

from bench.envs import ENVS, WORKLOADS, SyntheticFrameEnv, make_env, make_pong
from bench.harness import presample, time_block, time_calls
from bench.report import LatencyStats, fmt, markdown_table
from vec_envs import DummyVecEnv, SubprocVecEnv, VecEnvBase
from vec_envs.cli.args import in_series_arg

__all__ = ["AleArgs", "run_ale", "WrappersArgs", "run_wrappers", "InteropArgs", "run_interop", "RayArgs",
           "run_ray", "AgentPauseArgs", "run_agent_pause", "SliceLoopArgs", "run_slice_loop", "WakePenaltyArgs",
           "run_wake_penalty"]

BACKENDS: dict[str, Any] = {"dummy": DummyVecEnv, "subproc": SubprocVecEnv}
CELL_TIMEOUT_S = 300.0


def _at_least_one(**values: int) -> None:
    """Raise ValueError naming the options below 1."""
    if min(values.values()) < 1:
        names = [f"--{k.replace('_', '-')}" for k in values]
        raise ValueError(f"{', '.join(names[:-1])} and {names[-1]} must be >= 1; received "
                         f"{', '.join(map(str, values.values()))}")


# ---------------------------------------------------------------- ALEVecEnv on W4
ALE_METHODS = {  # key -> (the workloads command's method, label in this table)
    "sync": ("gym-sync", "gymnasium SyncVectorEnv + in-script stack"),
    "subproc": ("subproc", "SubprocVecEnv() + VecFrameStack"),
    "ale": ("ale", "ALEVecEnv(frame_stack=4), step()"),
    "ale-async4": ("ale-async", "ALEVecEnv(batch_size=4), recv/send"),
    "ale-async2": ("ale-async-4", "ALEVecEnv(batch_size=2), recv/send"),
    "engine": ("ale-engine", "ale-py AtariVectorEnv (raw engine)"),
}


@dataclass
class AleArgs:
    """ALEVecEnv on W4 (Breakout 84x84 gray + frame stack 4 x 8) beside SyncVectorEnv, SubprocVecEnv, ale-py.

    The cells of the workloads command (a fresh process each), repeats round-robin over the methods.
    """

    methods: str = field(default=",".join(ALE_METHODS), metadata={"help": f"comma-separated, of {list(ALE_METHODS)}"})
    repeats: int = field(default=3, metadata={"help": "cells per method, round-robin"})
    window: float = field(default=5.0, metadata={"help": "seconds of each timed window"})
    warmup: float = field(default=1.0, metadata={"help": "seconds stepped before the window"})
    seed: int = field(default=0, metadata={"help": "seeds the envs and the pre-sampled actions"})

    def __post_init__(self) -> None:
        unknown = sorted(set(self.methods.split(",")) - set(ALE_METHODS))
        if unknown:
            raise ValueError(f"--methods: unknown {unknown}; expected some of {list(ALE_METHODS)}")
        if self.repeats < 1 or self.window <= 0 or self.warmup < 0:
            raise ValueError("--repeats must be >= 1, --window > 0, --warmup >= 0")


def _ale_cells(args: AleArgs) -> dict[str, list[dict[str, Any]]]:
    """Every cell's record, by method key; exits with the error of a cell that failed."""
    from bench.contenders import METHODS, unavailable
    from bench.harness import CellSpec
    from bench.tree import run_cell_process

    keys = args.methods.split(",")
    for key in keys:
        why = unavailable(METHODS[ALE_METHODS[key][0]], WORKLOADS["W4"])
        if why:
            raise SystemExit(f"benchmark.py ale: {key}: {why}")
    cells: dict[str, list[dict[str, Any]]] = {key: [] for key in keys}
    for repeat in range(args.repeats):
        for key in keys[repeat % len(keys):] + keys[:repeat % len(keys)]:
            spec = CellSpec("W4", ALE_METHODS[key][0], repeat, args.seed, args.window, args.warmup, handshake=True)
            record = run_cell_process(spec, CELL_TIMEOUT_S)
            if "error" in record:
                raise SystemExit(f"benchmark.py ale: {key} failed: {record['error']}")
            cells[key].append(record)
            print(f"repeat {repeat + 1}/{args.repeats} {key}: {record['steps_per_s']:.0f} steps/s", file=sys.stderr)
    return cells


def run_ale(args: AleArgs) -> int:
    """One row per method: median steps/s, every run, the ratio to SyncVectorEnv, steps per CPU s."""
    from bench.report import summarize

    cells = _ale_cells(args)
    sums = summarize([{"workload": "W4", "method": key, **cell} for key, runs in cells.items() for cell in runs])
    sync = sums["W4", "sync"].rate if "sync" in cells else None
    rows = [[ALE_METHODS[key][1], f"{sums['W4', key].rate:.0f}", ", ".join(f"{c['steps_per_s']:.0f}" for c in runs),
             f"{sums['W4', key].rate / sync:.2f}" if sync else "-", f"{sums['W4', key].per_cpu_s:.0f}"]
            for key, runs in cells.items()]
    print(f"\nW4: {WORKLOADS['W4'].title}, {args.repeats} x {args.window:g} s windows\n")
    header = ["method", "env steps/s (median)", "runs", "x SyncVectorEnv", "env steps per CPU s"]
    print("\n".join(markdown_table(header, rows, "lrlrr")))
    return 0


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


# ---------------------------------------------------------------- an agent pausing between steps
AGENT_WARMUP_STEPS = 10


@dataclass
class AgentPauseArgs:
    """Step time of SubprocVecEnv() (CartPole-v1) when the agent keeps the CPU busy between steps.

    Meanwhile the workers wait: they spin for a while, then sleep; how fast a sleeping worker
    notices the next step decides what the step costs. Each step() is timed alone.
    """

    pause_ms: tuple[float, ...] = field(default=(0.0, 1.0, 5.0, 20.0), metadata={
        "help": "the agent's busy pauses between steps, in ms"})
    steps: int = field(default=300, metadata={"help": "steps timed per pause"})
    num_envs: int = field(default=8, metadata={"help": "CartPole-v1 envs"})

    def __post_init__(self) -> None:
        _at_least_one(steps=self.steps, num_envs=self.num_envs)
        if min(self.pause_ms) < 0:
            raise ValueError(f"--pause-ms must be >= 0; received {list(self.pause_ms)}")


def _paused_step_times(pause_s: float, steps: int, num_envs: int) -> np.ndarray:
    """Seconds of each ``step()`` after a warm-up, with a busy pause after each."""
    with SubprocVecEnv([partial(make_env, "cartpole")] * num_envs) as venv:
        venv.reset()
        actions = np.zeros((AGENT_WARMUP_STEPS + steps, num_envs), np.int64)
        return time_calls(venv.step, actions, pause_s)[AGENT_WARMUP_STEPS:]


def run_agent_pause(args: AgentPauseArgs) -> int:
    """One row per pause: the median, 90th percentile and mean step time."""
    rows = [[f"{pause:g}", *LatencyStats.of(_paused_step_times(pause / 1e3, args.steps, args.num_envs)).cells()]
            for pause in args.pause_ms]
    print(f"SubprocVecEnv(), CartPole-v1 x {args.num_envs}, {args.steps} steps timed per pause\n")
    print("\n".join(markdown_table(["agent pause ms", *(f"step {h}" for h in LatencyStats.HEADER)], rows)))
    return 0


# ---------------------------------------------------------------- the slice's step loop
@dataclass
class SliceLoopArgs:
    """CPU per env step of one slice of envs: a plain loop over ``env.step``, EnvSlice with its
    C loop (``_step_kernel.c``) and EnvSlice stepping every env in Python. The three take
    turns, round after round, in this thread (``time.thread_time()``)."""

    env: Literal["cartpole", "zero"] = field(default="cartpole", metadata={"help": "the env of every slot"})
    num_envs: int = field(default=16, metadata={"help": "envs in the slice (a worker's in_series)"})
    episode_length: int = field(default=500, metadata={"help": "steps per episode of the zero-cost env"})
    rounds: int = field(default=15, metadata={"help": "rounds; each times every loop once"})
    steps: int = field(default=300, metadata={"help": "batches per loop and round"})

    def __post_init__(self) -> None:
        _at_least_one(num_envs=self.num_envs, rounds=self.rounds, steps=self.steps,
                      episode_length=self.episode_length)


def _slice_loops(args: SliceLoopArgs) -> dict[str, Callable[[Any], Any]]:
    """One batch step of each contender, on envs of their own."""
    from vec_envs.spaces.batching import BatchBuffers
    from vec_envs.stepping import env_slice

    fns = [partial(make_env, args.env, i, episode_length=args.episode_length) for i in range(args.num_envs)]
    raw = [fn() for fn in fns]
    for i, env in enumerate(raw):
        env.reset(seed=i)

    def plain(actions: np.ndarray) -> None:
        for env, action in zip(raw, actions):
            _, _, terminated, truncated, _ = env.step(action)
            if terminated or truncated:
                env.reset()

    def built(kernel: Any) -> Callable[[Any], Any]:
        kept, env_slice._step_kernel = env_slice._step_kernel, kernel
        try:  # the kernel is looked up when the buffers are attached
            envs = env_slice.EnvSlice(fns)
            envs.attach(BatchBuffers.allocate(envs.observation_space, len(fns), terminal=True))
        finally:
            env_slice._step_kernel = kept
        envs.reset(list(range(len(fns))))
        return envs.step

    loops: dict[str, Callable[[Any], Any]] = {"plain loop": plain}
    if env_slice._step_kernel is not None:
        loops["EnvSlice, C loop"] = built(env_slice._step_kernel)
    loops["EnvSlice, Python loop"] = built(None)
    return loops


def run_slice_loop(args: SliceLoopArgs) -> int:
    """A row per loop: median and best µs of CPU per env step, and the median over the plain loop."""
    loops = _slice_loops(args)
    actions = presample(make_env(args.env).action_space, args.num_envs, args.steps, seed=0)
    cpu: dict[str, list[float]] = {name: [] for name in loops}
    for _ in range(args.rounds):
        for name, step in loops.items():
            start = time.thread_time()
            for batch in actions:
                step(batch)
            cpu[name].append(1e6 * (time.thread_time() - start) / (args.steps * args.num_envs))
    plain = cpu["plain loop"]
    rows = [[name, f"{statistics.median(us):.2f}", f"{min(us):.2f}",
             f"{statistics.median(a - b for a, b in zip(us, plain)):+.2f}"] for name, us in cpu.items()]
    print(f"{args.env} x {args.num_envs} in one slice, {args.rounds} rounds of {args.steps} batches, "
          "loops taking turns; us of CPU per env step\n")
    print("\n".join(markdown_table(["loop", "median us", "best us", "over the plain loop (median)"], rows)))
    if "EnvSlice, C loop" not in loops:
        print("\nthe C loop is not built here (vec_envs/stepping/_step_kernel.c): pip install -e . with a C compiler")
    return 0


# ------------------------------------------------------------------ wake penalty
@dataclass
class WakePenaltyArgs:
    """What a sleep costs the code run after it: the CPU of one parent-like batch of
    bookkeeping right after sleeping, against the same work back to back."""

    sleeps_ms: str = field(default="0,0.05,0.3,1,3", metadata={"help": "comma-separated sleeps before each batch "
                                                                       "of work, in ms (0: back to back)"})
    busy: int = field(default=0, metadata={"help": "processes stepping CartPole-v1 meanwhile, as workers do"})
    num_envs: int = field(default=256, metadata={"help": "envs the bookkeeping is for (N)"})
    rounds: int = field(default=300, metadata={"help": "batches of work per sleep"})

    def __post_init__(self) -> None:
        _at_least_one(num_envs=self.num_envs, rounds=self.rounds)
        if self.busy < 0 or any(float(ms) < 0 for ms in self.sleeps_ms.split(",")):
            raise ValueError(f"--busy and --sleeps-ms must be >= 0; received {self.busy}, {self.sleeps_ms!r}")


_BUSY_LOOP = """import gymnasium as gym
env = gym.make("CartPole-v1"); env.reset(seed=0)
while True:
    if any(env.step(0)[2:4]):
        env.reset()
"""


def _bookkeeping(num_envs: int) -> Callable[[], Any]:
    """A parent's per-batch work: NumPy over the lanes, the infos, the rows (no syscalls)."""
    answered, expected = np.zeros(num_envs, np.int64), np.zeros(num_envs, np.int64)
    rows, dones = np.zeros((num_envs, 4), np.float32), np.zeros(num_envs, np.bool_)
    quiet = bytes(8 * num_envs)

    def work() -> Any:
        finished = (answered >> 1) == expected
        same = answered.tobytes() == quiet
        infos: list[dict[str, Any]] = [{} for _ in range(num_envs)]
        ended = dones.nonzero()[0]
        return finished, same, infos, ended, rows.copy(), dones.copy()
    return work


def run_wake_penalty(args: WakePenaltyArgs) -> int:
    """A row per sleep: median µs of CPU of the work after it, and its ratio to back to back."""
    sleeps = [float(ms) / 1000 for ms in args.sleeps_ms.split(",")]
    work = _bookkeeping(args.num_envs)
    busy = [subprocess.Popen([sys.executable, "-c", _BUSY_LOOP]) for _ in range(args.busy)]
    try:
        time.sleep(2.0 if busy else 0.0)  # the busy processes import gymnasium first
        cpu: dict[float, list[float]] = {s: [] for s in sleeps}
        for _ in range(args.rounds):  # the sleeps take turns: drift hits them alike
            for s in sleeps:
                if s:
                    time.sleep(s)
                start = time.thread_time()
                work()
                cpu[s].append(1e6 * (time.thread_time() - start))
    finally:
        for process in busy:
            process.kill()
            process.wait()
    hot = statistics.median(cpu[0.0]) if 0.0 in cpu else None
    rows = [[f"{1000 * s:g}", f"{statistics.median(us):.1f}",
             "n/a" if hot is None else f"{statistics.median(us) / hot:.2f}"] for s, us in cpu.items()]
    print(f"a parent's bookkeeping for {args.num_envs} envs after each sleep, {args.rounds} rounds, "
          f"{args.busy} processes stepping CartPole-v1 meanwhile, {os.cpu_count()} CPUs; us of CPU\n")
    print("\n".join(markdown_table(["sleep ms", "work us (median)", "x back to back"], rows)))
    return 0
