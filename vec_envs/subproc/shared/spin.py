"""Bounded, adaptive busy-waiting between the parent and its worker processes.

A process sleeping in ``poll``/``select`` takes a wake-up when a message arrives, which
can cost more than a cheap env's whole batch; a process polling in a loop sees it at
once. So each side polls for a while before it sleeps: 1.5x the usual wait,
or the usual wait plus four times its usual deviation if that is longer (as TCP sets its
retransmission timeout), never less than ``SPIN_MIN_S`` nor more than ``SPIN_MAX_S``. A budget
at the mean alone misses every wait that runs a little long, and each miss costs a wake-up
(a worker past its budget sleeps until the parent's next command comes through its pipe).
A spinning process yields its CPU at every turn, so it never starves a process it shares
a core with.

Lock-step, nobody spins when the processes outnumber the CPUs. Under ``recv``/``send`` the
parent mostly waits for envs, so only the workers are counted; each side then spins
*thriftily*: only while most of its recent waits ended within ``SPIN_MAX_S`` (cheap envs, a
quick agent), and not while waits mostly outlast a spin (slow envs, a slow agent), when
the CPU it would burn is one another process needs.
"""
from __future__ import annotations

import os
import select
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

__all__ = ["WAIT_TIMES", "Spin", "WaitTimes", "pipe_poller", "spin_until", "yield_cpu", "SPIN_MIN_S", "SPIN_MAX_S"]

SPIN_MIN_S = 200e-6
SPIN_MAX_S = 2e-3
_SMOOTHING = 0.125
_THRIFTY_HITS = 0.8  # a thrifty spin stops while fewer of the recent waits than this ended in time
_MAX_UNLEARNT = 64  # waits noted before they are learnt from anyway

#: give the CPU to another runnable process, if any (a spinning process calls it every turn)
yield_cpu = getattr(os, "sched_yield", lambda: None)


class WaitTimes:
    """The CPU this process spent waiting for the other side, in seconds: spinning
    (``spun``), and going to sleep, waking up and waking others (``slept``). Counted only
    while ``enabled`` (off by default: two clock reads per wait otherwise): a benchmark
    turns it on, in the parent and in each worker (from an env factory, which runs there),
    to tell a transport's work from its waiting.

    Example:
        >>> WAIT_TIMES.enabled, WAIT_TIMES.spun >= 0.0
        (False, True)
    """

    def __init__(self) -> None:
        self.enabled = False
        self.spun = 0.0
        self.slept = 0.0


#: this process's wait times (see ``WaitTimes``)
WAIT_TIMES = WaitTimes()


class Spin:
    """How long to poll before sleeping, learnt from the waits seen so far (``thrifty``:
    not at all while most waits outlast a spin).

    Example:
        >>> import time
        >>> spin = Spin(enabled=True)
        >>> start = time.perf_counter()
        >>> spin_until(lambda: time.perf_counter() - start > 1e-4, spin.budget())  # a reply "arrives"
        True
        >>> spin.record(time.perf_counter() - start)   # how long it took: the next budget adapts
    """

    def __init__(self, enabled: bool, thrifty: bool = False) -> None:
        self.enabled, self.thrifty = enabled, thrifty
        self._mean = SPIN_MIN_S / 2
        self._deviation = SPIN_MIN_S / 8
        self._hits = 1.0  # the share of recent waits a spin of SPIN_MAX_S would have seen end
        self._budget = SPIN_MIN_S
        self._unlearnt: list[float] = []  # waits recorded since the last budget()

    def budget(self) -> float:
        """Seconds to poll before sleeping (0 when spinning is off)."""
        if not self.enabled:
            return 0.0
        if self._unlearnt:
            self._learn()
        return self._budget

    def record(self, waited: float) -> None:
        """Note one wait (seconds from starting to wait until the message came). The next
        ``budget()`` learns from it: a process records just as its work arrives, and
        learns once it waits again, when nothing waits for it; nothing when spinning is off."""
        if not self.enabled:
            return
        self._unlearnt.append(waited)
        if len(self._unlearnt) >= _MAX_UNLEARNT:  # nobody asked for a budget in a while
            self._learn()

    def _learn(self) -> None:
        for waited in self._unlearnt:
            self._hits += _SMOOTHING * ((waited <= SPIN_MAX_S) - self._hits)
            error = min(waited, SPIN_MAX_S) - self._mean
            self._mean += _SMOOTHING * error
            self._deviation += 2 * _SMOOTHING * (abs(error) - self._deviation)
        self._unlearnt.clear()
        if self.thrifty and self._hits < _THRIFTY_HITS:
            self._budget = 0.0
        else:
            self._budget = min(SPIN_MAX_S, max(SPIN_MIN_S, 1.5 * self._mean, self._mean + 4 * self._deviation))


def spin_until(ready: Callable[[], Any], seconds: float) -> Any:
    """Call ``ready()`` until it returns something true or ``seconds`` passed; return it."""
    result = ready()
    if result or seconds <= 0:
        return result
    end = time.perf_counter() + seconds
    while not result and time.perf_counter() < end:
        yield_cpu()
        result = ready()
    return result


def pipe_poller(conn: Connection) -> Any:
    """A reusable ``select.poll`` on ``conn``: a look at the pipe far cheaper than ``conn.poll()``
    (None where there is no ``poll``)."""
    if not hasattr(select, "poll"):
        return None
    poller = select.poll()
    poller.register(conn.fileno(), select.POLLIN)
    return poller
