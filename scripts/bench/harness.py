"""The measurement, written once: the timing loops, one cell, the machine ceiling.

``run_for`` measures throughput (as many calls as fit in a window); ``time_calls``
latency (each call timed on its own); ``time_block`` the mean time of a block of calls
timed as one. Actions are drawn up front by ``presample``, so the timed loops draw none.

A cell is one method on one workload, measured in a fresh process:
``python -m bench.harness SPEC`` (``SPEC``: the JSON of a ``CellSpec``) builds and resets
the batch (build time), warms up, then runs the timed window with pre-sampled actions.
It talks to the parent (``bench.tree``) through marker lines on stdout: ``window-start``
and ``window-end`` around the window (the parent reads the process tree's CPU times
there; with ``handshake`` the cell then waits for a line on stdin, so that its workers
are still alive to be read), then ``result`` or ``error``.

The machine ceiling is one raw env loop per available core, all running at once, each
in its own process, their timed windows started together behind a barrier: no batch API
beats it on CPU-bound envs, and it includes what the cores share (caches, memory
bandwidth, turbo limits, hyper-threads).

Example:
    >>> calls, seconds = run_for(lambda action: None, [0, 1], 0.01)
    >>> calls > 0 and seconds >= 0.01
    True
    >>> time_calls(lambda action: None, [0, 1, 0]).shape
    (3,)
    >>> time_block(lambda action: None, [0, 1, 0], clock=time.process_time) >= 0
    True
"""
from __future__ import annotations

import json
import multiprocessing
import multiprocessing.context
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from functools import partial
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier
from typing import Any

import numpy as np
from gymnasium import spaces

from bench.contenders import METHODS, EnvFns, RawStepper, Stacked, build
from bench.envs import WORKLOADS, make_env

__all__ = ["presample", "run_for", "time_calls", "time_block", "available_cores", "measure_ceiling",
           "MARK", "CellSpec", "measure", "main"]

MARK = "@@bench "             # prefix of the lines a cell sends its parent on stdout
ACTION_TABLE = 256            # pre-sampled action batches, cycled
BARRIER_TIMEOUT_S = 120.0

def presample(space: spaces.Space[Any], num_envs: int, steps: int, seed: int) -> np.ndarray:
    """``(steps, num_envs, ...)`` actions of ``space``, drawn up front.

    Example:
        >>> presample(spaces.Discrete(3), num_envs=2, steps=4, seed=0).shape
        (4, 2)
    """
    if isinstance(space, spaces.Discrete):
        rng = np.random.default_rng(seed)
        return rng.integers(space.start, space.start + space.n, size=(steps, num_envs))
    space.seed(seed)
    return np.array([[space.sample() for _ in range(num_envs)] for _ in range(steps)])


def run_for(call: Callable[[Any], Any], arguments: Sequence[Any] | np.ndarray, seconds: float) -> tuple[int, float]:
    """Call ``call`` with the cycled ``arguments`` until ``seconds`` have passed.

    Returns:
        ``(calls, wall seconds)``: at least one call, whatever ``seconds``.
    """
    count, period = 0, len(arguments)
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        call(arguments[count % period])
        count += 1
        now = time.perf_counter()
        if now >= deadline:
            return count, now - start


def time_calls(call: Callable[[Any], Any], arguments: Sequence[Any] | np.ndarray) -> np.ndarray:
    """Seconds of each call of ``call``, once per element of ``arguments`` (in order)."""
    seconds = np.empty(len(arguments))
    for i, argument in enumerate(arguments):
        start = time.perf_counter()
        call(argument)
        seconds[i] = time.perf_counter() - start
    return seconds


def time_block(call: Callable[[Any], Any], arguments: Sequence[Any] | np.ndarray,
               clock: Callable[[], float] = time.perf_counter) -> float:
    """Seconds per call of ``call`` over ``arguments`` (one call each), the block timed as one.

    Args:
        call: what is timed.
        arguments: one argument per call, in order.
        clock: ``time.perf_counter`` (wall) or ``time.process_time`` (this process's CPU:
            on a busy machine it leaves out the time spent waiting for a core).
    """
    start = clock()
    for argument in arguments:
        call(argument)
    return (clock() - start) / len(arguments)


# ---------------------------------------------------------------- the machine ceiling
def available_cores() -> int:
    """CPUs this process may run on (its affinity mask where the OS has one)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _context() -> multiprocessing.context.ForkContext | multiprocessing.context.SpawnContext:
    """Fork where there is fork (the loops start at once), else spawn."""
    if "fork" in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


def _raw_loop(env: str, index: int, spin_per_ms: int, seed: int, warmup: float, window: float,
              started: Barrier, finished: Barrier, results: Queue[tuple[int, float] | str]) -> None:
    """One core's loop: warm up, wait for the others, time the window, report, wait to exit.

    A loop that fails reports why (a string on ``results``) and breaks both barriers, so
    that nobody waits for it.
    """
    stepper = None
    try:
        stepper = RawStepper(make_env(env, index, spin_per_ms))
        stepper.start(seed + index)
        actions = stepper.rows(presample(stepper.action_space, 1, ACTION_TABLE, seed + index))
        run_for(stepper.step, actions, warmup)
        started.wait(BARRIER_TIMEOUT_S)
        results.put(run_for(stepper.step, actions, window))
        finished.wait(BARRIER_TIMEOUT_S)  # stay alive until the parent has read our CPU time
    except BaseException as exc:
        results.put(f"loop {index}: {type(exc).__name__}: {exc}")
        started.abort()
        finished.abort()
        raise
    finally:
        if stepper is not None:
            stepper.close()


def measure_ceiling(env: str, spin_per_ms: int, seed: int, warmup: float, window: float,
                    window_start: Callable[[], None], window_end: Callable[[], None]) -> dict[str, Any]:
    """Run ``available_cores()`` raw loops of ``env`` at once; their summed steps/s.

    ``window_start`` / ``window_end`` are called around the common timed window (the
    cell reports them to the parent, which measures the process tree's CPU meanwhile).
    """
    cores = available_cores()
    context = _context()
    started, finished = context.Barrier(cores + 1), context.Barrier(cores + 1)
    results = context.Queue()
    loops = [context.Process(target=_raw_loop, daemon=True,
                             args=(env, i, spin_per_ms, seed, warmup, window, started, finished, results))
             for i in range(cores)]
    for loop in loops:
        loop.start()
    try:
        try:
            started.wait(BARRIER_TIMEOUT_S)
            window_start()
            timed = [results.get(timeout=window + BARRIER_TIMEOUT_S) for _ in loops]
            window_end()
            finished.wait(BARRIER_TIMEOUT_S)
        except threading.BrokenBarrierError:
            raise RuntimeError(f"the machine ceiling of {env}: {results.get(timeout=10)}") from None
        failed = [t for t in timed if isinstance(t, str)]
        if failed:
            raise RuntimeError(f"the machine ceiling of {env}: {failed[0]}")
    finally:
        for loop in loops:
            loop.join(timeout=10)
            if loop.is_alive():
                loop.kill()
    counts = [t for t in timed if not isinstance(t, str)]
    return {"steps": sum(c for c, _ in counts), "seconds": max(s for _, s in counts),
            "steps_per_s": sum(c / s for c, s in counts), "build_s": float("nan"), "note": f"{cores} loops"}


# ---------------------------------------------------------------- one cell
@dataclass(frozen=True)
class CellSpec:
    """What one cell measures.

    Attributes:
        workload: a key of ``WORKLOADS``.
        method: a key of ``METHODS``.
        repeat: which repeat this is (for the record only).
        seed: env i gets ``seed + i``; also seeds the pre-sampled actions.
        window: seconds of the timed window.
        warmup: seconds stepped before it.
        spin_per_ms: the busy env's loop iterations per millisecond.
        handshake: wait for a line on stdin after ``window-end``.
    """

    workload: str
    method: str
    repeat: int = 0
    seed: int = 0
    window: float = 1.0
    warmup: float = 0.25
    spin_per_ms: int = 25_000
    handshake: bool = False

    def to_json(self) -> str:
        """The command-line form of this spec."""
        return json.dumps(asdict(self))


def emit(kind: str, payload: dict[str, Any] | None = None) -> None:
    """Send the parent one marker line."""
    print(MARK + kind + " " + json.dumps(payload or {}), flush=True)


def window_end(spec: CellSpec) -> None:
    """Mark the end of the timed window; with a handshake, wait until the parent has read."""
    emit("window-end")
    if spec.handshake:
        sys.stdin.readline()


def shutdown_ray() -> None:
    """Stop a Ray runtime this cell started (RayVecEnv starts one if none is running)."""
    if "ray" in sys.modules and sys.modules["ray"].is_initialized():
        sys.modules["ray"].shutdown()


def measure(spec: CellSpec) -> dict[str, Any]:
    """Build + reset (timed), warm up, time one window; the cell's result."""
    workload, method = WORKLOADS[spec.workload], METHODS[spec.method]
    if method.family == "ceiling":
        return measure_ceiling(workload.env, spec.spin_per_ms, spec.seed, spec.warmup, spec.window,
                               partial(emit, "window-start"), partial(window_end, spec))
    env_fns: EnvFns = [partial(make_env, workload.env, i, spec.spin_per_ms) for i in range(workload.num_envs)]
    start = time.perf_counter()
    stepper = build(workload, env_fns, method, spec.seed)
    if workload.frame_stack and not stepper.stacks_frames:
        stepper = Stacked(stepper, workload.frame_stack)
    try:
        stepper.start(spec.seed)
        build_s = time.perf_counter() - start
        actions = stepper.rows(presample(stepper.action_space, stepper.num_envs, ACTION_TABLE, spec.seed))
        run_for(stepper.step, actions, spec.warmup)
        emit("window-start")
        calls, seconds = run_for(stepper.step, actions, spec.window)
        window_end(spec)
    finally:
        stepper.close()
        shutdown_ray()
    steps = calls * stepper.steps_per_call
    return {"steps": steps, "seconds": seconds, "steps_per_s": steps / seconds, "build_s": build_s,
            "note": stepper.note}


def main(argv: list[str]) -> int:
    """Measure the cell ``argv[0]`` (JSON); print its result, or its error, as a marker line."""
    try:
        result = measure(CellSpec(**json.loads(argv[0])))
    except Exception as exc:
        emit("error", {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()})
        return 1
    emit("result", result)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
