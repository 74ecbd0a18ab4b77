"""Where a batch's CPU goes, per env step, and what that predicts on another machine.

For each method (DummyVecEnv, SubprocVecEnv lock-step, SubprocVecEnv recv/send, and
EnvPool and PufferLib where installed) on a zero-cost env and on CartPole-v1 (with
``VEC_ENVS_KERNELS=0`` set: every loop in Python, as where no C compiler was found):

- **p**: CPU of the driving thread per env step (``time.thread_time()``); **p_net** the
  same without the time it spent spinning while it waited (``spin_until`` is counted).
- **o**: CPU of the worker processes per env step beyond the env's own cost ``e``
  (psutil, the process tree); **o_net** the same without the workers' spinning.
- **p_work**, **o_work**: p_net and o_net without the time spent going to sleep, waking up
  and waking others: what is left where every process has a core to spin on and nobody
  sleeps, as on a many-core machine.
- **e**: CPU per step of one env stepped alone in a plain loop.

Spinning and sleeping are counted by the transport itself once asked
(``vec_envs.subproc.doorbell.WAIT_TIMES``): in the parent for the measurement, and in
each worker by the env factory, which turns the count on there and copies the worker's
figures to its slot of a small file the parent reads (env access would need every env
returned, which recv/send never has).

The model: N envs, C cores, the parent on one of them; lock-step batch time
``N*p + N/(C-1)*(e+o) + L`` (L: the latency left over, fitted on this machine),
asynchronous throughput ``min(1/p, (C-1)/(e+o))``, ceiling ``C/e``; the projection uses
p_net and o_net (work, not waiting), and p_work and o_work for the columns where nobody
sleeps.

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
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from bench import SCRIPTS
from bench.contenders import METHODS, EnvFns, RawStepper, RecvSendStepper, Stepper, VecEnvStepper, build
from bench.envs import Workload, make_env
from bench.report import fmt, markdown_table
from vec_envs.cli.args import in_series_arg
from vec_envs.timing.loops import presample, run_for
from vec_envs.timing.machine import available_cores
from vec_envs.timing.process_tree import psutil_module, tree_cpu

__all__ = ["OverheadArgs", "Costs", "Projection", "project", "run_overhead"]

WARMUP_S = 0.3
ACTION_TABLE = 256
ENV_LABELS = {"zero": "zero-cost env", "cartpole": "CartPole-v1"}
KEYS = ("dummy", "subproc", "subproc-async", "envpool", "pufferlib")


@dataclass
class OverheadArgs:
    """Where a batch's CPU goes: the driving thread (p) and the workers (o) per env step; the cost model."""

    num_envs: int = field(default=8, metadata={"help": "envs in the batch (N)"})
    episode_length: int = field(default=500, metadata={"help": "steps per episode of the zero-cost env"})
    batch_size: int | None = field(default=None, metadata={
        "help": "recv/send batch size (default: num_envs // 2)"})
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
        if any(c <= 1 for c in self.cores()):
            raise ValueError(f"--project-cores must be numbers > 1; received {self.project_cores!r}")

    def cores(self) -> list[float]:
        """The core counts of ``--project-cores``."""
        try:
            return [float(c) for c in self.project_cores.split(",")]
        except ValueError:
            raise ValueError(f"--project-cores must be comma-separated numbers; received "
                             f"{self.project_cores!r}") from None

    def recv_batch(self) -> int:
        """Envs per recv of the recv/send method."""
        return self.batch_size or self.num_envs // 2


# ---------------------------------------------------------------- counting spins
SPUN, SLEPT = 0, 1  # the columns of a SpinFile
COLUMNS = 2


@dataclass
class SpinFile:
    """A file of float64 seconds, columns of one slot per env index: each worker writes its
    spin CPU (``SPUN``) and its sleeping and waking CPU (``SLEPT``) to its first env's slots."""

    path: str
    slots: int

    def read(self, column: int = SPUN) -> float:
        """Seconds spun (or slept) so far by every worker."""
        return float(np.fromfile(self.path, np.float64, COLUMNS * self.slots)[column * self.slots:][:self.slots].sum())


_worker_spins: np.memmap | None = None  # in a worker: its view of the SpinFile


class CountedWaits(gym.Wrapper):
    """Copies this worker's ``WAIT_TIMES`` into its slot of the SpinFile at every call."""

    def __init__(self, env: gym.Env, index: int) -> None:
        super().__init__(env)
        self._index = index

    def _copy(self) -> None:
        from vec_envs.subproc.doorbell import WAIT_TIMES

        if _worker_spins is not None:
            _worker_spins[SPUN, self._index] = WAIT_TIMES.spun
            _worker_spins[SLEPT, self._index] = WAIT_TIMES.slept

    def step(self, action: Any) -> Any:
        self._copy()
        return self.env.step(action)

    def reset(self, **kwargs: Any) -> Any:
        self._copy()
        return self.env.reset(**kwargs)


def counted_env(env: str, episode_length: int, spins: SpinFile, index: int, parent: int) -> gym.Env:
    """Env ``index``; in a worker process, first start counting the worker's spins and sleeps (slot ``index``)."""
    global _worker_spins
    made: gym.Env = make_env(env, index, episode_length=episode_length)
    if os.getpid() != parent:
        from vec_envs.subproc.doorbell import WAIT_TIMES

        WAIT_TIMES.enabled = True
        if _worker_spins is None:
            _worker_spins = np.memmap(spins.path, np.float64, "r+", shape=(COLUMNS, spins.slots))
            made = CountedWaits(made, index)  # the first env of the worker reports for it
    return made


@contextmanager
def parent_waits() -> Iterator[list[float]]:
    """Count the spinning, and the sleeping and waking, of this process while inside:
    ``[spun, slept]`` seconds."""
    from vec_envs.subproc.doorbell import WAIT_TIMES

    total = [0.0, 0.0]
    WAIT_TIMES.enabled, before = True, (WAIT_TIMES.spun, WAIT_TIMES.slept)
    try:
        yield total
    finally:
        WAIT_TIMES.enabled = False
        total[0], total[1] = WAIT_TIMES.spun - before[0], WAIT_TIMES.slept - before[1]


@contextmanager
def planned_cpus(cpus: int | None) -> Iterator[None]:
    """While inside, vec_envs plans for ``cpus`` CPUs (``VEC_ENVS_CPUS``, which
    ``in_series="auto"`` and the choice to spin read)."""
    if cpus is None:
        yield
        return
    saved = os.environ.get("VEC_ENVS_CPUS")
    os.environ["VEC_ENVS_CPUS"] = str(cpus)
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("VEC_ENVS_CPUS", None)
        else:
            os.environ["VEC_ENVS_CPUS"] = saved


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


def _children_cpu() -> float:
    """CPU seconds of this process's descendants (the workers)."""
    cpu = tree_cpu(psutil_module().Process())
    cpu.pop(os.getpid(), None)
    return sum(cpu.values())


@dataclass
class Window:
    """What one timed window measured."""

    steps: int
    wall: float
    thread: float
    process: float
    children: float
    parent_spin: float
    worker_spin: float
    parent_sleep: float
    worker_sleep: float


def time_window(stepper: Stepper, seconds: float, spins: SpinFile | None) -> Window:
    """Warm up, then step for ``seconds``, reading every CPU counter around the window."""
    actions = stepper.rows(presample(stepper.action_space, stepper.num_envs, ACTION_TABLE, seed=0))
    run_for(stepper.step, actions, WARMUP_S)
    def workers() -> tuple[float, float]:
        return (spins.read(SPUN), spins.read(SLEPT)) if spins else (0.0, 0.0)

    with parent_waits() as waited:
        before = (time.thread_time(), time.process_time(), _children_cpu(), *workers())
        calls, wall = run_for(stepper.step, actions, seconds)
        after = (time.thread_time(), time.process_time(), _children_cpu(), *workers())
    thread, process, children, worker_spin, worker_sleep = (b - a for a, b in zip(before, after))
    return Window(calls * stepper.steps_per_call, wall, thread, process, children, waited[SPUN], worker_spin,
                  waited[SLEPT], worker_sleep)


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


def _ours(args: OverheadArgs, env: str, key: str, spins: SpinFile) -> tuple[Stepper, str]:
    """DummyVecEnv, or SubprocVecEnv lock-step or recv/send, on counted envs."""
    from vec_envs import DummyVecEnv, SubprocVecEnv

    fns = [partial(counted_env, env, args.episode_length, spins, i, os.getpid()) for i in range(args.num_envs)]
    if key == "dummy":
        return VecEnvStepper(DummyVecEnv(fns)), "DummyVecEnv"
    options: dict[str, Any] = {"in_series": args.in_series, "step_in_parent": args.step_in_parent}
    if key == "subproc-async":
        options["batch_size"] = args.recv_batch()
    venv = SubprocVecEnv(fns, **options)
    mode = "lock-step" if key == "subproc" else f"recv/send {args.recv_batch()}"
    local = _parent_envs(venv)
    workers = f"{len(venv.workers) - bool(local)} workers x {venv.in_series}"
    label = f"SubprocVecEnv {mode} ({workers}{f', {local} in the parent' if local else ''})"
    return (RecvSendStepper(venv) if key == "subproc-async" else VecEnvStepper(venv)), label


def _parent_envs(venv: Any) -> int:
    """How many envs the parent steps itself (its own slice under ``step_in_parent``)."""
    last = venv.workers[-1]
    return last.stop - last.first_index if last.is_local else 0


def _peer(args: OverheadArgs, env: str, key: str) -> tuple[Stepper, str] | str:
    """EnvPool or PufferLib on CartPole-v1 (built as the workloads command builds them), or why not."""
    if importlib.util.find_spec(key) is None:
        return f"{key}: not installed (skipped)"
    if env != "cartpole":
        return f"{key}: has no {ENV_LABELS[env]} (skipped)"
    fns: EnvFns = [partial(make_env, "cartpole")] * args.num_envs
    stepper = build(Workload("N", "cartpole", args.num_envs), fns, METHODS[key], seed=0)
    return stepper, f"{METHODS[key].label} ({stepper.note})"


def measure(args: OverheadArgs, env: str, key: str, e: float, spins: SpinFile) -> Row | str:
    """One method on one env: its row, or why it was skipped."""
    built = _ours(args, env, key, spins) if key in ("dummy", "subproc", "subproc-async") else _peer(args, env, key)
    if isinstance(built, str):
        return built
    stepper, label = built
    try:
        stepper.start(seed=0)
        w = time_window(stepper, args.seconds, spins if key.startswith("subproc") else None)
    finally:
        stepper.close()
    p = w.thread / w.steps
    p_net = p - w.parent_spin / w.steps
    row = Row(label, w.steps / w.wall, p, p_net, p_net - w.parent_sleep / w.steps)
    if key == "dummy":
        row.note = "p includes e (the envs step in this thread)"
    elif key.startswith("subproc"):
        row.o, row.o_net = w.children / w.steps - e, (w.children - w.worker_spin) / w.steps - e
        row.o_work = row.o_net - w.worker_sleep / w.steps
        local = _parent_envs(stepper.venv)  # type: ignore[attr-defined]
        if local:
            row.p_net -= e * local / args.num_envs
            row.p_work -= e * local / args.num_envs
            row.note = f"p_net, p_work: less the env time of the parent's {local} envs (e x {local}/{args.num_envs})"
    elif key == "envpool":
        row.o, row.note = (w.process - w.thread) / w.steps, "o: its threads' CPU, its own env included"
    else:
        row.o, row.note = w.children / w.steps - e, "o_net: its workers' spinning is not counted"
    return row


# ---------------------------------------------------------------- the model
@dataclass(frozen=True)
class Costs:
    """Seconds per env step: the driving thread ``p``, the workers beyond the env ``o``, the env ``e``;
    ``latency``: seconds per lock-step batch the per-step costs do not explain (L)."""

    p: float
    o: float
    e: float
    latency: float


@dataclass(frozen=True)
class Projection:
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


def fitted_latency(row: Row, e: float, num_envs: int) -> float:
    """L: the lock-step batch time measured here less what p_net, e and o_net explain (>= 0)."""
    cores = available_cores()
    if cores < 2:
        return 0.0
    explained = num_envs * row.p_net + num_envs / (cores - 1) * (e + row.o_net)
    return max(0.0, num_envs / row.steps_per_s - explained)


def projection_lines(args: OverheadArgs, rows: dict[str, Row | str], e: float) -> list[str]:
    """The model's formula and its projection to each of ``--project-cores``: from p_net
    and o_net, and from p_work and o_work (nobody sleeps)."""
    lock, asyn = rows.get("subproc"), rows.get("subproc-async")
    if not isinstance(lock, Row):
        return ["(no projection: SubprocVecEnv lock-step was not measured)"]
    n = args.num_envs
    asyn = asyn if isinstance(asyn, Row) else lock
    latency = fitted_latency(lock, e, n)
    costs, async_costs = Costs(lock.p_net, lock.o_net, e, latency), Costs(asyn.p_net, asyn.o_net, e, 0.0)
    work, async_work = Costs(lock.p_work, lock.o_work, e, latency), Costs(asyn.p_work, asyn.o_work, e, 0.0)
    lines = [f"model: lock-step batch time = N*p + N/(C-1)*(e+o) + L; async throughput = min(1/p, (C-1)/(e+o)); "
             f"ceiling = C/e; with N = {n}, e = {1e6 * e:.2f} us, p = p_net, o = o_net of SubprocVecEnv "
             f"(lock-step p {1e6 * costs.p:.2f} us, o {1e6 * costs.o:.2f} us, L {1e6 * costs.latency:.1f} us fitted "
             f"on these {available_cores()} cores; recv/send p {1e6 * async_costs.p:.2f} us, "
             f"o {1e6 * async_costs.o:.2f} us); the 'work' columns take p = p_work, o = o_work instead", ""]
    rows_out = []
    for cores in args.cores():
        lockstep, asynchronous = project(costs, n, cores), project(async_costs, n, cores)
        rows_out.append([f"{cores:g}", fmt(1e6 * lockstep.lockstep_batch_s, ".1f"), fmt(lockstep.lockstep_steps_per_s),
                         fmt(asynchronous.async_steps_per_s), fmt(project(work, n, cores).lockstep_steps_per_s),
                         fmt(project(async_work, n, cores).async_steps_per_s), fmt(lockstep.ceiling_steps_per_s)])
    header = ["C (cores)", "lock-step batch us", "lock-step steps/s", "async steps/s", "lock-step steps/s, work",
              "async steps/s, work", "ceiling steps/s"]
    return lines + markdown_table(header, rows_out)


# ---------------------------------------------------------------- the command
def _env_table(args: OverheadArgs, env: str, spins: SpinFile) -> list[str]:
    """Every method on ``env``, and the projection."""
    e = env_cost(env, args.episode_length)
    rows = {key: measure(args, env, key, e, spins) for key in args.methods.split(",")}
    length = f", episodes of {args.episode_length} steps" if env == "zero" else ""
    lines = [f"## {ENV_LABELS[env]} x {args.num_envs}{length}: e = {1e6 * e:.2f} us of CPU per step", ""]
    header = ["method", "steps/s", "p us", "p_net us", "p_work us", "o us", "o_net us", "o_work us", "note"]
    lines += markdown_table(header, [r.cells() for r in rows.values() if isinstance(r, Row)], "lrrrrrrrl")
    skipped = [f"- {r}" for r in rows.values() if isinstance(r, str)]
    lines += ["", *skipped, ""] if skipped else [""]
    return lines + projection_lines(args, rows, e) + [""]


def run_overhead(args: OverheadArgs) -> int:
    """Measure every method on every env; print the tables and the projections."""
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SCRIPTS), os.environ.get("PYTHONPATH")]))
    cpus = f"planned for {args.cpus} CPUs (VEC_ENVS_CPUS)" if args.cpus else f"{available_cores()} CPUs"
    from vec_envs import kernels

    loop = "EnvSlice's C loop" if kernels.report()["step"]["running"] else "EnvSlice's Python loop (no C kernels)"
    print(f"# Overhead per env step: {args.seconds:g} s windows, in_series={args.in_series!r}, {cpus}, {loop}; "
          f"p: driving thread CPU, o: workers' CPU beyond the env, _net: spinning excluded, _work: sleeping and waking "
          f"excluded too (us per env step)\n")
    with tempfile.TemporaryDirectory() as tmp, planned_cpus(args.cpus):
        spins = SpinFile(str(Path(tmp) / "spins.f64"), args.num_envs)
        np.zeros(2 * args.num_envs, np.float64).tofile(spins.path)
        for env in args.envs.split(","):
            print("\n".join(_env_table(args, env, spins)), flush=True)
    return 0
