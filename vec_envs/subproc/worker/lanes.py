"""WorkerLanes: a worker's side of the control block: take its envs' requests, answer them.

A worker takes every request not taken yet in one look (``take_runs``: runs of
consecutive envs, each a step loop), steps the envs, and answers each: the word in its
lane, one more in its count, and, if the parent sleeps waiting for a total of answers
that this one completes, one write to the parent's wake fd (once per sleep of the
parent). The step loop answers an env with nothing to say the moment its rows are
written, through ``done`` (in C, with no Python, where the lanes kernel is built).

Example:
    >>> from vec_envs.subproc.shared.control_block import ControlBlock
    >>> block = ControlBlock(np.zeros(ControlBlock.words(3, workers=1), np.int64), n=3, workers=1)
    >>> lanes = WorkerLanes(block, 0, first=0, stop=3)
    >>> block.requested[[0, 2]] = 5                 # the parent asks for envs 0 and 2
    >>> lanes.take_runs(), lanes.seq(2)             # runs of consecutive envs: (start, stop)
    ([(0, 1), (2, 3)], 5)
    >>> lanes.answer(2, has_message=True); lanes.done.call(0)
    >>> block.answered.tolist(), int(block.worker_rows[0, 1])
    ([10, 0, 11], 2)
"""
from __future__ import annotations

import os

import numpy as np

from vec_envs import kernels
from vec_envs.stepping.env_slice import DoneHook
from vec_envs.subproc.shared.control_block import ControlBlock, ParentColumn, WorkerColumn, answer_counts, int_words
from vec_envs.subproc.shared.fence import full_fence
from vec_envs.subproc.shared.wake import ONE

__all__ = ["WorkerLanes"]

_kernel = kernels.load("lanes")


class WorkerLanes:
    """Worker ``w``'s lanes, for its envs ``first:stop`` (``k`` counts from ``first``);
    ``wake_fd`` is the write end of the parent's wake fd (None: the parent naps instead)."""

    def __init__(self, block: ControlBlock, w: int, first: int, stop: int, wake_fd: int | None = None) -> None:
        self.requested, self.answered = block.requested[first:stop], block.answered[first:stop]
        self.first = first
        self.seen = self.requested.copy()  # the last request taken, per env
        self.values = np.zeros(len(self.seen), np.int64)  # the answer word of each env's request taken
        self._answered_words, self._values_words = int_words(self.answered), int_words(self.values)
        self._row, self._parent = int_words(block.worker_rows[w]), int_words(block.parent_row)
        self._counts = answer_counts(block)
        self._fd = -1 if wake_fd is None else wake_fd
        self._woken = 0  # the parent's sleep this worker wrote for last (Python answers)
        self._answerer = None if _kernel is None else _kernel.answerer(
            self.answered, self.values, block.rows, w, self._fd, WorkerColumn.ANSWERS, ParentColumn.SLEEPING,
            ParentColumn.TARGET)
        #: how the step loop answers an env with nothing to say, the moment it is done
        self.done = DoneHook(self.answer_quiet, self._answerer)

    def has_requests(self) -> bool:
        """Is a request not taken yet? (A cheap bytes comparison: a spinning worker asks every turn.)"""
        return self.requested.tobytes() != self.seen.tobytes()

    def take_runs(self) -> list[tuple[int, int]]:
        """Take every request not taken yet: the runs ``(start, stop)`` of consecutive envs
        so taken (in slice order), each env with its answer word set in ``values``."""
        if _kernel is not None:
            return _kernel.take_runs(self.requested, self.seen, self.values)
        requested = self.requested.copy()  # one look: a request written meanwhile waits for the next
        pending = requested != self.seen
        np.copyto(self.seen, requested, where=pending)
        np.left_shift(requested, 1, out=self.values, where=pending)
        edges = np.flatnonzero(np.diff(pending, prepend=False, append=False))  # where runs start and stop
        return [(int(start), int(stop)) for start, stop in edges.reshape(-1, 2).tolist()]

    def seq(self, k: int) -> int:
        """The number of the request env ``k`` answers next."""
        return self._values_words[k] >> 1

    def skip_all(self) -> None:
        """Drop every request not taken (a reset of the slice replaces them)."""
        self.seen[:] = self.requested

    def rings(self) -> int:
        """Times the parent rang the workers' bell so far."""
        return self._parent[ParentColumn.RINGS]

    def answer(self, k: int, has_message: bool) -> None:
        """Env ``k`` answered its request (the number in ``values``); its message, if any, is
        sent already."""
        if self._answerer is not None:
            _kernel.answer(self._answerer, k, has_message)  # type: ignore[union-attr]
            return
        self._answered_words[k] = self._values_words[k] | has_message
        self._row[WorkerColumn.ANSWERS] += 1
        full_fence()  # after the count, before the parent's row (``parent/waiting.py``)
        sleep = self._parent[ParentColumn.SLEEPING]
        if sleep and sleep != self._woken and self._fd >= 0 and sum(self._counts) >= self._parent[ParentColumn.TARGET]:
            self._woken = sleep
            try:
                os.write(self._fd, ONE)
            except BlockingIOError:
                pass  # full: a wake-up is pending already

    def answer_quiet(self, k: int) -> None:
        """Env ``k`` answered with nothing to say."""
        self.answer(k, False)

    def set_sleeping(self, asleep: bool) -> None:
        """Say whether this worker sleeps; going to sleep, before it looks at the lanes once
        more (a request written meanwhile is seen there, or the parent sees the sleeper)."""
        self._row[WorkerColumn.SLEEPING] = int(asleep)
        if asleep:
            full_fence()
