"""Wake-up: a worker that answers while the parent sleeps wakes it through a file descriptor.

Answers (doorbell steps, env slots) are numbers in shared memory, and a number written
to memory wakes nobody. So before the parent sleeps it writes in its row of shared
memory how many answers it waits for, looks at the answers once more, and sleeps on a
wake fd (an eventfd; a pipe where there is none) together with whatever else it watches
(worker sentinels, pipes). A worker that answers while that row is set writes to the
fd: at once if its answers since it last looked for work cover what the parent waits
for, else when it has none left to step. So the parent wakes about once per worker per
batch, not once per env. It drains the fd when it wakes.

x86-64 may let the parent's "I sleep" store and a worker's answer cross (each process
loads before the other's store is seen: StoreLoad), and then nobody writes. The parent
therefore sleeps at most ``FALLBACK_S`` before it looks again: a missed wake-up costs a
few milliseconds, never a hang.

Example:
    >>> import numpy as np
    >>> row = np.zeros(8, np.int64)                       # in shared memory, in real use
    >>> wake = WakeFd()
    >>> waker = Waker(row, wake.write_fd)                 # in the worker
    >>> waker.answered(1, last=True)                      # the parent is awake: no write
    >>> sleeper = ParentSleep(row, wake)
    >>> row[0] = 1; waker.answered(1, last=True); row[0] = 0   # as if it slept meanwhile
    >>> sleeper.sleep(lambda: False, [], 5.0)             # the byte is there: no waiting
    []
    >>> sleeper.wakes
    1
    >>> wake.close()
"""
from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from multiprocessing.connection import wait
from typing import Any

import numpy as np

__all__ = ["FALLBACK_S", "ParentSleep", "WakeFd", "Waker"]

FALLBACK_S = 0.005  # the longest a parent sleeps between looks (a wake-up lost to StoreLoad)
_WANTED = 0  # the parent's row: how many answers it sleeps for (0: it is awake)
_ONE = (1).to_bytes(8, "little")  # what an eventfd write takes (a pipe takes it as well)


class WakeFd:
    """The parent's wake file descriptor: an eventfd, or a pipe where there is none.

    The parent reads (``fileno``); each worker gets ``write_fd`` with the shared memory.
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
    """The parent's side: sleep until a worker writes, something watched is ready, or
    ``seconds`` (at most ``FALLBACK_S``) pass.

    ``wakes`` counts the sleeps a worker's write ended, ``naps`` those that ran their
    whole time (a deadline, the fallback, or a wake-up lost).
    """

    def __init__(self, row: np.ndarray, fd: WakeFd) -> None:
        self._row = row.data.cast("B").cast("q")  # plain int stores, ~40 ns each
        self.fd = fd
        self.wakes = self.naps = 0

    def sleep(self, done: Callable[[], Any], watched: Sequence[Any], seconds: float, wanted: int = 1) -> list[Any]:
        """Say so, look at ``done()`` once more, then sleep; the ``watched`` objects
        (anything ``multiprocessing.connection.wait`` takes) that are ready."""
        self._row[_WANTED] = max(1, wanted)
        try:
            if done():
                return []
            ready = wait([self.fd.read_fd, *watched], min(seconds, FALLBACK_S))
        finally:
            self._row[_WANTED] = 0
        if self.fd.read_fd in ready:
            self.fd.drain()
            self.wakes += 1
            ready.remove(self.fd.read_fd)
        elif not ready:
            self.naps += 1
        return ready


class Waker:
    """A worker's side: after each answer, wake the parent if it sleeps for it.

    ``row`` is the parent's row of shared memory; ``fd`` the write end of its ``WakeFd``.
    """

    def __init__(self, row: np.ndarray, fd: int) -> None:
        self._row = row.data.cast("B").cast("q")
        self.fd = fd

    def answered(self, count: int, last: bool) -> None:
        """``count`` answers since this worker last looked for work; ``last``: none left."""
        wanted = self._row[_WANTED]
        if wanted and (last or count >= wanted):
            try:
                os.write(self.fd, _ONE)
            except BlockingIOError:
                pass  # full: a wake-up is pending already

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

