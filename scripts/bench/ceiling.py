"""The machine ceiling: one raw env loop per available core, all running at once.

No batch API can beat it on CPU-bound envs: it has no coordination at all. Each loop
runs in its own process (env ``i`` of the workload), they start their timed windows
together behind a barrier, and the ceiling is the sum of their steps/s. Measured this
way, rather than as cores x one raw loop, it includes what the cores share (caches,
memory bandwidth, turbo limits, hyper-threads).
"""
from __future__ import annotations

import multiprocessing
import multiprocessing.context
import os
import threading
from collections.abc import Callable
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier
from typing import Any

from bench.envs import make_env
from bench.steppers import RawStepper
from bench.timing import presample, run_for

__all__ = ["available_cores", "measure_ceiling"]

ACTION_TABLE = 256
BARRIER_TIMEOUT_S = 120.0


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
