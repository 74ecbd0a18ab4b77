"""The control block: the words in shared memory through which the parent requests envs
and the workers answer them (the layout both sides read; ``parent/lanes.py`` and
``worker/lanes.py`` are each side's use of it).

Each env has a lane of two int64 words. The parent writes env i's action row, then sets
``requested[i]`` to a new request number; the worker that owns env i sees the new
number, steps the env into its rows, sends a pipe message only when the env has
something to say (an info, an error), then writes ``answered[i] = number << 1 |
has_message``. The parent sees env i answered when ``answered[i] >> 1`` is the number it
waits for. A lock-step ``step()`` requests every env and waits for every answer;
``recv``/``send`` requests some envs and takes the first answers: the same lanes serve both.

Then a row of ``ROW_WORDS`` int64 per worker (``WorkerColumn``), and the parent's own row
last (``ParentColumn``): one 64-byte cache line each, so no two writers share one. A
worker says there that it sleeps (the parent then rings it awake, ``wake.py``) and counts
its answers; the parent says there that it sleeps and the total of answers it waits for
(a worker whose answer makes that total wakes it).

Ordering: x86-64 keeps stores in order as seen from another core, so a new request means
the action is there, and an answer means the rows and the message are. Where a side
stores and then loads what the other stores (who sleeps, the requests, the answers), a
full fence stands between (``fence.py``). Other CPUs use the pipes only (``supported()``).

Example:
    >>> block = ControlBlock(np.zeros(ControlBlock.words(3, workers=1), np.int64), n=3, workers=1)
    >>> block.requested.shape, block.worker_rows.shape, block.parent_row.shape
    ((3,), (1, 8), (8,))
"""
from __future__ import annotations

import platform

import numpy as np

__all__ = ["ControlBlock", "ParentColumn", "ROW_WORDS", "WorkerColumn", "answer_counts", "int_words", "supported"]

ROW_WORDS = 8  # int64 per row: one 64-byte cache line


class WorkerColumn:
    """The columns of a worker's row (written by the worker)."""

    SLEEPING = 0  # 1 while it sleeps on its pipe and the workers' bell: a request then needs a ring
    ANSWERS = 1  # lanes answered since it started


class ParentColumn:
    """The columns of the parent's row (the last row)."""

    SLEEPING = 0  # while it sleeps on the wake fd, the number of that sleep (1, 2, ...); 0 awake
    TARGET = 1  # the total of answers (all workers) that ends its sleep
    RINGS = 2  # times the parent rang the workers' bell (``wake.WorkerBell``)


def supported() -> bool:
    """Only where the CPU keeps stores in order across cores (x86-64)."""
    return platform.machine().lower() in ("x86_64", "amd64")


def int_words(row: np.ndarray) -> memoryview:
    """Plain int reads and writes of an int64 array (NumPy scalars cost more than twice as much)."""
    return row.data.cast("B").cast("q")


def answer_counts(block: ControlBlock) -> memoryview:
    """The workers' ``ANSWERS`` column as plain ints (``sum()`` of it is a cheap look)."""
    return int_words(block.worker_rows)[WorkerColumn.ANSWERS::ROW_WORDS]


class ControlBlock:
    """The layout: ``requested`` and ``answered`` lanes of ``n`` envs, then a row per
    worker and the parent's row, over a flat int64 array of ``words(n, workers)``."""

    def __init__(self, words: np.ndarray, n: int, workers: int) -> None:
        lanes = -(-n // ROW_WORDS) * ROW_WORDS  # each array starts on its own cache line
        self.n, self.workers = n, workers
        self.requested = words[:n]
        self.answered = words[lanes:lanes + n]
        self.rows = words[2 * lanes:2 * lanes + (workers + 1) * ROW_WORDS].reshape(workers + 1, ROW_WORDS)
        self.worker_rows, self.parent_row = self.rows[:workers], self.rows[workers]

    @staticmethod
    def words(n: int, workers: int) -> int:
        """How many int64 the block of ``n`` envs and ``workers`` workers takes."""
        return 2 * -(-n // ROW_WORDS) * ROW_WORDS + (workers + 1) * ROW_WORDS
