"""Marks: a run of envs stepped in series says each env is done as soon as it is.

A worker serving ``recv``/``send`` steps the envs requested from it one after the other,
and the parent takes the first envs to finish: so each env is answered the moment its
rows are written, not when the run ends. ``EnvSlice.step_marked`` does that through
``Marks``: after env ``k``'s rows, ``cells[k] = values[k]``, then ``tally[0] += 1``, then
``notify()`` if ``watch[0]`` is set (whoever reads the cells may be asleep). The C step
loop marks the envs it stores in C the same way, in the same order.

Example:
    >>> import numpy as np
    >>> marks = Marks(np.zeros(3, np.int64), np.array([0, 14, 0]), np.zeros(1, np.int64), np.ones(1, np.int64),
    ...               lambda: print("notified"))
    >>> marks.mark(1)
    notified
    >>> marks.cells.tolist(), int(marks.tally[0])
    ([0, 14, 0], 1)
"""
from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from vec_envs.spaces.fence import full_fence

__all__ = ["Marks"]


class Marks(NamedTuple):
    """Where env ``k`` of a slice is marked done (int64 arrays, shared memory where another
    process reads them)."""

    cells: np.ndarray  # a word per env of the slice: written values[k] when env k is done
    values: np.ndarray  # a word per env: what its cell gets
    tally: np.ndarray  # one word: the marks made so far
    watch: np.ndarray  # one word: notify() after a mark only while it is nonzero
    notify: Callable[[], None] | None

    def mark(self, k: int) -> None:
        """Env ``k`` is done (its rows are written)."""
        self.cells[k] = self.values[k]
        self.tally[0] += 1
        full_fence()  # the tally before the watched word, as the C loop does
        if self.notify is not None and self.watch[0]:
            self.notify()
