"""Where a batch's CPU goes, per env step, and what that predicts on another machine.

Per env step of each method, on a zero-cost env and on CartPole-v1: **p**, the CPU of the
driving thread; **o**, the CPU of the workers beyond the env's own cost **e** (one env stepped
alone); **p_net**, **o_net** the same without spinning; **p_work**, **o_work** without sleeping
and waking too, as where every process has a core. The transport counts its spinning and
sleeping once asked (``WAIT_TIMES``): each worker's first env copies its figures to a file.

The model, N envs on C cores: lock-step batch time ``N*p + N/(C-1)*(e+o) + L`` (L fitted here),
asynchronous throughput ``min(1/p, (C-1)/(e+o))``, ceiling ``C/e``.

Example:
    >>> at_3 = project(Costs(p=2e-6, o=3e-6, e=5e-6, latency=0.0), num_envs=8, cores=3.0)
    >>> round(1e6 * at_3.lockstep_batch_s, 1), round(at_3.async_steps_per_s), round(at_3.ceiling_steps_per_s)
    (48.0, 250000, 600000)
"""
from __future__ import annotations

import importlib.util
import math
import os
import tempfile
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple
from unittest import mock

import gymnasium as gym
import numpy as np

from bench.contenders import METHODS, build
from bench.envs import Workload, make_env
from vec_envs.cli.args import in_series_arg
from vec_envs.subproc.doorbell import WAIT_TIMES
from vec_envs.timing.cells import ACTION_TABLE
from vec_envs.timing.loops import presample, run_for
from vec_envs.timing.machine import available_cores
from vec_envs.timing.process_tree import psutil_module, tree_cpu
from vec_envs.timing.steppers import RawStepper, RecvSendStepper, Stepper, VecEnvStepper
from vec_envs.timing.tables import fmt, markdown_table

__all__ = ["OverheadArgs", "Costs", "Projection", "project", "planned_cpus", "run_overhead"]

WARMUP_S = 0.3
ENV_LABELS = {"zero": "zero-cost env", "cartpole": "CartPole-v1"}
KEYS = ("dummy", "subproc", "subproc-async", "envpool", "pufferlib")


@dataclass
class OverheadArgs:
    """Where a batch's CPU goes: the driving thread (p) and the workers (o) per env step; the cost model."""

    num_envs: int = field(default=8, metadata={"help": "envs in the batch (N)"})
    episode_length: int = field(default=500, metadata={"help": "steps per episode of the zero-cost env"})
    batch_size: int | None = field(default=None, metadata={"help": "recv/send batch size (default: num_envs // 2)"})
    in_series: int | str = field(default="auto", metadata={
        "help": "SubprocVecEnv's envs per worker: an int or 'auto'", "type": in_series_arg})
    cpus: int | None = field(default=None, metadata={
        "help": "plan in_series='auto' (and spinning) for this many CPUs (sets VEC_ENVS_CPUS for the run)"})
    step_in_parent: bool = field(default=False, metadata={
        "help": "SubprocVecEnv steps its last slice in the parent, as in_series='auto' does "
                "(p_net then leaves out that slice's env time, e per step)"})
    envs: str = field(default="zero,cartpole", metadata={"help": "comma-separated: zero, cartpole"})
    methods: str = field(default=",".join(KEYS), metadata={"help": f"comma-separated, of {list(KEYS)}"})
    seconds: float = field(default=2.0, metadata={"help": "seconds of each timed window (after a warm-up)"})
    project_cores: str = field(default="11.3,64", metadata={
        "help": "comma-separated core counts C the model projects to"})

    def __post_init__(self) -> None:
        if self.num_envs < 2 or self.episode_length < 1 or self.seconds <= 0:
            raise ValueError(f"--num-envs must be >= 2, --episode-length >= 1, --seconds > 0; received "
                             f"{self.num_envs}, {self.episode_length}, {self.seconds}")
        if self.batch_size is not None and not 1 <= self.batch_size <= self.num_envs:
            raise ValueError(f"--batch-size must be in [1, --num-envs]; received {self.batch_size}")
        for option, value, known in (("--envs", self.envs, ENV_LABELS), ("--methods", self.methods, KEYS)):
            unknown = sorted(set(value.split(",")) - set(known))
            if unknown:
                raise ValueError(f"{option}: unknown {unknown}; expected a comma-separated subset of {list(known)}")
        try:
            self.cores = [float(c) for c in self.project_cores.split(",")]
        except ValueError:
            self.cores = [0.0]
        if any(not c > 1 for c in self.cores):
            raise ValueError(f"--project-cores must be comma-separated numbers > 1; received {self.project_cores!r}")
        self.recv_batch = self.batch_size or self.num_envs // 2


# ---------------------------------------------------------------- the workers' waits
_reporting = False  # in a worker: whether one of its envs reports its waits already


class CountedWaits(gym.Wrapper):
    """Copies this worker's ``WAIT_TIMES`` (spun, slept) into column ``index`` of ``waits`` at every step."""

    def __init__(self, env: gym.Env, waits: np.memmap, index: int) -> None:
        super().__init__(env)
        self.waits, self.index = waits, index

    def step(self, action: Any) -> Any:
        self.waits[:, self.index] = WAIT_TIMES.spun, WAIT_TIMES.slept
        return self.env.step(action)


def counted_env(env: str, episode_length: int, path: str, slots: int, index: int, parent: int) -> gym.Env:
    """Env ``index``; in a worker process, counting the worker's waits (its first env reports them, to ``path``)."""
    global _reporting
    made: gym.Env = make_env(env, index, episode_length=episode_length)
    if os.getpid() != parent:
        WAIT_TIMES.enabled = True
        if not _reporting:
            _reporting = True
            made = CountedWaits(made, np.memmap(path, np.float64, "r+", shape=(2, slots)), index)
    return made


def planned_cpus(cpus: int | None) -> Any:
    """While inside, vec_envs plans ``in_series="auto"`` and spinning for ``cpus`` CPUs (``VEC_ENVS_CPUS``)."""
    return mock.patch.dict(os.environ, {"VEC_ENVS_CPUS": str(cpus)} if cpus else {})


# ---------------------------------------------------------------- measuring
@dataclass
class Row:
    """One method on one env: steps/s and the per-step CPU costs in seconds (NaN: not measured)."""

    label: str
    steps_per_s: float
    p: float
    p_net: float
    p_work: float
    o: float = float("nan")
    o_net: float = float("nan")
    o_work: float = float("nan")
    note: str = ""

    def cells(self) -> list[str]:
        """The table cells: steps/s, then p, p_net, p_work, o, o_net, o_work in microseconds."""
        us = [fmt(1e6 * v, ".2f") for v in (self.p, self.p_net, self.p_work, self.o, self.o_net, self.o_work)]
        return [self.label, fmt(self.steps_per_s), *us, self.note]


def time_window(stepper: Stepper, seconds: float, waits: str | None) -> dict[str, float]:
    """Warm up, then step for ``seconds``: steps/s, and every CPU counter per env step (``waits``: None: no workers)."""
    actions = stepper.rows(presample(stepper.action_space, stepper.num_envs, ACTION_TABLE, seed=0))
    run_for(stepper.step, actions, WARMUP_S)

    def counters() -> np.ndarray:
        children = tree_cpu(psutil_module().Process())
        children.pop(os.getpid(), None)
        workers = np.fromfile(waits, np.float64).reshape(2, -1).sum(axis=1) if waits else np.zeros(2)
        return np.array([time.thread_time(), time.process_time(), sum(children.values()), WAIT_TIMES.spun,
                         WAIT_TIMES.slept, *workers])

    before = counters()
    calls, wall = run_for(stepper.step, actions, seconds)
    steps = calls * stepper.steps_per_call
    names = ("thread", "process", "children", "parent_spin", "parent_sleep", "worker_spin", "worker_sleep")
    return {"steps_per_s": steps / wall, **dict(zip(names, (counters() - before) / steps))}


def env_cost(env: str, episode_length: int) -> float:
    """e: CPU seconds per step of one env stepped alone (resets included)."""
    stepper = RawStepper(make_env(env, episode_length=episode_length))
    stepper.start(seed=0)
    actions = stepper.rows(presample(stepper.action_space, 1, ACTION_TABLE, seed=0))
    run_for(stepper.step, actions, WARMUP_S / 3)
    start = time.thread_time()
    calls, _ = run_for(stepper.step, actions, 0.5)
    cpu = time.thread_time() - start
    stepper.close()
    return cpu / calls


def _built(args: OverheadArgs, env: str, key: str, waits: str) -> tuple[Stepper, str, int] | str:
    """The stepper of ``key`` on ``env`` (ours on counted envs, EnvPool and PufferLib as the workloads command
    builds them), its label and how many envs the parent steps itself; or why it was skipped."""
    from vec_envs import DummyVecEnv, SubprocVecEnv

    if key in ("dummy", "subproc", "subproc-async"):
        fns = [partial(counted_env, env, args.episode_length, waits, args.num_envs, i, os.getpid())
               for i in range(args.num_envs)]
        if key == "dummy":
            return VecEnvStepper(DummyVecEnv(fns)), "DummyVecEnv", 0
        recv_send = key == "subproc-async"
        venv = SubprocVecEnv(fns, in_series=args.in_series, step_in_parent=args.step_in_parent,
                             batch_size=args.recv_batch if recv_send else None)
        local = venv.workers[-1].stop - venv.workers[-1].first_index if venv.workers[-1].is_local else 0
        workers = f"{len(venv.workers) - bool(local)} workers x {venv.in_series}"
        label = (f"SubprocVecEnv {f'recv/send {args.recv_batch}' if recv_send else 'lock-step'} "
                 f"({workers}{f', {local} in the parent' if local else ''})")
        return (RecvSendStepper(venv) if recv_send else VecEnvStepper(venv)), label, local
    if importlib.util.find_spec(key) is None:
        return f"{key}: not installed (skipped)"
    if env != "cartpole":
        return f"{key}: has no {ENV_LABELS[env]} (skipped)"
    stepper = build(Workload("N", "cartpole", args.num_envs), [partial(make_env, "cartpole")] * args.num_envs,
                    METHODS[key], seed=0)
    return stepper, f"{METHODS[key].label} ({stepper.note})", 0


def measure(args: OverheadArgs, env: str, key: str, e: float, waits: str) -> Row | str:
    """One method on one env: its row, or why it was skipped."""
    built = _built(args, env, key, waits)
    if isinstance(built, str):
        return built
    stepper, label, local = built
    try:
        stepper.start(seed=0)
        w = time_window(stepper, args.seconds, waits if key.startswith("subproc") else None)
    finally:
        stepper.close()
    p_net = w["thread"] - w["parent_spin"]
    row = Row(label, w["steps_per_s"], w["thread"], p_net, p_net - w["parent_sleep"])
    if key == "dummy":
        row.note = "p includes e (the envs step in this thread)"
    elif key.startswith("subproc"):
        row.o, row.o_net = w["children"] - e, w["children"] - w["worker_spin"] - e
        row.o_work = row.o_net - w["worker_sleep"]
        if local:
            row.p_net -= e * local / args.num_envs
            row.p_work -= e * local / args.num_envs
            row.note = f"p_net, p_work: less the env time of the parent's {local} envs (e x {local}/{args.num_envs})"
    elif key == "envpool":
        row.o, row.note = w["process"] - w["thread"], "o: its threads' CPU, its own env included"
    else:
        row.o, row.note = w["children"] - e, "o_net: its workers' spinning is not counted"
    return row


# ---------------------------------------------------------------- the model
class Costs(NamedTuple):
    """Seconds per env step: the driving thread ``p``, the workers beyond the env ``o``, the env ``e``;
    ``latency``: seconds per lock-step batch the per-step costs do not explain (L)."""

    p: float
    o: float
    e: float
    latency: float


class Projection(NamedTuple):
    """What the model predicts for ``cores`` cores."""

    cores: float
    lockstep_batch_s: float
    lockstep_steps_per_s: float
    async_steps_per_s: float
    ceiling_steps_per_s: float


def project(costs: Costs, num_envs: int, cores: float) -> Projection:
    """Lock-step batch time N*p + N/(C-1)*(e+o) + L; async min(1/p, (C-1)/(e+o)); ceiling C/e."""
    work = max(costs.e + costs.o, 1e-12)  # a worker's CPU per env step (> 0 even where o was measured below -e)
    batch = num_envs * costs.p + num_envs / (cores - 1) * work + costs.latency
    asynchronous = min(1 / costs.p if costs.p > 0 else math.inf, (cores - 1) / work)
    ceiling = cores / costs.e if costs.e > 0 else math.inf
    return Projection(cores, batch, num_envs / batch, asynchronous, ceiling)


def projection_lines(args: OverheadArgs, rows: dict[str, Row | str], e: float) -> list[str]:
    """The model's formula and its projection to each of ``--project-cores``: from p_net
    and o_net, and from p_work and o_work (nobody sleeps)."""
    lock, asyn = rows.get("subproc"), rows.get("subproc-async")
    if not isinstance(lock, Row):
        return ["(no projection: SubprocVecEnv lock-step was not measured)"]
    n, cores = args.num_envs, available_cores()
    asyn = asyn if isinstance(asyn, Row) else lock
    explained = n * lock.p_net + n / (cores - 1) * (e + lock.o_net) if cores > 1 else math.inf
    latency = max(0.0, n / lock.steps_per_s - explained)  # L: the lock-step batch time the costs leave over
    costs, async_costs = Costs(lock.p_net, lock.o_net, e, latency), Costs(asyn.p_net, asyn.o_net, e, 0.0)
    work, async_work = Costs(lock.p_work, lock.o_work, e, latency), Costs(asyn.p_work, asyn.o_work, e, 0.0)
    lines = [f"model: lock-step batch time = N*p + N/(C-1)*(e+o) + L; async throughput = min(1/p, (C-1)/(e+o)); "
             f"ceiling = C/e; with N = {n}, e = {1e6 * e:.2f} us, p = p_net, o = o_net of SubprocVecEnv "
             f"(lock-step p {1e6 * costs.p:.2f} us, o {1e6 * costs.o:.2f} us, L {1e6 * costs.latency:.1f} us fitted "
             f"on these {cores} cores; recv/send p {1e6 * async_costs.p:.2f} us, "
             f"o {1e6 * async_costs.o:.2f} us); the 'work' columns take p = p_work, o = o_work instead", ""]
    rows_out = []
    for c in args.cores:
        lockstep, asynchronous = project(costs, n, c), project(async_costs, n, c)
        rows_out.append([f"{c:g}", fmt(1e6 * lockstep.lockstep_batch_s, ".1f"), fmt(lockstep.lockstep_steps_per_s),
                         fmt(asynchronous.async_steps_per_s), fmt(project(work, n, c).lockstep_steps_per_s),
                         fmt(project(async_work, n, c).async_steps_per_s), fmt(lockstep.ceiling_steps_per_s)])
    header = ["C (cores)", "lock-step batch us", "lock-step steps/s", "async steps/s", "lock-step steps/s, work",
              "async steps/s, work", "ceiling steps/s"]
    return lines + markdown_table(header, rows_out)


# ---------------------------------------------------------------- the command
def run_overhead(args: OverheadArgs) -> int:
    """Measure every method on every env; print the tables and the projections."""
    from vec_envs import kernels

    scripts = str(Path(__file__).resolve().parents[1])  # the workers import the counted envs from bench
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [scripts, os.environ.get("PYTHONPATH")]))
    WAIT_TIMES.enabled = True  # this process counts its waits from now on
    cpus = f"planned for {args.cpus} CPUs (VEC_ENVS_CPUS)" if args.cpus else f"{available_cores()} CPUs"
    loop = "EnvSlice's C loop" if kernels.report()["step"]["running"] else "EnvSlice's Python loop (no C kernels)"
    print(f"# Overhead per env step: {args.seconds:g} s windows, in_series={args.in_series!r}, {cpus}, {loop}; "
          f"p: driving thread CPU, o: workers' CPU beyond the env, _net: spinning excluded, _work: sleeping and waking "
          f"excluded too (us per env step)\n")
    with tempfile.TemporaryDirectory() as tmp, planned_cpus(args.cpus):
        waits = str(Path(tmp) / "waits.f64")
        np.zeros(2 * args.num_envs, np.float64).tofile(waits)
        for env in args.envs.split(","):
            e = env_cost(env, args.episode_length)
            rows = {key: measure(args, env, key, e, waits) for key in args.methods.split(",")}
            length = f", episodes of {args.episode_length} steps" if env == "zero" else ""
            lines = [f"## {ENV_LABELS[env]} x {args.num_envs}{length}: e = {1e6 * e:.2f} us of CPU per step", ""]
            lines += markdown_table(["method", "steps/s", "p us", "p_net us", "p_work us", "o us", "o_net us",
                                     "o_work us", "note"], [r.cells() for r in rows.values() if isinstance(r, Row)],
                                    "lrrrrrrrl")
            skipped = [f"- {r}" for r in rows.values() if isinstance(r, str)]
            lines += ["", *skipped, ""] if skipped else [""]
            print("\n".join(lines + projection_lines(args, rows, e) + [""]), flush=True)
    return 0
