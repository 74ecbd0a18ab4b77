"""The control block: the subprocess transport's one request/answer mechanism in shared memory.

Each env is a lane of two int64 words. The parent writes env i's action row, then bumps
``requested[i]``; the worker that owns env i sees the new number, steps the env into its
rows, sends a pipe message only when there is something to say (non-empty infos, an
error), then writes ``answered[i] = seq << 1 | has_message``. The parent sees env i
finished when ``answered[i] >> 1`` is the number it waits for. Lock-step ``step()``
requests every env of each worker and waits for all answers; ``recv``/``send`` requests
some envs and takes the first answers: the same lanes serve both.

Then a row of ``ROW_WORDS`` int64 per worker (``WorkerColumn``), and the parent's own row
last (``ParentColumn``): one 64-byte cache line each, so no two writers share one. A
worker says there that it sleeps on its pipe (the parent then wakes it with one WAKE
message) and counts its answers (the parent sleeping on them is woken through a file
descriptor, ``wake_up.py``); the parent says there that it sleeps, the total of answers it
waits for, and whether a worker should answer a whole slice together (lock-step).

Ordering: x86-64 keeps stores in order as seen from another core, so a new request means
the action is there, and an answer means the rows and the message are. Where a side
stores and then loads what the other stores (who sleeps, the requests, the answers), a
full fence stands between (``spaces/fence.py``; ``wake_up.py`` says where). Other CPUs use
the pipes only (``supported()``).

Example:
    >>> block = ControlBlock(np.zeros(ControlBlock.words(3, workers=1), np.int64), n=3, workers=1)
    >>> parent, worker = ParentLanes(block), WorkerLanes(block, 0, first=0, stop=3)
    >>> parent.request(np.array([0, 2]))            # after writing their actions
    1
    >>> worker.take_runs(), worker.seq(2)           # runs of consecutive envs: (start, stop)
    ([(0, 1), (2, 3)], 1)
    >>> worker.answer(2, 1, has_message=True)
    >>> worker.marks.mark(0)                        # what the step loop does for an env with nothing to say
    >>> parent.finished(np.array([0, 2])).tolist(), parent.has_message(2), parent.answers(0)
    ([True, True], True, 2)
"""
from __future__ import annotations

import platform
from collections.abc import Callable
from types import ModuleType

import numpy as np

from vec_envs.spaces.fence import full_fence
from vec_envs.stepping.marks import Marks

_lanes_kernel: ModuleType | None
try:  # the optional C pass over the lanes, built by setup.py when it can be
    from vec_envs.subproc import _lanes_kernel
except ImportError:
    _lanes_kernel = None

__all__ = ["ControlBlock", "ParentColumn", "ParentLanes", "ROW_WORDS", "WorkerColumn", "WorkerLanes", "answer_counts",
           "supported"]

ROW_WORDS = 8  # int64 per row: one 64-byte cache line


class WorkerColumn:
    """The columns of a worker's row (written by the worker)."""

    SLEEPING = 0  # 1 while it sleeps on its pipe (and the workers' bell): a request then needs a wake-up
    ANSWERS = 1  # lanes answered since it started


class ParentColumn:
    """The columns of the parent's row (the last row)."""

    SLEEPING = 0  # while it sleeps on the wake fd, the number of that sleep (1, 2, ...); 0 awake
    TARGET = 1  # the total of answers (all workers) that ends its sleep
    TOGETHER = 2  # 1 (lock-step): a worker sends what its envs had to say in one message, after them all
    RINGS = 3  # times the parent rang the workers' bell (``wake_up.WorkerBell``)


def supported() -> bool:
    """Only where the CPU keeps stores in order across cores (x86-64)."""
    return platform.machine().lower() in ("x86_64", "amd64")


def _int_words(row: np.ndarray) -> memoryview:
    """Plain int reads and writes of an int64 row, ~40 ns each (NumPy scalars take ~100)."""
    return row.data.cast("B").cast("q")


def answer_counts(block: ControlBlock) -> memoryview:
    """The workers' ``ANSWERS`` column as plain ints: ``sum()`` of it takes ~0.1 us (NumPy's ~0.6)."""
    return _int_words(block.worker_rows)[WorkerColumn.ANSWERS::ROW_WORDS]


class ControlBlock:
    """The layout: ``requested`` and ``answered`` lanes of ``n`` envs, then a row per
    worker and the parent's row, over a flat int64 array of ``words(n, workers)``."""

    def __init__(self, words: np.ndarray, n: int, workers: int) -> None:
        lanes = -(-n // ROW_WORDS) * ROW_WORDS  # each array starts on its own cache line
        self.n, self.workers = n, workers
        self.requested = words[:n]
        self.answered = words[lanes:lanes + n]
        rows = words[2 * lanes:2 * lanes + (workers + 1) * ROW_WORDS].reshape(workers + 1, ROW_WORDS)
        self.worker_rows, self.parent_row = rows[:workers], rows[workers]

    @staticmethod
    def words(n: int, workers: int) -> int:
        """How many int64 the block of ``n`` envs and ``workers`` workers takes."""
        return 2 * -(-n // ROW_WORDS) * ROW_WORDS + (workers + 1) * ROW_WORDS


class ParentLanes:
    """The parent's side: which envs it asked for, which have answered, who sleeps."""

    def __init__(self, block: ControlBlock) -> None:
        self.block = block
        self.requested, self.answered = block.requested, block.answered
        self.expected = self.requested.copy()  # the number each env's answer will carry, never below requested
        self._top = int(self.expected.max(initial=0))  # the highest number used, for any env
        self._sleeping = block.worker_rows[:, WorkerColumn.SLEEPING]
        self._rows = [_int_words(row) for row in block.worker_rows]
        self._parent = _int_words(block.parent_row)
        self.together = False  # what the TOGETHER column says (read here, no shared-memory load)

    def request(self, env_ids: np.ndarray | slice) -> int:
        """Ask the workers to step ``env_ids`` (their actions are written already); the
        number their answers will carry: one above every number used so far (steps and
        resets, every env), so an answer never looks like the answer to a later request."""
        self._top = seq = self._top + 1
        self.expected[env_ids] = seq
        self.requested[env_ids] = seq
        full_fence()  # before the caller looks who sleeps: a worker going to sleep sees the request, or is seen
        return seq

    def reset_seqs(self, env_ids: np.ndarray) -> list[int]:
        """The numbers the async reset of ``env_ids`` will be answered with (sent by pipe)."""
        self._top = seq = self._top + 1
        self.expected[env_ids] = seq
        return [seq] * len(env_ids)

    def slice_finished(self, first: int, stop: int, seq: int) -> bool:
        """Have envs ``first:stop`` all answered request ``seq`` (lock-step)?"""
        return bool(((self.answered[first:stop] >> 1) == seq).all())

    def slice_quiet(self, first: int, stop: int, seq: int) -> bool:
        """Have envs ``first:stop`` all answered request ``seq``, none with a message?
        (One bytes comparison, ~0.3 us: NumPy's ``==`` and ``all`` on a few envs take ~2.)"""
        return self.answered[first:stop].tobytes() == (seq << 1).to_bytes(8, "little") * (stop - first)

    def finished(self, env_ids: np.ndarray | slice) -> np.ndarray:
        """Which of ``env_ids`` have answered their last request (a bool mask)."""
        return (self.answered[env_ids] >> 1) == self.expected[env_ids]

    def scan(self, flying: np.ndarray, unread: np.ndarray, ready: list[int]) -> int:
        """Find the envs of the mask ``flying`` that answered: each leaves ``flying``, is
        ``unread`` if a message went with its answer, and is appended to ``ready`` (in index
        order); how many."""
        if _lanes_kernel is not None:
            return _lanes_kernel.scan(self.answered, self.expected, flying, unread, ready)
        answered = self.answered.copy()  # one look
        done = (flying & ((answered >> 1) == self.expected)).nonzero()[0]
        flying[done] = False
        unread[done] = answered[done] & 1
        ready.extend(done.tolist())
        return len(done)

    def first_ready(self, ready: list[int], count: int, dones: np.ndarray) -> tuple[np.ndarray, np.ndarray, bool]:
        """The first ``count`` envs of ``ready`` (an int64 array), their ``dones``, and
        whether any of them answered with a message."""
        if _lanes_kernel is not None:
            env_ids, their_dones = np.empty(count, np.int64), np.empty(count, np.bool_)
            return env_ids, their_dones, _lanes_kernel.first_ready(ready, self.answered, dones, env_ids, their_dones)
        env_ids = np.array(ready[:count], np.int64)
        return env_ids, dones[env_ids], bool(np.count_nonzero(self.answered[env_ids] & 1))

    def count_finished(self, flying: np.ndarray) -> int:
        """How many envs of the mask ``flying`` have answered (``scan`` would find them)."""
        if _lanes_kernel is not None:
            return _lanes_kernel.count_finished(self.answered, self.expected, flying)
        return int(np.count_nonzero(flying & ((self.answered >> 1) == self.expected)))

    def has_message(self, i: int) -> bool:
        """Did a pipe message go with env ``i``'s last answer?"""
        return bool(self.answered[i] & 1)

    def answers(self, w: int) -> int:
        """Lanes worker ``w`` answered so far (one int read: a cheap test before ``finished``)."""
        return self._rows[w][WorkerColumn.ANSWERS]

    def sleeping(self, w: int) -> bool:
        """Is worker ``w`` asleep on its pipe (so a request waits for a WAKE)?"""
        return bool(self._rows[w][WorkerColumn.SLEEPING])

    def any_sleeping(self, workers: np.ndarray | None = None) -> bool:
        """Is any worker (of ``workers``, indices that may repeat) asleep on its pipe?"""
        return bool(np.count_nonzero(self._sleeping if workers is None else self._sleeping[workers]))

    def set_together(self, together: bool) -> None:
        """Lock-step (True): the parent waits for the whole batch, so a worker sends what its
        envs had to say in one message, after stepping them all (recv/send: one per env, at once)."""
        self.together = together
        self._parent[ParentColumn.TOGETHER] = int(together)

    def restart(self, w: int, first: int, stop: int) -> None:
        """A new worker ``w`` takes over envs ``first:stop``: it starts from their numbers now."""
        self.block.worker_rows[w] = 0
        self.requested[first:stop] = self.expected[first:stop]
        self.answered[first:stop] = self.expected[first:stop] << 1


class WorkerLanes:
    """Worker ``w``'s side, for its envs ``first:stop`` (``k`` counts from ``first``)."""

    def __init__(self, block: ControlBlock, w: int, first: int, stop: int,
                 waker: Callable[[], None] | None = None) -> None:
        self.requested, self.answered = block.requested[first:stop], block.answered[first:stop]
        self._waker = waker  # called after each answer: wakes the parent if it sleeps for it
        self.first = first
        self.seen = self.requested.copy()  # the last request taken, per env
        self._answered_words = _int_words(self.answered)
        self._seen_words = _int_words(self.seen)
        self._row = _int_words(block.worker_rows[w])
        self._parent = _int_words(block.parent_row)
        answers, sleeping = block.worker_rows[w, WorkerColumn.ANSWERS:], block.parent_row[ParentColumn.SLEEPING:]
        values = np.zeros(len(self.seen), np.int64)
        #: how the step loop answers an env with nothing to say the moment it is done (``answer`` without message)
        self.marks = Marks(self.answered, values, answers[:1], sleeping[:1], waker)
        #: the same answers, neither counted nor waking (lock-step: ``counted`` once the run is done)
        self.uncounted_marks = Marks(self.answered, values, np.zeros(1, np.int64), np.zeros(1, np.int64), None)

    def has_requests(self) -> bool:
        """Is a request not taken yet? (~0.1 us: a spinning worker asks every turn.)"""
        return self.requested.tobytes() != self.seen.tobytes()

    def take_runs(self) -> list[tuple[int, int]]:
        """Take every request not taken yet: the runs ``(start, stop)`` of consecutive envs
        so taken (in slice order), each env with its answer's value set in ``marks`` (and its
        number in ``seq``)."""
        if _lanes_kernel is not None:
            return _lanes_kernel.take_runs(self.requested, self.seen, self.marks.values)
        requested = self.requested.copy()  # one look: a request written meanwhile waits for the next
        pending = requested != self.seen
        np.copyto(self.seen, requested, where=pending)
        np.left_shift(requested, 1, out=self.marks.values, where=pending)
        edges = np.flatnonzero(np.diff(pending, prepend=False, append=False))  # where runs start and stop
        return [(int(start), int(stop)) for start, stop in edges.reshape(-1, 2).tolist()]

    def rings(self) -> int:
        """Times the parent rang the workers' bell so far."""
        return self._parent[ParentColumn.RINGS]

    def together(self) -> bool:
        """Lock-step: does the parent wait for the whole batch (the envs that talk then share one message)?"""
        return bool(self._parent[ParentColumn.TOGETHER])

    def seq(self, k: int) -> int:
        """The number of env ``k``'s request taken last."""
        return self._seen_words[k]

    def skip_all(self) -> None:
        """Drop every request not taken (an async reset replaces them)."""
        self.seen[:] = self.requested

    def answer(self, k: int, seq: int, has_message: bool, count: bool = True) -> None:
        """Env ``k`` finished request ``seq``; its message, if any, is sent already (``count``
        False: counted later, with others, by ``counted``)."""
        self._answered_words[k] = seq << 1 | has_message
        if count:
            self.counted(1)

    def counted(self, answers: int) -> None:
        """Count ``answers`` answered (their words written), then wake the parent if they make its total."""
        self._row[WorkerColumn.ANSWERS] += answers
        if self._waker is not None:
            self._waker()

    def set_sleeping(self, asleep: bool) -> None:
        """Say whether this worker sleeps; going to sleep, before it looks at the lanes once
        more (a request written meanwhile is seen there, or the parent sees the sleeper)."""
        self._row[WorkerColumn.SLEEPING] = int(asleep)
        if asleep:
            full_fence()
