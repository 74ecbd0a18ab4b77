"""EnvSlots: asynchronous batches as sequence numbers per env in shared memory.

Under ``recv``/``send`` each env is a lane of its own. The parent writes env i's action
row, then bumps ``requested[i]``; the worker that owns env i sees the new number, steps
the env into its rows, sends a pipe message only when there is something to say
(non-empty infos, an error) and then writes ``answered[i] = seq << 1 | has_message``. The
parent sees env i finished when ``answered[i] >> 1`` is the sequence number it waits for:
one vectorized comparison over every env in flight. An async reset comes through the
pipe with the numbers to answer (``ResetSeqs``), so a worker never confuses it with a step.

Per worker, one row of ``SLOTS`` int64 says whether it sleeps on its pipe (the parent
then wakes it with a pipe message) and which env it is stepping (a dead worker's env).

Ordering is that of ``doorbell.py``: x86-64 keeps stores in order as seen from another
core, so a new request means the action is there, and an answer means the rows and the
message are.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

__all__ = ["AsyncResetRequest", "EnvMessage", "EnvSlots", "WorkerSlots"]

_SLEEPING, _STEPPING = 0, 1


class AsyncResetRequest(NamedTuple):
    """ASYNC_RESET: reset the slice's envs; env k's answer carries ``seqs[k]``."""

    seeds: Sequence[int | None] | None
    seqs: list[int]
    options: Sequence[dict | None] | None = None  # one per env of the slice; None: no options


class EnvMessage(NamedTuple):
    """What one env's answer has to say beyond its rows, sent through the pipe first.

    ``outcome`` is an ``Outcome``: ``(True, (info, reset_info or None))`` after a step (the
    reset info when the episode ended and the env was reset), ``(True, (reset_info,
    None))`` after an async reset, or ``(False, WorkerFailure)``.
    """

    env: int  # the env's global index
    seq: int  # the request it answers
    outcome: Any


class EnvSlots:
    """The parent's side: which envs it asked for, and which have answered.

    ``worker_rows`` has a row per worker, then the parent's (``wake_up.py``).

    Example:
        >>> requested, answered, rows = np.zeros(3, np.int64), np.zeros(3, np.int64), np.zeros((2, 8), np.int64)
        >>> slots = EnvSlots(requested, answered, rows)
        >>> worker = WorkerSlots(requested, answered, rows[0], first=0, stop=3)   # in the worker
        >>> slots.request(np.array([0, 2]))          # after writing their actions
        >>> [(int(k), worker.take(k)) for k in worker.pending()]
        [(0, 1), (2, 1)]
        >>> worker.answer(2, 1, has_message=True)
        >>> slots.finished(np.array([0, 2])).tolist(), slots.has_message(2)
        ([False, True], True)
    """

    def __init__(self, requested: np.ndarray, answered: np.ndarray, worker_rows: np.ndarray) -> None:
        self.requested, self.answered, self.worker_rows = requested, answered, worker_rows
        self.expected = requested.copy()  # the number each env's answer will carry, never below requested
        self._sleeping = worker_rows[:-1, _SLEEPING]  # the last row is the parent's (``wake_up.py``)

    def _next(self, env_ids: np.ndarray) -> np.ndarray:
        """Numbers above every one used for these envs (steps and resets alike), so an
        answer never looks like the answer to a later request."""
        seqs = self.expected[env_ids] + 1  # requested is expected or below
        self.expected[env_ids] = seqs
        return seqs

    def request(self, env_ids: np.ndarray) -> None:
        """Ask the workers to step ``env_ids`` (their actions are written already)."""
        self.requested[env_ids] = self._next(env_ids)

    def reset_seqs(self, env_ids: np.ndarray) -> np.ndarray:
        """The numbers the async reset of ``env_ids`` will be answered with (sent by pipe)."""
        return self._next(env_ids)

    def finished(self, env_ids: np.ndarray) -> np.ndarray:
        """Which of ``env_ids`` have answered their last request (a bool mask)."""
        return (self.answered[env_ids] >> 1) == self.expected[env_ids]

    def finished_of(self, flying: np.ndarray) -> np.ndarray:
        """Which envs of the mask ``flying`` have answered their last request (a bool mask
        over every env: one pass, no gathers)."""
        return flying & ((self.answered >> 1) == self.expected)

    def any_sleeping(self) -> bool:
        """Is any worker asleep on its pipe? (The last row is the parent's, ``wake_up.py``.)"""
        return bool(np.count_nonzero(self._sleeping))

    def has_message(self, i: int) -> bool:
        """Did a pipe message go with env ``i``'s last answer?"""
        return bool(self.answered[i] & 1)

    def sleeping(self, w: int) -> bool:
        """Is worker ``w`` asleep on its pipe (so a request would wait for its next nap)?"""
        return bool(self.worker_rows[w, _SLEEPING])

    def stepping(self, w: int) -> int | None:
        """The env worker ``w`` is stepping or resetting now (None: none)."""
        value = int(self.worker_rows[w, _STEPPING])
        return value - 1 if value else None

    def restart(self, w: int, first: int, stop: int) -> None:
        """A new worker ``w`` takes over envs ``first:stop``: it starts from their numbers now."""
        self.worker_rows[w] = 0
        self.answered[first:stop] = self.expected[first:stop] << 1


class WorkerSlots:
    """A worker's side, for its envs ``first:stop`` (``k`` counts from ``first``)."""

    def __init__(self, requested: np.ndarray, answered: np.ndarray, row: np.ndarray, first: int, stop: int) -> None:
        self.requested, self.answered = requested[first:stop], answered[first:stop]
        self._row = row.data.cast("B").cast("q")  # plain int stores, ~40 ns each
        self.first = first
        self.seen = self.requested.copy()  # the last request taken, per env

    def pending(self) -> np.ndarray:
        """The envs with a request not taken yet, in slice order."""
        return np.flatnonzero(self.requested != self.seen)

    def take(self, k: int) -> int:
        """Take env ``k``'s request: its sequence number (the env is being stepped now)."""
        seq = int(self.requested[k])
        self.seen[k] = seq
        self._row[_STEPPING] = self.first + k + 1
        return seq

    def skip_all(self) -> None:
        """Drop every request not taken (an async reset replaces them)."""
        self.seen[:] = self.requested

    def started(self, k: int) -> None:
        """Env ``k`` is being reset or stepped now (a dead worker's env)."""
        self._row[_STEPPING] = self.first + k + 1

    def answer(self, k: int, seq: int, has_message: bool) -> None:
        """Env ``k`` finished request ``seq``; its message, if any, is sent already."""
        self._row[_STEPPING] = 0
        self.answered[k] = seq << 1 | int(has_message)

    def set_sleeping(self, asleep: bool) -> None:
        self._row[_SLEEPING] = int(asleep)
