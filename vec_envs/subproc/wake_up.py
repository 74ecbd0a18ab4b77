"""Wake-up: a worker that answers while the parent sleeps wakes it through a file descriptor.

Answers are numbers in shared memory (``control.py``), and a number written to memory
wakes nobody. So each worker counts its answers in its row of shared memory,
and before the parent sleeps it writes in its own row the total it waits for (the
workers' answers so far plus how many more it needs) and that it sleeps, looks at the
answers once more, and sleeps on a wake fd (an eventfd; a pipe where there is none)
together with whatever else it watches (worker sentinels, pipes). Its row says which
sleep it is (they are numbered); a worker whose answer brings the total there writes to
the fd, once per sleep, so the parent wakes once per batch, not once per env. It drains
the fd when it wakes. The other way round, a worker sleeps on its pipe and on a
``WorkerBell`` shared by every worker: the parent rings it once per request, however
many workers sleep (without an eventfd, and after a nap with no answer, it wakes each
with a WAKE message through its pipe).

x86-64 may let the parent's "I sleep" store and a worker's answer cross (each process
loads before the other's store is seen: StoreLoad), and then nobody would write; the same
crossing could leave a worker asleep on a request it did not see. Each side therefore
puts a full fence between its store and its load (``spaces/fence.py``): after the parent's
"I sleep" and before its last look, after a worker's count and before it reads the
parent's row, after a request and before the parent looks who sleeps, after a worker's
"I sleep" and before its last look at the lanes. The parent still sleeps at most
``FALLBACK_S`` before it looks again, and after such a nap wakes the workers that still
owe answers: a wake-up lost any other way costs a few milliseconds, never a hang.

Example:
    >>> import numpy as np
    >>> block = ControlBlock(np.zeros(ControlBlock.words(4, workers=2), np.int64), n=4, workers=2)
    >>> wake = WakeFd()
    >>> waker = Waker(block, wake.write_fd)              # in each worker
    >>> sleeper = ParentSleep(block, wake)
    >>> waker.answered()                                 # the parent is awake: no write
    >>> sleeper.sleep(lambda: False, [], 0.001, total=2)    # nobody answers: a nap
    []
    >>> sleeper.wakes, sleeper.naps
    (0, 1)
    >>> wake.close()
"""
from __future__ import annotations

import os
import select
from collections.abc import Callable, Sequence
from typing import Any

from vec_envs.spaces.fence import full_fence
from vec_envs.subproc.control import ControlBlock, ParentColumn, answer_counts

__all__ = ["BELLS", "FALLBACK_S", "ParentSleep", "WakeFd", "Waker", "WorkerBell", "supported"]

BELLS = 4  # eventfds of the workers' bell, rung in turn
FALLBACK_S = 0.005  # the longest a parent sleeps between looks (a wake-up lost all the same)
_ONE = (1).to_bytes(8, "little")  # what an eventfd write takes (a pipe takes it as well)


def supported() -> bool:
    """Where ``select.poll`` can sleep on the fd and the worker sentinels together (POSIX)."""
    return hasattr(select, "poll")


class WakeFd:
    """The parent's wake file descriptor: an eventfd, or a pipe where there is none.

    The parent reads (``read_fd``); each worker gets ``write_fd`` with the shared memory.
    Non-blocking both ways: a full pipe or counter already means "wake up".
    """

    def __init__(self) -> None:
        if hasattr(os, "eventfd"):
            self.read_fd = self.write_fd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        else:
            self.read_fd, self.write_fd = os.pipe()
            os.set_blocking(self.read_fd, False)
            os.set_blocking(self.write_fd, False)

    def drain(self) -> None:
        """Read every wake-up written so far."""
        try:
            while len(os.read(self.read_fd, 4096)) == 4096:
                pass
        except BlockingIOError:
            pass

    def close(self) -> None:
        """Close the descriptor(s); idempotent."""
        for fd in {self.read_fd, self.write_fd} - {-1}:
            os.close(fd)
        self.read_fd = self.write_fd = -1


class ParentSleep:
    """The parent's side: sleep until the workers' answers reach what it waits for,
    something watched is ready, or ``seconds`` (at most ``FALLBACK_S``) pass.

    ``wakes`` counts the sleeps a
    worker's write ended, ``naps`` those that ran their whole time (a deadline, the
    fallback, or a wake-up lost).
    """

    def __init__(self, block: ControlBlock, fd: WakeFd) -> None:
        self._answers = answer_counts(block)
        self._row = block.parent_row.data.cast("B").cast("q")  # plain int stores, ~40 ns each
        self.fd = fd
        self._poller = select.poll()
        self._poller.register(fd.read_fd, select.POLLIN)
        self.wakes = self.naps = self.sleeps = 0

    def sleep(self, done: Callable[[], Any], watched: Sequence[Any], seconds: float,
              total: int | None = None) -> list[Any]:
        """Say so (``total``: the workers' answers, all counted, that would do; None: one
        more than now), look at ``done()`` once more, then sleep; the ``watched`` objects
        (fds or objects with ``fileno()``) ready.

        ``total`` is a number of answers, not how many more: one counted between the
        caller's look and the sleep must not move it out of reach."""
        by_fd = {(w if isinstance(w, int) else w.fileno()): w for w in watched}
        for fd in by_fd:
            self._poller.register(fd, select.POLLIN)
        try:
            ready = self.sleep_polled(done, self._poller, seconds, total)
        finally:
            for fd in by_fd:
                self._poller.unregister(fd)
        return [by_fd.get(fd, fd) for fd in ready]

    def poller(self, fds: Sequence[int]) -> Any:
        """A ``select.poll`` on the wake fd and ``fds``, for ``sleep_polled`` (built once, polled often)."""
        poller = select.poll()
        for fd in (self.fd.read_fd, *fds):
            poller.register(fd, select.POLLIN)
        return poller

    def answers(self) -> list[int]:
        """Each worker's answers so far (one look at them all)."""
        return self._answers.tolist()

    def sleep_polled(self, done: Callable[[], Any], poller: Any, seconds: float, total: int | None = None) -> list[int]:
        """``sleep`` on a ``poller`` that watches the wake fd (``poller()``): the other fds ready."""
        self._row[ParentColumn.TARGET] = sum(self._answers) + 1 if total is None else total
        self.sleeps += 1
        self._row[ParentColumn.SLEEPING] = self.sleeps  # after the target: a worker that sees it sees the target
        full_fence()  # before the last look: an answer is seen by it, or the answering worker sees the sleep
        try:
            if done():
                return []
            events = poller.poll(max(0, int(min(seconds, FALLBACK_S) * 1000 + 0.999)))  # ms, rounded up
        finally:
            self._row[ParentColumn.SLEEPING] = 0
        ready = [fd for fd, _ in events if fd != self.fd.read_fd]
        if len(ready) < len(events):
            self.fd.drain()
            self.wakes += 1
        elif not ready:
            self.naps += 1
        return ready


class Waker:
    """A worker's side: after its answers (counted in its row, ``WorkerLanes``), wake the
    parent if it sleeps for them. ``fd`` is the write end of the parent's ``WakeFd``.

    A worker writes once per sleep of the parent: until the parent is scheduled and says
    it is awake, its later answers would each write again (dozens per sleep on a busy
    machine), and one write already wakes it."""

    def __init__(self, block: ControlBlock, fd: int) -> None:
        self._answers = answer_counts(block)
        self._parent = block.parent_row.data.cast("B").cast("q")
        self.fd = fd
        self._woken = 0  # the parent's sleep this worker wrote for last

    def answered(self) -> None:
        """Answers were written and counted: wake the parent if they make its total."""
        full_fence()  # after the count, before the parent's row (see ParentSleep.sleep_polled)
        sleep = self._parent[ParentColumn.SLEEPING]
        if sleep and sleep != self._woken and sum(self._answers) >= self._parent[ParentColumn.TARGET]:
            self._woken = sleep
            try:
                os.write(self.fd, _ONE)
            except BlockingIOError:
                pass  # full: a wake-up is pending already


class WorkerBell:
    """A few eventfds that the sleeping workers poll with their pipes; the parent rings
    one with one write for all of them.

    Ring ``r`` (counted in the parent's row, ``ParentColumn.RINGS``) empties fd ``(r + 1) % k``
    and writes to fd ``r % k``: a worker about to sleep reads the count ``g``, looks at its
    lanes, and polls fd ``(g + 1) % k``, quiet until the next ring; if that ring came
    meanwhile, its requests are seen by the look. A worker not yet up after ``k - 1`` more
    rings misses its wake-up, and the parent's nap (``FALLBACK_S``) WAKEs it instead.

    Example:
        >>> import numpy as np
        >>> block = ControlBlock(np.zeros(ControlBlock.words(2, workers=1), np.int64), n=2, workers=1)
        >>> bell = WorkerBell(block)
        >>> bell.ring(); int(block.parent_row[ParentColumn.RINGS]), _readable(bell.fds[1]), _readable(bell.fds[2])
        (1, True, False)
        >>> bell.close()
    """

    def __init__(self, block: ControlBlock, k: int = BELLS) -> None:
        self._parent: Any = block.parent_row.data.cast("B").cast("q")
        self.fds = tuple(os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC) for _ in range(k))

    @staticmethod
    def supported() -> bool:
        return hasattr(os, "eventfd")

    def ring(self) -> None:
        """Wake every worker asleep on the bell (one write, whatever their number)."""
        rings, k = self._parent[ParentColumn.RINGS] + 1, len(self.fds)
        try:
            os.read(self.fds[(rings + 1) % k], 8)  # quiet for the ring after this one, before anyone polls it
        except BlockingIOError:
            pass
        self._parent[ParentColumn.RINGS] = rings  # after the requests: who reads it sees them
        os.write(self.fds[rings % k], _ONE)

    def close(self) -> None:
        """Close the descriptors; idempotent."""
        for fd in self.fds:
            os.close(fd)
        self.fds = ()
        self._parent = None  # a view of the shared memory: it is unmapped once none is left


def _readable(fd: int) -> bool:
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(0))
