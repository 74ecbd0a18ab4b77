"""The wake-up: how a process waiting for the other side's numbers in the lanes learns they are
there, both ways, never hanging. Each side polls a while (``Spin``: a budget learnt from past waits,
like TCP's retransmission timeout; none when processes outnumber CPUs), then sleeps on descriptors
the parent made (``Doorbell``, handed to the workers with the shared memory):

- the parent (``Doorbell.wait``) writes in its row the total of answers it awaits and its sleep's
  number, fences, looks once more, and sleeps on its wake fd (an eventfd, else a pipe) and the
  workers' sentinels (a dying worker wakes it); the worker whose answer makes the total writes the
  wake fd once per sleep (``WorkerLanes.answer``). After an answerless sleep (``FALLBACK_S`` at
  most) it wakes the sleeping workers that owe answers through their pipes.
- a worker (``worker_wait``) marks its row asleep, fences, reads how often the shared rings were
  rung (``g``), looks at its lanes once more, and sleeps on its pipe, its bell and ring
  ``(g + 1) % RINGS`` (eventfds). Asking for some envs, the parent fences and rings the bells of
  their sleeping workers (``Doorbell.ring``: a write each; a bell stays rung until its worker reads
  it); asking for every env (a lock-step step), it rings the rings (``Doorbell.ring_all``: ring
  ``r`` empties ring ``(r + 1) % RINGS``, counts ``r`` in its row, writes ring ``r % RINGS``: one
  write wakes every sleeper, and a ring is quiet again before anyone polls it anew). The look sees
  the request, or the parent the sleeper. Without eventfds, a WAKE through the pipe.
"""
from __future__ import annotations

import contextlib
import os
import select
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from types import SimpleNamespace
from typing import Any

from vec_envs.subproc.lanes import ONE, P_RINGS, P_SLEEPING, P_TARGET, WorkerLanes, full_fence

__all__ = ["FALLBACK_S", "PARENT_CHECK_S", "RINGS", "WAIT_TIMES", "Doorbell", "Spin", "spin_until", "worker_wait"]

FALLBACK_S = 0.005  # the longest a parent sleeps between looks
PARENT_CHECK_S = 1.0  # how often a sleeping worker checks that its parent still lives
SPIN_MIN_S, SPIN_MAX_S = 200e-6, 2e-3
_SMOOTHING, _THRIFTY_HITS = 0.125, 0.8
PIPE, LANES, PARENT_GONE = 1, 2, 3  # what woke a worker (never 0)
RINGS = 4  # the shared rings, rung in turn
yield_cpu = getattr(os, "sched_yield", lambda: None)  # every spin turn: let another runnable process run
#: this process's CPU seconds spinning and sleeping (waking included), counted while ``enabled`` (by a benchmark)
WAIT_TIMES = SimpleNamespace(enabled=False, spun=0.0, slept=0.0)


class Spin:
    """How long to poll before sleeping (``budget``, 0 when off), learnt from the waits seen
    (``thrifty``: none while most outlast it). A wait is noted as its work arrives and learnt
    from at the next look at ``budget``, when the process waits again and nobody waits for it."""

    def __init__(self, enabled: bool, thrifty: bool = False) -> None:
        self.enabled, self.thrifty = enabled, thrifty
        self._mean, self._deviation, self._hits = SPIN_MIN_S / 2, SPIN_MIN_S / 8, 1.0
        self._budget = SPIN_MIN_S if enabled else 0.0
        self._waits: list[float] = []  # noted, not learnt yet

    @property
    def budget(self) -> float:
        """Seconds to poll before sleeping (0: sleep at once)."""
        if self._waits:
            for waited in self._waits:
                self._hits += _SMOOTHING * ((waited <= SPIN_MAX_S) - self._hits)
                error = min(waited, SPIN_MAX_S) - self._mean
                self._mean += _SMOOTHING * error
                self._deviation += 2 * _SMOOTHING * (abs(error) - self._deviation)
            self._waits.clear()
            learnt = min(SPIN_MAX_S, max(SPIN_MIN_S, 1.5 * self._mean, self._mean + 4 * self._deviation))
            self._budget = 0.0 if self.thrifty and self._hits < _THRIFTY_HITS else learnt
        return self._budget

    def record(self, waited: float) -> None:
        """Note one wait (seconds until its work came)."""
        if self.enabled:
            self._waits.append(waited)


def spin_until(ready: Callable[[], Any], seconds: float) -> Any:
    """Call ``ready()`` until it returns something true or ``seconds`` passed; return it."""
    result = ready()
    if result or seconds <= 0:  # (the work is there: no clock read on its path)
        return result
    end = time.perf_counter() + seconds
    while not result and time.perf_counter() < end:
        yield_cpu()
        result = ready()
    return result


def poller(*fds: int) -> Any:
    """A ``select.poll`` that waits for input on ``fds``."""
    polls = select.poll()
    for fd in fds:
        polls.register(fd, select.POLLIN)
    return polls


def readable(fd: int) -> bool:
    return bool(poller(fd).poll(0))


class Doorbell:
    """The parent's wake fd, a bell per worker and the shared rings, made by the parent (see the module)."""

    def __init__(self, workers: int) -> None:
        if hasattr(os, "eventfd"):  # the parent sleeps on wake_fd, workers write wake_write
            self.wake_fd = self.wake_write = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
            self.bells = tuple(os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC) for _ in range(workers))
            self.rings = tuple(os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC) for _ in range(RINGS))
        else:
            self.wake_fd, self.wake_write = os.pipe()
            os.set_blocking(self.wake_fd, False)
            os.set_blocking(self.wake_write, False)
            self.bells = self.rings = ()
        self._poller: Any = None
        self._watched: tuple[int, ...] = ()
        self.sleeps = self.wakes = self.naps = 0

    def ring(self, workers: list[int]) -> None:
        """Wake the ``workers`` (asleep): one write to each one's bell."""
        for w in workers:
            with contextlib.suppress(BlockingIOError):  # rung already
                os.write(self.bells[w], ONE)

    def ring_all(self, parent_row: Any) -> None:
        """Wake every sleeping worker with one write: the next of the shared rings (see the module)."""
        rings = parent_row[P_RINGS] + 1
        with contextlib.suppress(BlockingIOError):  # quiet for the ring after this one, before anyone polls it
            os.read(self.rings[(rings + 1) % RINGS], 8)
        parent_row[P_RINGS] = rings  # after the requests: who reads it sees them
        os.write(self.rings[rings % RINGS], ONE)

    def wait(self, done: Callable[[], Any], total: int, counts: Any, parent_row: Any, spin: Spin,
             sentinels: tuple[int, ...], wake_owing: Callable[[], None], deadline: float | None) -> list[int]:
        """Until ``done()`` (``total``: the ``sum(counts)`` that makes it), ``deadline`` (``time.monotonic()``;
        then ``[]``) or the end of workers of ``sentinels`` (those). ``wake_owing()`` wakes through their
        pipes the sleepers that owe answers (after an answerless sleep)."""
        start, timed = time.perf_counter(), WAIT_TIMES.enabled
        cpu = time.thread_time() if timed else 0.0
        budget = spin.budget if deadline is None else min(spin.budget, max(0.0, deadline - time.monotonic()))
        found, end = done(), start + budget  # spin (as spin_until, one call less on the step's path)
        while not found and time.perf_counter() < end:
            yield_cpu()
            found = done()
        slept = time.thread_time() if timed else 0.0
        ended = [] if found else self._sleep_until(done, total, counts, parent_row, sentinels, wake_owing, deadline)
        if timed:
            WAIT_TIMES.spun += slept - cpu
            WAIT_TIMES.slept += time.thread_time() - slept
        if spin.enabled and not ended and (found or done()):
            spin.record(time.perf_counter() - start)
        return ended

    def _sleep_until(self, done: Callable[[], Any], total: int, counts: Any, parent_row: Any,
                     sentinels: tuple[int, ...], wake_owing: Callable[[], None], deadline: float | None) -> list[int]:
        """Sleep (``FALLBACK_S`` at most at a time) until ``done()``, ``deadline`` or the end of workers (their
        sentinels, returned); before each sleep say so in the parent's row and look once more."""
        if self._poller is None or sentinels != self._watched:  # (a restart: other sentinels)
            self._watched, self._poller = sentinels, poller(self.wake_fd, *sentinels)
        while True:
            remaining = FALLBACK_S if deadline is None else deadline - time.monotonic()
            if remaining <= 0:
                return []
            answers = sum(counts)
            parent_row[P_TARGET] = total
            self.sleeps += 1
            parent_row[P_SLEEPING] = self.sleeps  # after the target: a worker that sees it sees the target
            full_fence()  # before the last look: an answer is seen by it, or its worker sees the sleep
            try:
                if done():
                    return []
                events = self._poller.poll(max(0, int(min(FALLBACK_S, remaining) * 1000 + 0.999)))  # ms, up
            finally:
                parent_row[P_SLEEPING] = 0
            ended = []
            for fd, _ in events:
                if fd != self.wake_fd:
                    ended.append(fd)
                    continue
                with contextlib.suppress(BlockingIOError):  # every wake-up written so far (a pipe: perhaps several)
                    while len(os.read(fd, 4096)) == 4096:
                        pass
                self.wakes += 1
            self.naps += not events
            if ended or done():
                return ended
            if sum(counts) == answers:  # a whole sleep without an answer: a wake-up may be lost
                wake_owing()

    def close(self) -> None:
        """Close the descriptors; idempotent."""
        for fd in {self.wake_fd, self.wake_write, *self.bells, *self.rings} - {-1}:
            os.close(fd)
        self.wake_fd = self.wake_write = -1
        self.bells, self.rings, self._poller = (), (), None


def worker_wait(conn: Connection, lanes: WorkerLanes | None, spin: Spin, bells: tuple[int, ...], parent: int,
                pollers: dict[str, Any]) -> int:
    """A worker's wait for work (spin, then sleep on its pipe, its bell and the next ring of ``bells``):
    ``LANES`` (new requests in its lanes), ``PIPE`` (one in the pipe) or ``PARENT_GONE`` (process
    ``parent`` ended). ``pollers``: a cache."""
    if pollers.get("bells") != bells:  # attached (or not yet): the polls anew
        pipe_fd = conn.fileno()
        sleep = [poller(pipe_fd, *bells[:1], ring) for ring in bells[1:]] or [poller(pipe_fd, *bells)]
        pollers.update(bells=bells, pipe=poller(pipe_fd), sleep=sleep)
    if not spin.enabled and not WAIT_TIMES.enabled:  # nothing to spin, learn or count: sleep (after a last look)
        return _sleep_until_work(conn, lanes, parent, pollers["sleep"], bells)
    pipe = pollers["pipe"]

    def event() -> int:  # one look at everything: each spin turn costs this
        return LANES if lanes is not None and lanes.has_requests() else PIPE if pipe.poll(0) else 0

    start, timed = time.perf_counter(), WAIT_TIMES.enabled
    cpu = time.thread_time() if timed else 0.0
    found = spin_until(event, spin.budget)
    slept = time.thread_time() if timed else 0.0
    if not found:
        found = _sleep_until_work(conn, lanes, parent, pollers["sleep"], bells)
    spin.record(time.perf_counter() - start)
    if timed:
        WAIT_TIMES.spun += slept - cpu
        WAIT_TIMES.slept += time.thread_time() - slept
    return found


def _sleep_until_work(conn: Connection, lanes: WorkerLanes | None, parent: int, sleepers: list[Any],
                      bells: tuple[int, ...]) -> int:
    if lanes is not None:
        lanes.set_sleeping(True)  # (it fences: the look below sees a request, or the parent sees the sleeper)
    pipe = conn.fileno()
    try:
        while True:
            ring = lanes.rings() if lanes is not None else -1  # before the look: a later ring wakes this sleep
            if lanes is not None and lanes.has_requests():
                return LANES
            events = sleepers[(ring + 1) % len(sleepers)].poll(int(PARENT_CHECK_S * 1000))
            woken = LANES
            for fd, _ in events:
                if fd == pipe:
                    woken = PIPE
                elif fd == bells[0]:  # its own bell (an eventfd: one read empties it), quiet until the next write
                    with contextlib.suppress(BlockingIOError):  # (a ring: quiet after the next rings)
                        os.read(fd, 8)
            if events:
                return woken
            if os.getppid() != parent:
                return PARENT_GONE
    finally:
        if lanes is not None:
            lanes.set_sleeping(False)
