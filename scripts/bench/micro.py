"""The focused commands, each an ``Args`` dataclass and a ``run_*`` function that prints its
table: the wrapper stack, the interop adapters and Ray, the contenders taking turns (rounds
alternate, repeats go round-robin) so that drift and the load of a shared machine hit them
alike; and the step path, the files and functions of vec_envs one call passes through.

Example:
    >>> vec_envs_file("/x/vec_envs/a.py"), vec_envs_file("/x/site-packages/gymnasium/core.py")
    ('vec_envs/a.py', None)
"""
from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from types import FrameType
from typing import Any, Literal

import gymnasium as gym
import numpy as np

from bench.envs import ENVS, InfoEveryStep, SyntheticFrameEnv, make_ale, make_env
from vec_envs import DummyVecEnv, SubprocVecEnv, VecEnvBase
from vec_envs.cli.args import in_series_arg, non_negative_int, positive_int
from vec_envs.timing.loops import presample, time_block, time_calls
from vec_envs.timing.tables import fmt, markdown_table

__all__ = ["WrappersArgs", "run_wrappers", "InteropArgs", "run_interop", "RayArgs", "run_ray", "StepPathArgs",
           "TracedEnv", "vec_envs_file", "run_step_path"]

BACKENDS: dict[str, Any] = {"dummy": DummyVecEnv, "subproc": SubprocVecEnv}


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
    num_envs: int = field(default=8, metadata={"help": "envs in the batch", "type": positive_int})
    steps: int = field(default=20, metadata={"help": "steps timed per round and kind", "type": positive_int})
    rounds: int = field(default=100, metadata={"help": "rounds, each timing bare and stack", "type": positive_int})
    norm_obs: bool = field(default=True, metadata={"help": "VecNormalize normalizes observations (else rewards only)"})


def run_wrappers(args: WrappersArgs) -> int:
    """Time the bare backend and the stack in rounds (alternating which goes first); print the step
    times and the overhead against its target."""
    from vec_envs.wrappers import VecFrameStack, VecMonitor, VecNormalize

    pong = partial(make_ale, "ALE/Pong-v5", preprocess=True, repeat_action_probability=0.0)  # no sticky actions
    bare: VecEnvBase = BACKENDS[args.backend]([pong if args.env == "pong" else SyntheticFrameEnv] * args.num_envs)
    stack = VecNormalize(VecFrameStack(VecMonitor(bare), 4), norm_obs=args.norm_obs)
    actions = presample(bare.action_space, args.num_envs, args.steps, seed=0)
    pairs = []  # seconds per step of the bare backend and of the stack, a pair per round
    with stack:
        stack.reset()
        time_block(stack.step, actions)  # warm-up
        for k in range(args.rounds):
            if k % 2 == 0:
                first = time_block(bare.step, actions)
                pairs.append((first, time_block(stack.step, actions)))
            else:
                first = time_block(stack.step, actions)
                pairs.append((time_block(bare.step, actions), first))
    bare_s, stack_s = (statistics.median(column) for column in zip(*pairs))
    added = statistics.median(s - b for b, s in pairs)
    overhead = [100 * (s / b - 1) for b, s in pairs]
    quartiles = statistics.quantiles(overhead, n=4) if len(overhead) > 1 else overhead * 3
    print(f"env={args.env} backend={args.backend} num_envs={args.num_envs} steps/round={args.steps} "
          f"rounds={args.rounds} norm_obs={args.norm_obs}\n")
    print("\n".join(markdown_table(["", "ms/step (median)"], [
        ["bare backend", fmt(1e3 * bare_s, ".3f")], ["wrapper stack", fmt(1e3 * stack_s, ".3f")],
        ["wrappers add (median of paired rounds)", fmt(1e3 * added, "+.3f")]])))
    print(f"\nper-round overhead quartiles: {', '.join(f'{q:+.1f} %' for q in quartiles)}")
    pct = 100 * added / bare_s
    verdict = "meets" if pct < WRAPPERS_TARGET_PCT else "misses"
    print(f"overhead: {pct:+.1f} % ({verdict} the < {WRAPPERS_TARGET_PCT:g} % target)")
    return 0


# ---------------------------------------------------------------- the interop adapters
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
    num_envs: int = field(default=8, metadata={"help": "envs per batch", "type": positive_int})
    steps: int = field(default=500, metadata={"help": "batch steps per round", "type": positive_int})
    rounds: int = field(default=20, metadata={"help": "rounds per contender (interleaved)", "type": positive_int})
    clock: Literal["wall", "cpu"] = field(default="wall", metadata={
        "help": "wall: perf_counter; cpu: this process's CPU time (process_time)"})


def _interop_contenders(args: InteropArgs) -> dict[str, Any]:
    """name -> what it steps, reset; the first three share one VecEnv."""
    from gymnasium.vector import AutoresetMode, SyncVectorEnv

    from vec_envs.interop import from_gymnasium, to_gymnasium, to_sb3

    fns = [partial(make_env, "cartpole")] * args.num_envs
    venv = BACKENDS[args.backend](fns)
    venv.reset()
    sync, same = SyncVectorEnv(fns), SyncVectorEnv(fns, autoreset_mode=AutoresetMode.SAME_STEP)
    adapted = from_gymnasium(SyncVectorEnv(fns))
    adapted_same = from_gymnasium(SyncVectorEnv(fns, autoreset_mode=AutoresetMode.SAME_STEP))
    for vector_env in (sync, same):
        vector_env.reset(seed=0)
    for adapter in (adapted, adapted_same):
        adapter.reset()
    return {"direct": venv, "to_gymnasium": to_gymnasium(venv), "to_sb3": to_sb3(venv), "gymnasium-sync": sync,
            "from_gymnasium": adapted, "gymnasium-same": same, "from_gym-same": adapted_same}


def run_interop(args: InteropArgs) -> int:
    """One line per contender: median us per batch step, and its overhead over its baseline."""
    rng = np.random.default_rng(0)
    runs = _interop_contenders(args)
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    times: dict[str, list[float]] = {name: [] for name in runs}
    try:
        for _ in range(args.rounds):
            for name, contender in runs.items():
                actions = rng.integers(0, 2, size=(args.steps, args.num_envs))
                times[name].append(1e6 * time_block(contender.step, actions, clock))
    finally:
        for contender in runs.values():
            contender.close()
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
    steps: int = field(default=300, metadata={"help": "timed step() calls per measurement", "type": positive_int})
    warmup: int = field(default=30, metadata={"help": "untimed step() calls before each measurement",
                                              "type": non_negative_int})
    repeats: int = field(default=3, metadata={"help": "measurements per (workload, backend), round-robin",
                                              "type": positive_int})
    in_series: int | str = field(default="auto", metadata={
        "help": "envs per worker, both backends: an int or 'auto'", "type": in_series_arg})
    pings: int = field(default=300, metadata={"help": "no-op Ray actor calls timed for the bare round trip",
                                              "type": positive_int})

    def __post_init__(self) -> None:
        unknown = set(self.workloads.split(",")) - set(RAY_WORKLOADS)
        if unknown:
            raise ValueError(f"--workloads: unknown {sorted(unknown)}; expected a comma-separated subset of "
                             f"{list(RAY_WORKLOADS)}")


def _ray_cell(backend: Any, env: str, args: RayArgs) -> dict[str, Any]:
    """Build and reset (timed), warm up, then time ``args.steps`` single steps (latencies in ms)."""
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
    return {"build_s": build_s, "workers": workers, "median_ms": 1e3 * np.median(seconds),
            "p90_ms": 1e3 * np.percentile(seconds, 90), "steps_per_s": num_envs * len(seconds) / seconds.sum()}


def run_ray(args: RayArgs) -> int:
    """Measure every (workload, backend) round-robin, then the bare round trip (a no-op call on a RayVecEnv
    actor); print the table."""
    import ray

    from vec_envs import RayVecEnv

    backends: dict[str, Any] = {"SubprocVecEnv": SubprocVecEnv, "RayVecEnv": RayVecEnv}
    results: dict[tuple[str, str], list[dict[str, Any]]] = {}
    try:
        for env in args.workloads.split(","):
            for _ in range(args.repeats):
                for name, backend in backends.items():
                    results.setdefault((env, name), []).append(_ray_cell(backend, env, args))
        venv: Any = RayVecEnv([partial(make_env, "cartpole")])
        with venv:
            actor = venv.workers[0].actor
            ray.get(actor.where.remote())
            round_trip = 1e3 * float(np.median(time_calls(lambda _: ray.get(actor.where.remote()), range(args.pings))))
    finally:
        ray.shutdown()  # the runtime the first RayVecEnv started
    print(f"\n{os.cpu_count()} CPUs, in_series={args.in_series!r}, {args.steps} timed steps, "
          f"median of {args.repeats} repeat(s)\n")
    header = ["workload", "backend", "workers", "build s", "step latency ms (p90)", "env steps/s"]
    rows = []
    for (env, backend), runs in results.items():
        median = {key: statistics.median(run[key] for run in runs) for key in runs[0]}
        rows.append([f"{ENVS[env]} x {RAY_WORKLOADS[env]}", backend, str(runs[0]["workers"]),
                     fmt(median["build_s"], ".1f"), f"{median['median_ms']:.2f} ({median['p90_ms']:.2f})",
                     fmt(median["steps_per_s"])])
    print("\n".join(markdown_table(header, rows, "llrrrr")))
    print(f"\nbare Ray round trip (no-op actor call): {round_trip:.2f} ms median")
    return 0


# ---------------------------------------------------------------- the step path
Calls = set[tuple[str, str]]


@dataclass
class StepPathArgs:
    """The files and functions of a step() and a recv()/send(), in the parent and a worker, by layout.

    sys.settrace records every call into a vec_envs file: in the parent over one call after a warm-up, in
    the worker of env 0 over one turn of its loop; with empty infos and with an info every step.
    """

    num_envs: int = field(default=8, metadata={"help": "CartPole-v1 envs"})
    in_series: int = field(default=2, metadata={"help": "envs per worker of the layout beside the default"})
    warmup: int = field(default=200, metadata={"help": "steps before the traced one"})
    list_functions: bool = field(default=False, metadata={"help": "list every function, by file"})

    def __post_init__(self) -> None:
        if self.num_envs < 2 or self.in_series < 1 or self.warmup < 4:
            raise ValueError(f"--num-envs must be >= 2, --in-series >= 1, --warmup >= 4; received {self.num_envs}, "
                             f"{self.in_series}, {self.warmup}")


def vec_envs_file(filename: str) -> str | None:
    """``filename`` from its last ``vec_envs`` folder on, or None outside one (or in site-packages)."""
    parts = filename.split(os.sep)
    if "vec_envs" not in parts or "site-packages" in parts:
        return None
    return "/".join(parts[len(parts) - 1 - parts[::-1].index("vec_envs"):])


def tracer(calls: list[tuple[str, str]]) -> Callable[[FrameType, str, Any], None]:
    """A ``sys.settrace`` function that appends every call into a vec_envs file to ``calls``."""
    def trace(frame: FrameType, event: str, arg: Any) -> None:
        path = vec_envs_file(frame.f_code.co_filename) if event == "call" else None
        if path is not None:
            calls.append((path, frame.f_code.co_name))
    return trace


class TracedEnv(gym.Wrapper):
    """CartPole-v1 (``infos``: returning ``{"lives": 3}`` every step) that traces its process
    from inside step ``at`` to the same point of step ``at + 1``; ``trace_report`` returns it."""

    def __init__(self, infos: bool = False) -> None:
        super().__init__(InfoEveryStep() if infos else gym.make("CartPole-v1"))
        self.steps, self.at = 0, -1
        self.calls: list[tuple[str, str]] = []

    def trace_at(self, at: int) -> None:
        self.at = self.steps + at

    def step(self, action: Any) -> Any:
        returned = self.env.step(action)
        self.steps += 1
        if self.steps == self.at:
            sys.settrace(tracer(self.calls))
        elif self.steps == self.at + 1:
            sys.settrace(None)
        return returned

    def trace_report(self) -> list[tuple[str, str]]:
        return sorted(set(self.calls))


def _drive(venv: Any, recv_send: bool, warmup: int) -> list[tuple[str, str]]:
    """Step ``venv`` (by ``step()`` or ``recv()`` + ``send()``), the call ``warmup`` traced; its calls.
    Under recv/send, on until env 0 has gone through its traced turn, then every env back."""
    calls: list[tuple[str, str]] = []
    actions = np.zeros(venv.num_envs, np.int64)
    if recv_send:
        venv.async_reset()
    k, sent_to_first = 0, 0  # env 0 must be stepped through its traced turn, however it is scheduled
    while k < warmup * 2 or (recv_send and sent_to_first < warmup // 4 + 2):
        if k == warmup:
            sys.settrace(tracer(calls))
        if recv_send:
            env_ids = venv.recv()[4]
            venv.send(actions[env_ids], env_ids)
            sent_to_first += int(0 in env_ids)
        else:
            venv.step(actions)
        if k == warmup:
            sys.settrace(None)
        k += 1
    while recv_send:  # every env back, so the env access can run
        try:
            venv.recv(timeout=5.0)
        except Exception:  # noqa: BLE001 (none left in flight: the round is over)
            break
    return calls


def trace_cell(args: StepPathArgs, in_series: int | str, recv_send: bool, infos: bool) -> tuple[Calls, Calls]:
    """The (file, function) pairs of one call in the parent and of one turn of env 0's worker."""
    from vec_envs import SubprocVecEnv

    n = args.num_envs
    venv = SubprocVecEnv([partial(TracedEnv, infos)] * n, in_series=in_series, batch_size=n // 2 if recv_send else None)
    try:
        venv.reset()
        venv.env_method("trace_at", args.warmup // 4 if recv_send else args.warmup, indices=[0])
        parent = set(_drive(venv, recv_send, args.warmup))
        worker = {(path, name) for path, name in venv.env_method("trace_report", indices=[0])[0]}
    finally:
        venv.close()
    return parent, worker


def run_step_path(args: StepPathArgs) -> int:
    """Trace every cell and print how many files and functions each side passes through."""
    rows, listings = [], []
    for in_series in ("auto", args.in_series):
        for recv_send in (False, True):
            for infos in (False, True):
                name = (f"in_series={in_series!r}: {'recv() + send()' if recv_send else 'step()'}, "
                        f"{'info every step' if infos else 'empty infos'}")
                parent, worker = trace_cell(args, in_series, recv_send, infos)
                rows.append([name, *(str(n) for side in (parent, worker)
                                     for n in (len({path for path, _ in side}), len(side)))])
                listings.append((name, parent, worker))
    print(f"SubprocVecEnv of {args.num_envs} CartPole-v1 envs; recv/send with batch_size={args.num_envs // 2}:")
    print("\n".join(markdown_table(["call", "parent files", "parent functions", "worker files", "worker functions"],
                                   rows)))
    if args.list_functions:
        for name, parent, worker in listings:
            for side, calls in (("parent", parent), ("worker", worker)):
                print(f"\n{name}, {side}:")
                for path in sorted({path for path, _ in calls}):
                    print(f"  {path}: {', '.join(sorted(n for p, n in calls if p == path))}")
    return 0
