"""Wake-up: a worker that answers while the parent sleeps wakes it through a file descriptor.

Answers (doorbell steps, env slots) are numbers in shared memory, and a number written
to memory wakes nobody. So each worker counts its answers in its row of shared memory,
and before the parent sleeps it writes in its own row the total it waits for (the
workers' answers so far plus how many more it needs) and that it sleeps, looks at the
answers once more, and sleeps on a wake fd (an eventfd; a pipe where there is none)
together with whatever else it watches (worker sentinels, pipes). A worker whose answer
brings the total there writes to the fd, so the parent wakes once per batch, not once
per env. It drains the fd when it wakes.

x86-64 may let the parent's "I sleep" store and a worker's answer cross (each process
loads before the other's store is seen: StoreLoad), and then nobody writes. The parent
therefore sleeps at most ``FALLBACK_S`` before it looks again: a missed wake-up costs a
few milliseconds, never a hang.

Example:
    >>> import numpy as np
    >>> rows = np.zeros((2 + 1, 8), np.int64)            # 2 workers, then the parent (shared memory)
    >>> wake = WakeFd()
    >>> waker = Waker(rows, 0, wake.write_fd)            # in worker 0
    >>> sleeper = ParentSleep(rows, wake)
    >>> waker.answered()                                 # the parent is awake: no write
    >>> sleeper.sleep(lambda: False, [], 0.001, wanted=2)   # nobody answers: a nap
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

import numpy as np

__all__ = ["FALLBACK_S", "ParentSleep", "WakeFd", "Waker", "supported"]

FALLBACK_S = 0.005  # the longest a parent sleeps between looks (a wake-up lost to StoreLoad)
_ANSWERS = 2  # a worker's row: its answers so far (slots 0 and 1 are ``env_slots``')
_SLEEPING, _TARGET = 0, 1  # the parent's row: asleep?, and the total of answers it waits for
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

    ``rows`` holds a row per worker, then the parent's. ``wakes`` counts the sleeps a
    worker's write ended, ``naps`` those that ran their whole time (a deadline, the
    fallback, or a wake-up lost).
    """

    def __init__(self, rows: np.ndarray, fd: WakeFd) -> None:
        self._answers = rows[:-1, _ANSWERS]
        self._row = rows[-1].data.cast("B").cast("q")  # plain int stores, ~40 ns each
        self.fd = fd
        self._poller = select.poll()
        self._poller.register(fd.read_fd, select.POLLIN)
        self.wakes = self.naps = 0

    def sleep(self, done: Callable[[], Any], watched: Sequence[Any], seconds: float, wanted: int = 1) -> list[Any]:
        """Say so (``wanted``: how many more answers would do), look at ``done()`` once
        more, then sleep; the ``watched`` objects (fds or objects with ``fileno()``) ready."""
        self._row[_TARGET] = int(self._answers.sum()) + max(1, wanted)
        self._row[_SLEEPING] = 1  # after the target: a worker that sees it sees the target
        try:
            if done():
                return []
            ready = self._poll(watched, min(seconds, FALLBACK_S))
        finally:
            self._row[_SLEEPING] = 0
        if self.fd.read_fd in ready:
            self.fd.drain()
            self.wakes += 1
            del ready[self.fd.read_fd]
        elif not ready:
            self.naps += 1
        return list(ready.values())

    def _poll(self, watched: Sequence[Any], seconds: float) -> dict[int, Any]:
        """Poll the wake fd and ``watched`` for ``seconds``: the ready ones, by fd."""
        by_fd = {(w if isinstance(w, int) else w.fileno()): w for w in watched}
        for fd in by_fd:
            self._poller.register(fd, select.POLLIN)
        try:
            events = self._poller.poll(max(0, int(seconds * 1000 + 0.999)))  # ms, rounded up
        finally:
            for fd in by_fd:
                self._poller.unregister(fd)
        return {fd: by_fd.get(fd, fd) for fd, _ in events}


class Waker:
    """Worker ``w``'s side: count each answer, and wake the parent if it sleeps for it.

    ``rows`` holds a row per worker, then the parent's; ``fd`` is the write end of the
    parent's ``WakeFd``.
    """

    def __init__(self, rows: np.ndarray, w: int, fd: int) -> None:
        self._answers = rows[:-1, _ANSWERS]
        self._own = rows[w].data.cast("B").cast("q")
        self._parent = rows[-1].data.cast("B").cast("q")
        self.fd = fd

    def answered(self) -> None:
        """One more answer (already written): wake the parent if that makes its total."""
        self._own[_ANSWERS] += 1
        if self._parent[_SLEEPING] and self._answers.sum() >= self._parent[_TARGET]:
            try:
                os.write(self.fd, _ONE)
            except BlockingIOError:
                pass  # full: a wake-up is pending already
