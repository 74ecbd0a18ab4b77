"""The timing loops, written once: throughput (``run_for``), latency (``time_calls``) and the
mean of a block (``time_block``); actions drawn up front (``presample``), so the timed loops
draw none.

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

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from gymnasium import spaces

__all__ = ["presample", "run_for", "time_calls", "time_block"]


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
