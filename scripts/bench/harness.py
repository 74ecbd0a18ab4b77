"""The benchmark's cells: one method on one workload, measured in a fresh process by
``vec_envs.timing.cells`` (the measurement written once, shared with ``vec_envs.tune``), and
the machine ceiling.

``cell_spec`` describes a cell for that harness; in the cell's process ``build_cell`` makes
its stepper (frame-stacked where the workload stacks and the method does not), or the
machine ceiling's measurement: one raw env loop per available core, all running at once,
each in its own process, their timed windows started together behind a barrier: no batch
API beats it on CPU-bound envs, and it includes what the cores share (caches, memory
bandwidth, turbo limits, hyper-threads).

Example:
    >>> spec = cell_spec("W5", "dummy", seed=0, window=0.05, warmup=0.0, spin_per_ms=1_000)
    >>> spec.build, spec.options["method"]
    ('bench.harness:build_cell', 'dummy')
"""
from __future__ import annotations

import multiprocessing
import multiprocessing.context
import threading
from collections.abc import Callable
from functools import partial
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier
from typing import Any

from bench.contenders import METHODS, EnvFns, RawStepper, Stacked, build
from bench.envs import WORKLOADS, make_env
from vec_envs.timing.cells import ACTION_TABLE, CellSpec
from vec_envs.timing.loops import presample, run_for
from vec_envs.timing.machine import available_cores
from vec_envs.timing.steppers import EnvCounts

__all__ = ["available_cores", "cell_spec", "build_cell", "measure_ceiling"]

BARRIER_TIMEOUT_S = 120.0


def cell_spec(workload: str, method: str, seed: int, window: float, warmup: float, spin_per_ms: int,
              count_envs: bool = False) -> CellSpec:
    """The cell of ``method`` on ``workload`` (keys of ``METHODS`` and ``WORKLOADS``)."""
    return CellSpec("bench.harness:build_cell", {"workload": workload, "method": method, "spin_per_ms": spin_per_ms,
                                                 "count_envs": count_envs}, seed, window, warmup)


def build_cell(seed: int, workload: str, method: str, spin_per_ms: int, count_envs: bool = False) -> Any:
    """In the cell's process: the stepper of ``method`` on ``workload``, or the machine ceiling's measurement."""
    w, m = WORKLOADS[workload], METHODS[method]
    if m.family == "ceiling":
        return partial(measure_ceiling, w.env, spin_per_ms, seed)
    env_fns: EnvFns = [partial(make_env, w.env, i, spin_per_ms) for i in range(w.num_envs)]
    stepper = build(w, env_fns, m, seed)
    if w.frame_stack and not stepper.stacks_frames:
        stepper = Stacked(stepper, w.frame_stack)
    return EnvCounts(stepper) if count_envs else stepper


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
