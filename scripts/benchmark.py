"""Benchmark vec_envs' backends against gymnasium's (and SB3 / EnvPool when installed).

Each cell (workload x method x repeat) runs in a fresh process: this script again, in
``--cell`` mode. The cell builds and resets the batch (build time), warms up, then steps
it for a timed window with pre-sampled actions and reports env steps per second (summed
over the batch). The parent samples the cell's whole process tree with psutil: CPU
(user + sys over the window / wall; 200 % = two cores busy) and peak RSS. Repeats run
round-robin over the methods so machine drift hits every method alike.

Usage:
    python scripts/benchmark.py                      # everything, 3 repeats of 5 s
    python scripts/benchmark.py --quick              # short run, every workload
    python scripts/benchmark.py --workloads W1,W3 --methods raw,dummy,sync --out /tmp/bench
"""
from __future__ import annotations

import argparse
import collections
import importlib
import importlib.metadata
import importlib.util
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import threading
import time
import traceback
from dataclasses import asdict, dataclass, field, fields
from functools import partial
from pathlib import Path
from typing import Any, Callable

SCRIPTS = Path(__file__).resolve().parent
REPO = SCRIPTS.parent
for _path in (str(SCRIPTS), str(REPO)):
    if _path not in sys.path:
        sys.path.insert(0, _path)

import numpy as np  # noqa: E402
from gymnasium import spaces  # noqa: E402

from bench_envs import WORKLOADS, Workload, calibrate_spin, make_env  # noqa: E402

MARK = "@@bench "             # prefix of the lines a cell sends its parent on stdout
ACTION_TABLE = 256            # pre-sampled action batches, cycled
RSS_INTERVAL_S = 0.1          # how often the parent samples the cell's process tree
QUICK = {"repeats": 1, "window": 1.0, "warmup": 0.25}
SUBPROC_W2_PEAK_MB, SUBPROC_W2_BUILD_S = 300, 2.0
NOISY_OTHER_PCT = 20          # flag a row when other processes used more CPU than this meanwhile


@dataclass
class Args:
    """Command-line options (each field is one ``--flag``)."""

    workloads: str = field(default="all", metadata={"help": "comma-separated workloads (W1..W5) or 'all'"})
    methods: str = field(default="all", metadata={
        "help": "comma-separated method keys or 'all' (with --quick, 'all' means the quick subset); "
                "see --list"})
    repeats: int = field(default=3, metadata={"help": "cells per (workload, method); the table shows the median"})
    window: float = field(default=5.0, metadata={"help": "seconds of each timed window"})
    warmup: float = field(default=1.0, metadata={"help": "seconds stepped before the timed window"})
    quick: bool = field(default=False, metadata={
        "help": "short run: 1 repeat, 1 s windows, 0.25 s warm-up, the quick subset of methods"})
    out: str = field(default="bench_results", metadata={
        "help": "directory for results.md, ratios.png and cells.json (created if missing)"})
    seed: int = field(default=0, metadata={"help": "seeds the envs and the pre-sampled actions"})
    limit_cores: int = field(default=2, metadata={"help": "cores in the 'N-core limit' column (N x raw steps/s)"})
    cell_timeout: float = field(default=300.0, metadata={"help": "seconds before a cell's process tree is killed"})
    list: bool = field(default=False, metadata={"help": "list the workloads and methods, then exit"})
    cell: str = field(default="", metadata={"help": "internal: run one cell (a JSON spec) and print its result"})


# ---------------------------------------------------------------- methods
@dataclass(frozen=True)
class Method:
    """One way to step a workload.

    Attributes:
        key: command-line name.
        label: the table's name for it.
        family: which builder makes it (raw, ours, gymnasium, sb3, envpool).
        options: constructor arguments for that builder.
        quick: part of the ``--quick`` subset.
        workloads: the workloads it can run (None: all).
    """

    key: str
    label: str
    family: str
    options: dict = field(default_factory=dict)
    quick: bool = False
    workloads: tuple | None = None


METHODS: dict[str, Method] = {m.key: m for m in [
    Method("raw", "raw (1 env, plain loop)", "raw", quick=True),
    Method("dummy", "DummyVecEnv", "ours", {"backend": "DummyVecEnv"}, quick=True),
    Method("subproc", "SubprocVecEnv() (default args)", "ours", {"backend": "SubprocVecEnv"}, quick=True),
    Method("subproc-auto-noshm", "SubprocVecEnv(in_series='auto', shared_memory=False)", "ours",
           {"backend": "SubprocVecEnv", "in_series": "auto", "shared_memory": False}),
    Method("subproc-1", "SubprocVecEnv(in_series=1)", "ours", {"backend": "SubprocVecEnv", "in_series": 1},
           workloads=("W1", "W3", "W4", "W5")),
    Method("subproc-2", "SubprocVecEnv(in_series=2)", "ours", {"backend": "SubprocVecEnv", "in_series": 2},
           workloads=("W1", "W3", "W4", "W5")),
    Method("subproc-4", "SubprocVecEnv(in_series=4)", "ours", {"backend": "SubprocVecEnv", "in_series": 4},
           workloads=("W1", "W3", "W4", "W5")),
    Method("ray", "RayVecEnv(in_series='auto')", "ours", {"backend": "RayVecEnv", "in_series": "auto"}),
    Method("sync", "gymnasium SyncVectorEnv", "gymnasium", {"cls": "SyncVectorEnv"}, quick=True),
    Method("async", "gymnasium AsyncVectorEnv(shared_memory=True)", "gymnasium",
           {"cls": "AsyncVectorEnv", "shared_memory": True}, quick=True),
    Method("sb3-dummy", "SB3 DummyVecEnv", "sb3", {"cls": "DummyVecEnv"}),
    Method("sb3-subproc", "SB3 SubprocVecEnv", "sb3", {"cls": "SubprocVecEnv"}),
    Method("envpool", "EnvPool", "envpool", workloads=("W1", "W2", "W3", "W4")),
]}
OURS_MODULES = {"DummyVecEnv": "vec_envs.dummy_vec_env", "SubprocVecEnv": "vec_envs.subproc.subproc_vec_env",
                "RayVecEnv": "vec_envs.ray.ray_vec_env"}


def load_ours(name: str) -> type:
    """``vec_envs.<name>``, from the package or its module; ImportError saying why not."""
    problem = None
    for module in ("vec_envs", OURS_MODULES[name]):
        try:
            return getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError) as exc:
            problem = exc
    raise ImportError(f"vec_envs.{name} is not importable ({problem})")


def load_vec_frame_stack() -> type | None:
    """``wrappers.VecFrameStack`` if it is importable yet, else None."""
    try:
        return importlib.import_module("wrappers").VecFrameStack
    except (ImportError, AttributeError):
        return None


def unavailable(method: Method, workload: Workload) -> str | None:
    """Why ``method`` cannot run ``workload`` here, or None when it can."""
    if method.workloads is not None and workload.key not in method.workloads:
        return f"{method.label} cannot run {workload.key}"
    needs = {"sb3": "stable_baselines3", "envpool": "envpool"}.get(method.family)
    if method.options.get("backend") == "RayVecEnv":
        needs = "ray"
    if needs and importlib.util.find_spec(needs) is None:
        return f"{method.label} skipped: {needs} is not installed"
    if method.family == "ours":
        try:
            load_ours(method.options["backend"])
        except ImportError as exc:
            return f"{method.label} skipped: {exc}"
    return None


# ---------------------------------------------------------------- steppers (cell side)
class Stepper:
    """What the timed loop drives: one batch API (or one env) behind one interface."""

    num_envs: int
    action_space: spaces.Space
    stacks_frames = False
    note = ""

    def reset(self, seed: int) -> Any:
        """Seed (env i with ``seed + i``) and reset; returns the batched first observations."""
        raise NotImplementedError

    def step(self, actions: Any) -> tuple[Any, Any]:
        """Step with one batch of actions; returns ``(obs, dones)``."""
        raise NotImplementedError

    def prepare(self, actions: np.ndarray) -> list:
        """The pre-sampled ``(steps, num_envs)`` actions as the per-step arguments of ``step``."""
        return list(actions)

    def close(self) -> None:
        """Close the envs (and join any workers)."""
        raise NotImplementedError


class RawStepper(Stepper):
    """A single env in a plain loop (reset when its episode ends): the per-core rate."""

    def __init__(self, env: Any) -> None:
        self.env, self.num_envs, self.action_space = env, 1, env.action_space

    def reset(self, seed: int) -> Any:
        return self.env.reset(seed=seed)[0][None]

    def step(self, action: Any) -> tuple[Any, Any]:
        obs, _, terminated, truncated, _ = self.env.step(action)
        done = terminated or truncated
        if done:
            obs, _ = self.env.reset()
        return obs, done

    def prepare(self, actions: np.ndarray) -> list:
        return list(actions[:, 0])

    def close(self) -> None:
        self.env.close()


class VecEnvStepper(Stepper):
    """The baselines / SB3 API: ``seed()``, ``reset() -> obs``, ``step() -> 4-tuple``."""

    def __init__(self, venv: Any, stacks_frames: bool = False, note: str = "") -> None:
        self.venv, self.num_envs, self.action_space = venv, venv.num_envs, venv.action_space
        self.stacks_frames, self.note = stacks_frames, note

    def reset(self, seed: int) -> Any:
        self.venv.seed(seed)
        return self.venv.reset()

    def step(self, actions: Any) -> tuple[Any, Any]:
        obs, _, dones, _ = self.venv.step(actions)
        return obs, dones

    def close(self) -> None:
        self.venv.close()


class GymVectorStepper(Stepper):
    """gymnasium.vector: ``reset(seed=) -> (obs, info)``, ``step() -> 5-tuple``."""

    def __init__(self, envs: Any, action_space: spaces.Space, stacks_frames: bool = False) -> None:
        self.envs, self.num_envs, self.action_space = envs, envs.num_envs, action_space
        self.stacks_frames = stacks_frames

    def reset(self, seed: int) -> Any:
        return self.envs.reset(seed=seed)[0]

    def step(self, actions: Any) -> tuple[Any, Any]:
        obs, _, terminated, truncated, _ = self.envs.step(actions)
        return obs, terminated | truncated

    def close(self) -> None:
        self.envs.close()


class EnvPoolStepper(GymVectorStepper):
    """EnvPool (untested here: not installed): seeded at make time, next-step auto-reset."""

    note = "EnvPool: its own C++ envs and preprocessing; next-step auto-reset"

    def reset(self, seed: int) -> Any:
        return self.envs.reset()[0]


class FrameStacker:
    """The last ``n`` frames of every env on the last axis; an env's stack is zeroed when
    its episode ends (what SB3's and baselines' VecFrameStack do)."""

    def __init__(self, n: int) -> None:
        self.n = n

    def reset(self, obs: np.ndarray) -> np.ndarray:
        self.channels = obs.shape[-1]
        self.frames_shape = obs.shape
        self.stacked = np.zeros((*obs.shape[:-1], self.channels * self.n), obs.dtype)
        self.stacked[..., -self.channels:] = obs
        return self.stacked

    def push(self, obs: np.ndarray, dones: Any) -> np.ndarray:
        self.stacked = np.roll(self.stacked, -self.channels, axis=-1)
        self.stacked[np.atleast_1d(dones)] = 0
        self.stacked[..., -self.channels:] = np.reshape(obs, self.frames_shape)
        return self.stacked


class Stacked(Stepper):
    """Any stepper followed by the in-script ``FrameStacker``."""

    def __init__(self, inner: Stepper, n: int) -> None:
        self.inner, self.stacker = inner, FrameStacker(n)
        self.num_envs, self.action_space = inner.num_envs, inner.action_space
        self.stacks_frames = True
        self.note = "; ".join(filter(None, [inner.note, "frame stack: in-script stacker"]))

    def reset(self, seed: int) -> Any:
        return self.stacker.reset(self.inner.reset(seed))

    def step(self, actions: Any) -> tuple[Any, Any]:
        obs, dones = self.inner.step(actions)
        return self.stacker.push(obs, dones), dones

    def prepare(self, actions: np.ndarray) -> list:
        return self.inner.prepare(actions)

    def close(self) -> None:
        self.inner.close()


def build_raw(workload: Workload, env_fns: list, options: dict) -> Stepper:
    """Env 0 of the workload, alone."""
    return RawStepper(env_fns[0]())


def build_ours(workload: Workload, env_fns: list, options: dict) -> Stepper:
    """A vec_envs backend (``options["backend"]`` + its kwargs), with ``VecFrameStack`` if it exists."""
    options = dict(options)
    venv = load_ours(options.pop("backend"))(env_fns, **options)
    note = f"in_series resolved to {venv.in_series}" if hasattr(venv, "in_series") else ""
    stack = load_vec_frame_stack() if workload.frame_stack else None
    if stack is None:
        return VecEnvStepper(venv, note=note)
    note = "; ".join(filter(None, [note, "frame stack: wrappers.VecFrameStack"]))
    return VecEnvStepper(stack(venv, workload.frame_stack), True, note)


def build_gymnasium(workload: Workload, env_fns: list, options: dict) -> Stepper:
    """A gymnasium vector env with same-step auto-reset (the work our backends do)."""
    import gymnasium

    options = dict(options)
    cls = getattr(gymnasium.vector, options.pop("cls"))
    envs = cls(env_fns, autoreset_mode=gymnasium.vector.AutoresetMode.SAME_STEP, **options)
    return GymVectorStepper(envs, envs.single_action_space)


def build_sb3(workload: Workload, env_fns: list, options: dict) -> Stepper:
    """Stable-Baselines3's DummyVecEnv or SubprocVecEnv with its default arguments."""
    from stable_baselines3.common import vec_env

    return VecEnvStepper(getattr(vec_env, options["cls"])(env_fns))


ENVPOOL_ATARI = {"episodic_life": False, "reward_clip": False, "repeat_action_probability": 0.25}
ENVPOOL_TASKS = {
    "W1": ("CartPole-v1", {}),
    "W2": ("CartPole-v1", {}),
    "W3": ("Pong-v5", {**ENVPOOL_ATARI, "img_height": 210, "img_width": 160, "gray_scale": False,
                       "stack_num": 1, "noop_max": 1}),
    "W4": ("Breakout-v5", {**ENVPOOL_ATARI, "stack_num": 4}),
}


def build_envpool(workload: Workload, env_fns: list, options: dict) -> Stepper:
    """EnvPool's own envs (its Atari preprocessing and frame stack stand in for ours)."""
    import envpool

    task, kwargs = ENVPOOL_TASKS[workload.key]
    envs = envpool.make_gymnasium(task, num_envs=workload.num_envs, **kwargs)
    return EnvPoolStepper(envs, envs.action_space, stacks_frames=bool(workload.frame_stack))


BUILDERS: dict[str, Callable[[Workload, list, dict], Stepper]] = {
    "raw": build_raw, "ours": build_ours, "gymnasium": build_gymnasium, "sb3": build_sb3,
    "envpool": build_envpool,
}


# ---------------------------------------------------------------- one cell (cell side)
def presample(space: spaces.Space, num_envs: int, steps: int, seed: int) -> np.ndarray:
    """``(steps, num_envs, ...)`` actions drawn up front, so the timed loop draws none."""
    if isinstance(space, spaces.Discrete):
        rng = np.random.default_rng(seed)
        return rng.integers(space.start, space.start + space.n, size=(steps, num_envs))
    space.seed(seed)
    return np.array([[space.sample() for _ in range(num_envs)] for _ in range(steps)])


def step_for(step: Callable[[Any], Any], actions: list, seconds: float) -> tuple[int, float]:
    """Call ``step`` with the cycled ``actions`` for ``seconds``; returns (calls, wall s)."""
    count, period = 0, len(actions)
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        step(actions[count % period])
        count += 1
        now = time.perf_counter()
        if now >= deadline:
            return count, now - start


def emit(kind: str, payload: dict | None = None) -> None:
    """Send the parent one marker line (``window-start``, ``window-end``, ``result``, ``error``)."""
    print(MARK + kind + " " + json.dumps(payload or {}), flush=True)


def shutdown_ray() -> None:
    """Stop a Ray runtime this cell started (RayVecEnv starts one if none is running)."""
    if "ray" in sys.modules and sys.modules["ray"].is_initialized():
        sys.modules["ray"].shutdown()


def measure(spec: dict) -> dict:
    """Build + reset (timed), warm up, time one window; the cell's result."""
    workload, method = WORKLOADS[spec["workload"]], METHODS[spec["method"]]
    env_fns = [partial(make_env, workload.key, i, spec["spin_per_ms"]) for i in range(workload.num_envs)]
    start = time.perf_counter()
    stepper = BUILDERS[method.family](workload, env_fns, method.options)
    if workload.frame_stack and not stepper.stacks_frames:
        stepper = Stacked(stepper, workload.frame_stack)
    try:
        stepper.reset(spec["seed"])
        build_s = time.perf_counter() - start
        actions = presample(stepper.action_space, stepper.num_envs, ACTION_TABLE, spec["seed"])
        actions = stepper.prepare(actions)
        step_for(stepper.step, actions, spec["warmup"])
        emit("window-start")
        calls, seconds = step_for(stepper.step, actions, spec["window"])
        emit("window-end")
        if spec.get("handshake"):
            sys.stdin.readline()  # the parent has read the tree's CPU times: workers may exit now
    finally:
        stepper.close()
        shutdown_ray()
    steps = calls * stepper.num_envs
    return {"steps": steps, "seconds": seconds, "steps_per_s": steps / seconds, "build_s": build_s,
            "note": stepper.note}


def run_cell(spec: dict) -> int:
    """``--cell`` mode: measure one cell, print the result (or the error) as a marker line."""
    try:
        result = measure(spec)
    except Exception as exc:
        emit("error", {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()})
        return 1
    emit("result", result)
    return 0


# ---------------------------------------------------------------- process tree (parent side)
def process_tree(root: Any) -> list:
    """``root`` and all its descendants (children, grandchildren, ...)."""
    import psutil

    try:
        return [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def tree_cpu(root: Any) -> dict[int, float]:
    """user + sys seconds of every process in the tree, by pid."""
    import psutil

    times = {}
    for proc in process_tree(root):
        try:
            cpu = proc.cpu_times()
            times[proc.pid] = cpu.user + cpu.system
        except psutil.Error:
            pass
    return times


def machine_busy_s() -> float:
    """CPU seconds the whole machine has been busy (every process, plus time stolen by a hypervisor)."""
    import psutil

    t = psutil.cpu_times()
    return sum(getattr(t, name, 0.0) for name in ("user", "nice", "system", "irq", "softirq", "steal"))


def tree_rss(procs: list) -> int:
    """Summed RSS of ``procs`` in bytes (a page shared by several processes counts in each)."""
    import psutil

    total = 0
    for proc in procs:
        try:
            total += proc.memory_info().rss
        except psutil.Error:
            pass
    return total


class TreeSampler(threading.Thread):
    """Samples a process tree every ``RSS_INTERVAL_S``: peak summed RSS, and every process seen."""

    def __init__(self, root: Any) -> None:
        super().__init__(daemon=True)
        self.root, self.peak, self.seen = root, 0, {}
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.is_set():
            procs = process_tree(self.root)
            self.seen.update((p.pid, p) for p in procs[1:])
            self.peak = max(self.peak, tree_rss(procs))
            self.stopped.wait(RSS_INTERVAL_S)


def kill_tree(root: Any, killed: threading.Event) -> None:
    """Kill a cell that ran past its timeout, with everything it started."""
    import psutil

    killed.set()
    for proc in process_tree(root):
        try:
            proc.kill()
        except psutil.Error:
            pass


def kill_leftovers(procs: list, grace_s: float = 3.0) -> int:
    """Kill the processes of a finished cell that outlived it; returns how many."""
    import psutil

    alive = [p for p in procs if p.is_running()]
    _, alive = psutil.wait_procs(alive, timeout=grace_s)
    for proc in alive:
        try:
            proc.kill()
        except psutil.Error:
            pass
    return len(alive)


def cell_environ() -> dict[str, str]:
    """The cell's environment: the repo and scripts/ on PYTHONPATH (for spawned / Ray workers)."""
    env = dict(os.environ)
    paths = [str(REPO), str(SCRIPTS), *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))]
    env["PYTHONPATH"] = os.pathsep.join(paths)
    return env


def read_markers(proc: subprocess.Popen, root: Any) -> dict:
    """Follow the cell's marker lines; CPU % over its window is measured here, and the CPU
    that other processes of the machine used meanwhile (``other_cpu_pct``: noise)."""
    record: dict = {}
    cpu0, busy0, t0 = {}, 0.0, 0.0
    for line in proc.stdout:
        if not line.startswith(MARK):
            continue
        kind, _, payload = line[len(MARK):].partition(" ")
        if kind == "window-start":
            cpu0, busy0, t0 = tree_cpu(root), machine_busy_s(), time.perf_counter()
        elif kind == "window-end":
            wall, cpu1, busy = time.perf_counter() - t0, tree_cpu(root), machine_busy_s() - busy0
            tree = sum(t - cpu0.get(pid, 0.0) for pid, t in cpu1.items())
            record["cpu_pct"], record["other_cpu_pct"] = 100 * tree / wall, 100 * (busy - tree) / wall
            try:
                proc.stdin.write("go\n")
                proc.stdin.flush()
            except OSError:
                pass  # the cell died; its exit code tells
        else:
            record.update(json.loads(payload))
    return record


def run_cell_process(spec: dict, timeout: float) -> dict:
    """Run one cell in a fresh process; its result plus CPU %, peak MB, or an error."""
    import psutil

    cmd = [sys.executable, str(Path(__file__).resolve()), "--cell", json.dumps(spec)]
    with subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, env=cell_environ()) as proc:
        root, timed_out = psutil.Process(proc.pid), threading.Event()
        sampler, stderr_tail = TreeSampler(root), collections.deque(maxlen=20)
        drain = threading.Thread(target=lambda: stderr_tail.extend(proc.stderr), daemon=True)
        killer = threading.Timer(timeout, kill_tree, (root, timed_out))
        for thread in (sampler, drain, killer):
            thread.start()
        try:
            record = read_markers(proc, root)
            proc.wait()
        finally:
            killer.cancel()
            sampler.stopped.set()
            sampler.join()
            drain.join(timeout=5)
    record["peak_mb"] = sampler.peak / 2**20
    record["leftover_processes"] = kill_leftovers(list(sampler.seen.values()))
    if proc.returncode != 0 and "error" not in record:
        reason = f"timed out after {timeout:g} s" if timed_out.is_set() else "crashed"
        record["error"] = f"cell {reason} (exit code {proc.returncode}): " + "".join(stderr_tail)[-500:]
    return record


# ---------------------------------------------------------------- the run (parent side)
def plan_cells(args: Args, workloads: list[Workload], methods: list[Method],
               spin: int) -> tuple[list[dict], list[tuple]]:
    """Cells in run order (repeats outermost, methods rotated each repeat); skipped (w, m, why)."""
    runnable, skipped = {}, []
    for w in workloads:
        runnable[w.key] = []
        for m in methods:
            why = unavailable(m, w)
            if why:
                skipped.append((w.key, m.key, why))
            else:
                runnable[w.key].append(m.key)
    cells = []
    for r in range(args.repeats):
        for w in workloads:
            keys = runnable[w.key]
            shift = r % max(len(keys), 1)
            for key in keys[shift:] + keys[:shift]:
                cells.append({"workload": w.key, "method": key, "repeat": r, "seed": args.seed,
                              "window": args.window, "warmup": args.warmup, "spin_per_ms": spin,
                              "handshake": True})
    return cells, skipped


def run_all(cells: list[dict], timeout: float) -> list[dict]:
    """Run every cell with a tqdm bar (on stderr); each record holds its spec and result."""
    from tqdm import tqdm

    records = []
    bar = tqdm(cells, desc="cells", unit="cell", file=sys.stderr)
    for spec in bar:
        bar.set_postfix_str(f"{spec['workload']} {spec['method']} #{spec['repeat']}")
        records.append({**spec, **run_cell_process(spec, timeout)})
    return records


@dataclass
class Summary:
    """The repeats of one (workload, method): medians and the steps/s range."""

    rate: float = float("nan")
    low: float = float("nan")
    high: float = float("nan")
    build_s: float = float("nan")
    cpu_pct: float = float("nan")
    peak_mb: float = float("nan")
    other_cpu_pct: float = float("nan")
    errors: list = field(default_factory=list)
    notes: set = field(default_factory=set)


def summarize(records: list[dict]) -> dict[tuple[str, str], Summary]:
    """One Summary per (workload, method) that ran."""
    groups: dict[tuple[str, str], list[dict]] = collections.defaultdict(list)
    for rec in records:
        groups[rec["workload"], rec["method"]].append(rec)
    out = {}
    for key, recs in groups.items():
        good = [r for r in recs if "steps_per_s" in r]
        s = Summary(errors=[r["error"] for r in recs if "error" in r])
        s.notes = {r["note"] for r in good if r.get("note")}
        s.notes |= {f"{r['leftover_processes']} process(es) outlived close() and were killed"
                    for r in recs if r.get("leftover_processes")}
        if good:
            rates = [r["steps_per_s"] for r in good]
            s.rate, s.low, s.high = statistics.median(rates), min(rates), max(rates)
            s.build_s = statistics.median(r["build_s"] for r in good)
            s.cpu_pct = statistics.median(r.get("cpu_pct", float("nan")) for r in good)
            s.peak_mb = statistics.median(r["peak_mb"] for r in good)
            s.other_cpu_pct = statistics.median(r.get("other_cpu_pct", float("nan")) for r in good)
        out[key] = s
    return out


# ---------------------------------------------------------------- report
def fmt(value: float, spec: str = ",.0f", suffix: str = "") -> str:
    """``value`` formatted, or ``n/a`` for NaN (not measured)."""
    return "n/a" if math.isnan(value) else format(value, spec) + suffix


def ratio(a: float, b: float) -> float:
    """``a / b``; NaN when either was not measured."""
    return a / b if b > 0 else float("nan")


def summary_of(sums: dict, w: Workload, key: str) -> Summary:
    """The Summary of ``(w, key)``; an empty one (all NaN) when it did not run."""
    return sums.get((w.key, key), Summary())


def workload_table(w: Workload, methods: list[Method], sums: dict, limit_cores: int) -> list[str]:
    """The Markdown table of one workload (one row per method that ran or failed)."""
    sync, limit = summary_of(sums, w, "sync").rate, limit_cores * summary_of(sums, w, "raw").rate
    lines = [f"| method | steps/s median (min-max) | / Sync | / {limit_cores}-core limit | build s "
             "| CPU % | peak MB |", "|---|---:|---:|---:|---:|---:|---:|"]
    for m in methods:
        s = sums.get((w.key, m.key))
        if s is None:
            continue
        if math.isnan(s.rate):
            lines.append(f"| {m.label} | failed | n/a | n/a | n/a | n/a | n/a |")
            continue
        lines.append(f"| {m.label} | {fmt(s.rate)} ({fmt(s.low)}-{fmt(s.high)}) "
                     f"| {fmt(ratio(s.rate, sync), '.2f', 'x')} | {fmt(ratio(s.rate, limit), '.2f', 'x')} "
                     f"| {fmt(s.build_s, '.2f')} | {fmt(s.cpu_pct, '.0f')} | {fmt(s.peak_mb, '.0f')} |")
    return lines


def workload_notes(w: Workload, methods: list[Method], sums: dict, skipped: list[tuple]) -> list[str]:
    """Bullets under a workload's table: skipped methods, settings notes, failures."""
    notes = [f"- {why}" for wk, _, why in skipped if wk == w.key]
    noisy = []
    for m in methods:
        s = summary_of(sums, w, m.key)
        notes += [f"- {m.label}: {note}" for note in sorted(s.notes)]
        notes += [f"- {m.label} FAILED: {err.strip().splitlines()[0] if err.strip() else err}"
                  for err in s.errors]
        if s.other_cpu_pct > NOISY_OTHER_PCT:
            noisy.append(f"{m.label} {s.other_cpu_pct:.0f} %")
    if noisy:
        notes.append("- NOISY: other processes' CPU during the timed windows (median, 100 % = one core): "
                     + ", ".join(noisy))
    return notes


def check(value: float, ok: bool) -> str:
    """The 'met' cell of a target row."""
    return "n/a" if math.isnan(value) else ("yes" if ok else "**NO**")


def target_rows(w: Workload, sums: dict) -> list[str]:
    """Rows of the targets table for one workload."""
    ours = [(s.rate, METHODS[k].label) for (wk, k), s in sums.items()
            if wk == w.key and METHODS[k].family == "ours" and not math.isnan(s.rate)]
    best, best_label = max(ours, default=(float("nan"), "none ran"))
    best_ratio = ratio(best, summary_of(sums, w, "sync").rate)
    sub = ratio(summary_of(sums, w, "subproc").rate, summary_of(sums, w, "dummy").rate)
    rows = [f"| {w.key} | best of ours / Sync ({best_label}) | {fmt(best_ratio, '.2f', 'x')} "
            f"| >= {w.target}x | {check(best_ratio, best_ratio >= w.target)} |",
            f"| {w.key} | SubprocVecEnv() / DummyVecEnv | {fmt(sub, '.2f', 'x')} | >= 1.0x "
            f"| {check(sub, sub >= 1.0)} |"]
    if w.key == "W2":
        peak, build = summary_of(sums, w, "subproc").peak_mb, summary_of(sums, w, "subproc").build_s
        rows += [f"| W2 | SubprocVecEnv() peak MB | {fmt(peak)} | < {SUBPROC_W2_PEAK_MB} "
                 f"| {check(peak, peak < SUBPROC_W2_PEAK_MB)} |",
                 f"| W2 | SubprocVecEnv() build + reset s | {fmt(build, '.2f')} | < {SUBPROC_W2_BUILD_S} "
                 f"| {check(build, build < SUBPROC_W2_BUILD_S)} |"]
    return rows


def machine_line() -> str:
    """CPU model, cores, RAM, load, and the versions that matter."""
    import psutil

    model = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            model = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    versions = ", ".join(f"{name} {_version(name)}" for name in ("numpy", "gymnasium", "ale-py"))
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return (f"Machine: {model}, {os.cpu_count()} logical / {psutil.cpu_count(logical=False)} physical cores, "
            f"{psutil.virtual_memory().total / 2**30:.1f} GiB RAM, {platform.system()} {platform.release()}; "
            f"Python {platform.python_version()}, {versions}; load average at start {load}")


def _version(name: str) -> str:
    """The installed version of distribution ``name``."""
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def noise_line(records: list[dict]) -> str:
    """How busy the rest of the machine was during the timed windows."""
    other = [r["other_cpu_pct"] for r in records if "other_cpu_pct" in r]
    if not other:
        return "Other load: not measured."
    return (f"Other load (CPU used by processes outside the cell during its timed window, 100 % = one "
            f"core): median {statistics.median(other):.0f} %, max {max(other):.0f} %.")


def render_report(args: Args, workloads: list[Workload], methods: list[Method], sums: dict,
                  skipped: list[tuple], machine: str, spin: int, records: list[dict]) -> str:
    """The whole Markdown report: settings, one table per workload, the targets."""
    lines = ["# vec_envs benchmark", "", machine, "",
             f"Settings: {args.repeats} repeat(s) round-robin, {args.warmup:g} s warm-up, {args.window:g} s "
             f"window, seed {args.seed}{' (--quick)' if args.quick else ''}; steps/s = env steps summed over "
             f"the batch; CPU % = user+sys of the process tree / wall (100 % = one core); peak MB = "
             f"summed RSS of the process tree; {args.limit_cores}-core limit = {args.limit_cores} x raw steps/s; "
             f"W5 work: {spin} loop iterations per ms (calibrated at start).", "", noise_line(records), ""]
    for w in workloads:
        lines += [f"## {w.key}: {w.title}", "", *workload_table(w, methods, sums, args.limit_cores), ""]
        notes = workload_notes(w, methods, sums, skipped)
        lines += [*notes, ""] if notes else []
    lines += ["## Targets", "", "| workload | check | value | target | met |", "|---|---|---:|---|---|"]
    for w in workloads:
        lines += target_rows(w, sums)
    return "\n".join(lines) + "\n"


def plot_ratios(workloads: list[Workload], methods: list[Method], sums: dict, limit_cores: int,
                path: Path) -> None:
    """Grouped bars of steps/s / Sync per workload and method (whiskers: min-max), with the
    target and the N-core limit as horizontal ticks; written to ``path`` (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(max(6.0, 1.8 * len(workloads)), 4.5))
    shown = [m for m in methods if m.key not in ("raw", "sync")]
    width = 0.8 / max(len(shown), 1)
    for i, m in enumerate(shown):
        offset = (i - (len(shown) - 1) / 2) * width
        _ratio_bars(ax, workloads, m, sums, offset, width)
    for j, w in enumerate(workloads):
        limit = ratio(limit_cores * summary_of(sums, w, "raw").rate, summary_of(sums, w, "sync").rate)
        ax.hlines(w.target, j - 0.45, j + 0.45, colors="red", linestyles="--", label="target" if j == 0 else None)
        if not math.isnan(limit):
            ax.hlines(limit, j - 0.45, j + 0.45, colors="grey", linestyles=":",
                      label=f"{limit_cores}-core limit" if j == 0 else None)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(workloads)), [w.key for w in workloads])
    ax.set_ylabel("steps/s relative to gymnasium SyncVectorEnv")
    ax.legend(fontsize="x-small", ncols=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _ratio_bars(ax: Any, workloads: list[Workload], m: Method, sums: dict, offset: float, width: float) -> None:
    """One method's bars (one per workload it ran), ``offset`` from each workload's tick."""
    xs, ys, errs = [], [], [[], []]
    for j, w in enumerate(workloads):
        s, sync = summary_of(sums, w, m.key), summary_of(sums, w, "sync").rate
        if not math.isnan(ratio(s.rate, sync)):
            xs.append(j + offset)
            ys.append(s.rate / sync)
            errs[0].append((s.rate - s.low) / sync)
            errs[1].append((s.high - s.rate) / sync)
    ax.bar(xs, ys, width, yerr=errs, capsize=2, label=m.label)


# ---------------------------------------------------------------- command line
def parse_args(argv: list[str] | None = None) -> Args:
    """``Args`` from the command line (one ``--flag`` per field, its help from the field)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    for f in fields(Args):
        flag = "--" + f.name.replace("_", "-")
        if isinstance(f.default, bool):
            parser.add_argument(flag, action="store_true", help=f.metadata["help"])
        else:
            parser.add_argument(flag, type=type(f.default), default=f.default, help=f.metadata["help"])
    args = Args(**vars(parser.parse_args(argv)))
    if args.quick:
        args.repeats, args.window, args.warmup = QUICK["repeats"], QUICK["window"], QUICK["warmup"]
    return args


def select(text: str, table: dict, what: str) -> list:
    """The entries of ``table`` named in the comma-separated ``text`` ('all': every one)."""
    if text == "all":
        return list(table.values())
    keys = [k.strip() for k in text.split(",") if k.strip()]
    unknown = [k for k in keys if k not in table]
    if unknown:
        raise SystemExit(f"--{what}: unknown {unknown}; expected a comma-separated subset of {list(table)}")
    return [table[k] for k in keys]


def list_choices() -> str:
    """The text of ``--list``: every workload and method."""
    lines = ["workloads:", *(f"  {w.key}: {w.title}" for w in WORKLOADS.values()), "methods:"]
    lines += [f"  {m.key}: {m.label}{'  [quick]' if m.quick else ''}" for m in METHODS.values()]
    return "\n".join(lines)


if __name__ == "__main__":
    args = parse_args()
    if args.cell:
        sys.exit(run_cell(json.loads(args.cell)))
    if args.list:
        print(list_choices())
        sys.exit(0)
    workloads = select(args.workloads, WORKLOADS, "workloads")
    methods = select(args.methods, METHODS, "methods")
    if args.quick and args.methods == "all":
        methods = [m for m in methods if m.quick]
    machine, spin = machine_line(), calibrate_spin()
    cells, skipped = plan_cells(args, workloads, methods, spin)
    records = run_all(cells, args.cell_timeout)
    sums = summarize(records)
    report = render_report(args, workloads, methods, sums, skipped, machine, spin, records)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.md").write_text(report, encoding="utf-8")
    (out / "cells.json").write_text(json.dumps({"args": asdict(args), "cells": records}, indent=1),
                                    encoding="utf-8")
    plot_ratios(workloads, methods, sums, args.limit_cores, out / "ratios.png")
    print(report)
    print(f"written: {out / 'results.md'}, {out / 'ratios.png'}, {out / 'cells.json'}", file=sys.stderr)
    sys.exit(1 if any("error" in r for r in records) else 0)
