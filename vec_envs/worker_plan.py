"""How many worker processes ``in_series="auto"`` calls for: the plan, from what one env's step
costs, and the probe that measures that cost.

A worker steps its slice of envs one after the other, so a batch takes a worker
``in_series`` steps of wall time, of which only the CPU part needs a core. Where the envs
mostly compute (a step's CPU time is at least ``WAITING_BELOW`` of its wall time, or the
step is too short for a wait to be worth a process: under ``MIN_WAIT_S``) one worker per
CPU keeps every core busy, and the parent steps the last slice itself. Where they mostly
wait (a sleep, a socket, a simulator in another process), one worker per CPU leaves the
cores idle while each worker waits through its slice: the plan then starts about
``cpus / busy`` workers (``busy`` = CPU / wall of a step), so that their waits overlap while
their computing still fits the CPUs, at most ``MAX_WORKERS_PER_CPU`` per CPU and one per
env; the parent then only drives (its slice would wait in series too).

``measure_step_cost`` times a few steps of an env (a throw-away one: it is reset and
stepped with random actions) with the wall and the CPU clock of the calling thread;
``probe_step_cost`` runs it in a child process of a multiprocessing context (the one the
workers start in), so the caller builds no env itself: the call a transport makes before
it starts its workers. On a busy machine a step that computes also waits, for a CPU: where
Linux says how long the thread was ready to run but not running
(``/proc/thread-self/schedstat``), that time is left out of the wall time the plan weighs,
so only the env's own waits count as waiting.

Example:
    >>> plan_workers(num_envs=16, cpus=2, wall_s=1e-3, cpu_s=2e-5)      # waits: a worker per env
    WorkerPlan(in_series=1, step_in_parent=False, workers=16, waiting=True)
    >>> plan_workers(num_envs=8, cpus=2, wall_s=1e-3, cpu_s=1e-3)       # computes: one per CPU
    WorkerPlan(in_series=4, step_in_parent=True, workers=2, waiting=False)
    >>> plan_workers(num_envs=64, cpus=2, wall_s=1e-3, cpu_s=2.5e-4)    # waits 3/4 of its step
    WorkerPlan(in_series=8, step_in_parent=False, workers=8, waiting=True)
"""
from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from vec_envs.arguments import check_int

__all__ = ["WAITING_BELOW", "MIN_WAIT_S", "MAX_WORKERS_PER_CPU", "PROBE_TIMEOUT_S", "StepCost", "WorkerPlan",
           "plan_workers", "measure_step_cost", "probe_step_cost"]

#: a step whose CPU time is below this share of its wall time mostly waits
WAITING_BELOW = 0.5
#: steps shorter than this keep one worker per CPU: a wait this short costs less than waking a process
MIN_WAIT_S = 100e-6
#: the most workers per CPU a plan starts for envs that wait
MAX_WORKERS_PER_CPU = 8
#: seconds ``probe_step_cost`` waits for its child (building the env included) before giving up
PROBE_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class StepCost:
    """What one env's step took, on average: ``wall_s`` seconds, ``cpu_s`` of them on a CPU and
    ``queued_s`` ready to run but waiting for a CPU (0 where the system does not say), measured
    over ``steps`` steps."""

    wall_s: float
    cpu_s: float
    steps: int
    queued_s: float = 0.0

    @property
    def own_s(self) -> float:
        """The step's wall time less its waits for a CPU, which ``plan_workers`` takes as ``wall_s``."""
        return max(0.0, self.wall_s - self.queued_s)

    @property
    def busy(self) -> float:
        """How much of a step is computing, waits for a CPU left out (1 when all of it, near 0 when it waits)."""
        return min(1.0, self.cpu_s / self.own_s) if self.own_s > 0 else 1.0


@dataclass(frozen=True)
class WorkerPlan:
    """A layout for ``in_series="auto"``: envs per worker, whether the parent steps the last
    slice itself, how many slices that makes, and whether it was chosen for envs that wait."""

    in_series: int
    step_in_parent: bool
    workers: int
    waiting: bool


def plan_workers(num_envs: int, cpus: int, wall_s: float, cpu_s: float) -> WorkerPlan:
    """The layout for ``num_envs`` envs on ``cpus`` CPUs whose step takes ``wall_s`` seconds
    (less any wait for a CPU: ``StepCost.own_s``), ``cpu_s`` of them
    computing (see the module's docstring). ``workers`` counts the parent's own slice when
    it steps one."""
    check_int("plan_workers(): num_envs", num_envs)
    check_int("plan_workers(): cpus", cpus)
    if not (wall_s >= 0 and cpu_s >= 0):
        raise ValueError(f"plan_workers(): wall_s and cpu_s must be seconds >= 0, received {wall_s!r}, {cpu_s!r}")
    busy = StepCost(wall_s, cpu_s, 1).busy
    if wall_s < MIN_WAIT_S or busy >= WAITING_BELOW:
        in_series = math.ceil(num_envs / min(num_envs, cpus))
        slices = math.ceil(num_envs / in_series)
        return WorkerPlan(in_series, in_series < num_envs, slices, waiting=False)
    workers = min(num_envs, MAX_WORKERS_PER_CPU * cpus, math.ceil(cpus / max(busy, 1e-9)))
    in_series = math.ceil(num_envs / workers)
    return WorkerPlan(in_series, False, math.ceil(num_envs / in_series), waiting=True)


def measure_step_cost(env_fn: Callable[[], Any], max_steps: int = 50, max_seconds: float = 0.1,
                      warmup: int = 3) -> StepCost:
    """Build an env with ``env_fn``, reset it, step it ``warmup`` times, then time up to
    ``max_steps`` steps (at least 3, at most ``max_seconds`` of them) with random actions,
    each on its own: the median wall, CPU (this thread's) and queued seconds of a step (a
    rare stall, a page fault or a swap-in, does not count), resets after an episode's end
    included. The env is closed at the end.

    Example:
        >>> import gymnasium as gym
        >>> cost = measure_step_cost(lambda: gym.make("CartPole-v1"))
        >>> cost.steps >= 3 and cost.cpu_s > 0 and cost.busy > 0
        True
    """
    env = env_fn()
    try:
        env.reset(seed=0)
        env.action_space.seed(0)
        actions = [env.action_space.sample() for _ in range(max(max_steps, warmup))]
        for action in actions[:warmup]:
            _step(env, action)
        samples: list[tuple[float, float, float]] = []
        deadline = time.perf_counter() + max_seconds
        while len(samples) < max_steps and (len(samples) < 3 or time.perf_counter() < deadline):
            queued, cpu, wall = _queued_s(), time.thread_time(), time.perf_counter()
            _step(env, actions[len(samples) % len(actions)])
            samples.append((time.perf_counter() - wall, time.thread_time() - cpu, max(0.0, _queued_s() - queued)))
        wall_s, cpu_s, queued_s = (statistics.median(column) for column in zip(*samples))
        return StepCost(wall_s, cpu_s, len(samples), queued_s)
    finally:
        env.close()


def _queued_s() -> float:
    """Seconds this thread has spent ready to run but waiting for a CPU (0 where unknown)."""
    try:
        with open("/proc/thread-self/schedstat", encoding="ascii") as f:
            return int(f.read().split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return 0.0


def _step(env: Any, action: Any) -> None:
    _, _, terminated, truncated, _ = env.step(action)
    if terminated or truncated:
        env.reset()


def probe_step_cost(env_fn: Callable[[], Any], context: Any = None,
                    timeout: float = PROBE_TIMEOUT_S) -> StepCost | None:
    """``measure_step_cost(env_fn)`` in a child process of the multiprocessing ``context`` (a
    context object or a start method's name; None: the default), joined before returning;
    None when the child fails or outlives ``timeout`` (it is then killed): the caller keeps
    its layout for envs that compute, and the env's own error comes from its workers.

    Example:
        >>> import gymnasium as gym
        >>> from functools import partial
        >>> cost = probe_step_cost(partial(gym.make, "CartPole-v1"), "spawn")
        >>> cost is not None and cost.busy > 0.5
        True
    """
    import multiprocessing

    import cloudpickle

    ctx: Any = multiprocessing.get_context(context) if context is None or isinstance(context, str) else context
    parent_end, child_end = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_probe_child, args=(cloudpickle.dumps(env_fn), child_end), daemon=True)
    child.start()
    child_end.close()
    try:
        if parent_end.poll(timeout):
            reply = parent_end.recv()
            return reply if isinstance(reply, StepCost) else None
        return None
    except (EOFError, OSError):
        return None  # the child died before it answered
    finally:
        parent_end.close()
        child.join(timeout=1.0)
        if child.is_alive():
            child.kill()
            child.join()


def _probe_child(pickled_env_fn: bytes, conn: Any) -> None:
    """In the probe's process: the step cost, or the error's text, back on ``conn``."""
    import cloudpickle

    try:
        conn.send(measure_step_cost(cloudpickle.loads(pickled_env_fn)))
    except Exception as exc:  # noqa: BLE001 (any failure means no plan: the caller keeps its layout)
        conn.send(f"{type(exc).__name__}: {exc}")
    finally:
        conn.close()
