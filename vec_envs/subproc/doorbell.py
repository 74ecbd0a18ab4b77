"""Doorbell: a STEP request and its answer as sequence numbers in shared memory.

With the actions and the results already in shared memory, a step needs no pipe message
at all: the parent bumps ``requested``, the (spinning) worker sees it within a
microsecond, steps, and bumps ``answered``. A pipe message follows only when there is
something to say (non-empty infos, an error), and says so with ``has_message``.

A worker that waited past its spin budget goes to sleep on its pipe and says so
(``sleeping``); the parent then sends that step through the pipe, which wakes it at
once, instead of ringing a bell nobody watches. (Should the two cross, the sleeping
worker still looks at the bell between naps.)

Ordering: the parent writes the actions before it rings, the worker writes the results
(and sends any message) before it answers; x86-64 keeps stores in order as seen from
another core, so a rung bell means the actions are there and an answer means the results
are. Other CPUs use the pipes only (``supported()``).
"""
from __future__ import annotations

import platform

import numpy as np

__all__ = ["Doorbell", "supported", "SLOTS"]

SLOTS = 8  # int64 slots per worker: one 64-byte cache line, so workers never share one
_REQUESTED, _ANSWERED, _HAS_MESSAGE, _SLEEPING = 0, 1, 2, 3


def supported() -> bool:
    """Only where the CPU keeps stores in order across cores (x86-64)."""
    return platform.machine().lower() in ("x86_64", "amd64")


class Doorbell:
    """One worker's bell: a row of ``SLOTS`` int64 in shared memory.

    Example:
        >>> bell = Doorbell(np.zeros(SLOTS, np.int64))
        >>> seq = bell.ring()                  # parent: "step now"
        >>> bell.requested(last=0) == seq      # worker: sees the request
        True
        >>> bell.answer(seq, has_message=False); bell.answered(seq)
        True
    """

    def __init__(self, row: np.ndarray) -> None:
        self._slots = row.data.cast("B").cast("q")  # plain int reads, ~40 ns each

    def clear(self) -> None:
        for i in range(SLOTS):
            self._slots[i] = 0

    def ring(self) -> int:
        """Parent: request a step; returns its sequence number."""
        seq = self._slots[_REQUESTED] + 1
        self._slots[_REQUESTED] = seq
        return seq

    def answered(self, seq: int) -> bool:
        """Parent: has the worker finished request ``seq``?"""
        return self._slots[_ANSWERED] == seq

    def has_message(self) -> bool:
        """Parent: does a pipe message go with the last answer?"""
        return bool(self._slots[_HAS_MESSAGE])

    def requested(self, last: int) -> int:
        """Worker: the sequence number of a new request, or 0 if none since ``last``."""
        seq = self._slots[_REQUESTED]
        return seq if seq != last else 0

    def sleeping(self) -> bool:
        """Parent: is the worker asleep on its pipe (so a bell would go unheard for a while)?"""
        return bool(self._slots[_SLEEPING])

    def set_sleeping(self, asleep: bool) -> None:
        """Worker: about to sleep on the pipe (True), or awake again (False)."""
        self._slots[_SLEEPING] = int(asleep)

    def answer(self, seq: int, has_message: bool) -> None:
        """Worker: request ``seq`` is done (its message, if any, is already sent)."""
        self._slots[_HAS_MESSAGE] = int(has_message)
        self._slots[_ANSWERED] = seq
