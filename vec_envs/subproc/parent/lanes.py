"""ParentLanes: the parent's side of the control block: request envs, find their answers.

The parent writes the actions of the envs it requests, then gives them one new request
number (one above every number used so far, for any env: an answer can never look like
the answer to a later request) and fences, so that a worker going to sleep sees the
request or is seen asleep. It finds the envs that answered by comparing their answer
words with the numbers it waits for, over the envs ``AsyncEnvs`` says are in flight (in
one C pass where the lanes kernel is built).

Example:
    >>> from vec_envs.async_envs import EnvStatus
    >>> from vec_envs.subproc.shared.control_block import ControlBlock
    >>> block = ControlBlock(np.zeros(ControlBlock.words(3, workers=1), np.int64), n=3, workers=1)
    >>> lanes = ParentLanes(block)
    >>> lanes.request(np.array([0, 2]))               # after writing their actions
    1
    >>> block.answered[[0, 2]] = [1 << 1, 1 << 1 | 1]   # what worker 0 writes, env 2 with a message
    >>> status = np.array([EnvStatus.IN_FLIGHT, EnvStatus.IDLE, EnvStatus.IN_FLIGHT], np.int8)
    >>> ready = []
    >>> lanes.scan(status, ready), ready, lanes.has_message(2)
    (2, [0, 2], True)
"""
from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from vec_envs import kernels
from vec_envs.async_envs import EnvStatus
from vec_envs.subproc.shared.control_block import ControlBlock, ParentColumn, WorkerColumn, answer_counts, int_words
from vec_envs.subproc.shared.fence import full_fence
from vec_envs.subproc.shared.spin import WAIT_TIMES
from vec_envs.subproc.shared.wake import BELLS, ONE

__all__ = ["ParentLanes", "WorkerBell"]

_kernel = kernels.load("lanes")
_IN_FLIGHT, _ANSWERED = int(EnvStatus.IN_FLIGHT), int(EnvStatus.ANSWERED)


class WorkerBell:
    """A few eventfds that the sleeping workers poll with their pipes; the parent rings
    one with one write for all of them.

    Ring ``r`` (counted in the parent's row, ``ParentColumn.RINGS``) empties fd
    ``(r + 1) % k`` and writes to fd ``r % k``: a worker about to sleep reads the count
    ``g``, looks at its lanes, and polls fd ``(g + 1) % k``, quiet until the next ring; if
    that ring came meanwhile, its requests are seen by the look. A worker not yet up after
    ``k - 1`` more rings misses its wake-up, and the parent's nap (``FALLBACK_S``) wakes it
    through its pipe instead.

    Example:
        >>> import numpy as np
        >>> from vec_envs.subproc.shared.control_block import ControlBlock, ParentColumn
        >>> from vec_envs.subproc.shared.wake import readable
        >>> block = ControlBlock(np.zeros(ControlBlock.words(2, workers=1), np.int64), n=2, workers=1)
        >>> bell = WorkerBell(block.parent_row)
        >>> bell.ring(); int(block.parent_row[ParentColumn.RINGS]), readable(bell.fds[1]), readable(bell.fds[2])
        (1, True, False)
        >>> bell.close()
    """

    def __init__(self, parent_row: Any, k: int = BELLS) -> None:
        self._parent: Any = int_words(parent_row)
        self.fds = tuple(os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC) for _ in range(k))

    def ring(self) -> None:
        """Wake every worker asleep on the bell (one write, whatever their number)."""
        rings, k = self._parent[ParentColumn.RINGS] + 1, len(self.fds)
        try:
            os.read(self.fds[(rings + 1) % k], 8)  # quiet for the ring after this one, before anyone polls it
        except BlockingIOError:
            pass
        self._parent[ParentColumn.RINGS] = rings  # after the requests: who reads it sees them
        os.write(self.fds[rings % k], ONE)

    def close(self) -> None:
        """Close the descriptors; idempotent."""
        for fd in self.fds:
            os.close(fd)
        self.fds = ()
        self._parent = None  # a view of the shared memory: it is unmapped once none is left


class ParentLanes:
    """The parent's side: which envs it asked for, which have answered, who sleeps.

    ``laned``: the envs ``0:laned`` have workers (default: all); the others, the parent's
    own slice, are never requested here and never found answered. ``bell`` wakes the
    workers asleep when envs are requested; without one, ``wake(workers)`` does (WAKE
    messages through their pipes).
    """

    def __init__(self, block: ControlBlock, laned: int | None = None, bell: WorkerBell | None = None,
                 wake: Callable[[list[int]], None] | None = None) -> None:
        self.block, self.bell, self.wake = block, bell, wake
        self.laned = block.n if laned is None else laned
        self.requested, self.answered = block.requested, block.answered
        self.expected = self.requested.copy()  # the number each env's answer will carry, never below requested
        self._answered, self._expected = self.answered[:self.laned], self.expected[:self.laned]
        self._top = int(self.expected.max(initial=0))  # the highest number used, for any env
        self._sleeping = block.worker_rows[:, WorkerColumn.SLEEPING]
        self._rows = [int_words(row) for row in block.worker_rows]
        self.counts = answer_counts(block)  # each worker's answers so far (``sum`` of it: all of them)

    def request(self, env_ids: np.ndarray | slice, owners: np.ndarray | None = None) -> int:
        """Ask the workers to step ``env_ids`` (their actions are written already), waking
        those asleep (of ``owners``, the workers of ``env_ids``, when given); the number
        their answers will carry."""
        self._top = seq = self._top + 1
        self.expected[env_ids] = seq
        self.requested[env_ids] = seq
        full_fence()  # before the look at who sleeps: a worker going to sleep sees the request, or is seen
        if np.count_nonzero(self._sleeping if owners is None else self._sleeping[owners]):
            cpu = time.thread_time() if WAIT_TIMES.enabled else 0.0
            if self.bell is not None:
                self.bell.ring()  # one write, however many sleep
            elif self.wake is not None:
                self.wake(np.flatnonzero(self._sleeping).tolist())
            if WAIT_TIMES.enabled:
                WAIT_TIMES.slept += time.thread_time() - cpu
        return seq

    def reset_seqs(self, env_ids: np.ndarray) -> list[int]:
        """The numbers the reset of ``env_ids`` will be answered with (the request goes by pipe)."""
        self._top = seq = self._top + 1
        self.expected[env_ids] = seq
        return [seq] * len(env_ids)

    def scan(self, status: np.ndarray, ready: list[int]) -> int:
        """The envs in flight (``status``) that answered become ANSWERED and are appended to
        ``ready`` (in index order); how many."""
        status = status[:self.laned]
        if _kernel is not None:
            return _kernel.scan(self._answered, self._expected, status, ready)
        done = ((status == _IN_FLIGHT) & ((self._answered >> 1) == self._expected)).nonzero()[0]
        status[done] = _ANSWERED
        ready.extend(done.tolist())
        return len(done)

    def count_finished(self, status: np.ndarray) -> int:
        """How many envs in flight have answered (``scan`` would find them)."""
        status = status[:self.laned]
        if _kernel is not None:
            return _kernel.count_finished(self._answered, self._expected, status)
        return int(np.count_nonzero((status == _IN_FLIGHT) & ((self._answered >> 1) == self._expected)))

    def first_ready(self, ready: list[int], count: int, dones: np.ndarray) -> tuple[np.ndarray, np.ndarray, bool]:
        """The first ``count`` envs of ``ready`` (an int64 array), their ``dones``, and
        whether any of them answered with a message."""
        if _kernel is not None:
            env_ids, their_dones = np.empty(count, np.int64), np.empty(count, np.bool_)
            return env_ids, their_dones, _kernel.first_ready(ready, self.answered, dones, env_ids, their_dones)
        env_ids = np.array(ready[:count], np.int64)
        return env_ids, dones[env_ids], bool(np.count_nonzero(self.answered[env_ids] & 1))

    def has_message(self, i: int) -> bool:
        """Did a pipe message go with env ``i``'s last answer?"""
        return bool(self.answered[i] & 1)

    def sleeping(self, w: int) -> bool:
        """Is worker ``w`` asleep (so a request waits for a ring)?"""
        return bool(self._rows[w][WorkerColumn.SLEEPING])

    def restart(self, w: int, first: int, stop: int) -> None:
        """A new worker ``w`` takes over envs ``first:stop``: it starts from their numbers now."""
        self.block.worker_rows[w] = 0
        self.requested[first:stop] = self.expected[first:stop]
        self.answered[first:stop] = self.expected[first:stop] << 1
