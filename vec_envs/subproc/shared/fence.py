"""full_fence(): the store-load barrier two processes need around shared memory.

x86-64 keeps stores in order and loads in order, but lets a load pass an earlier store to
another address (StoreLoad). Where each side stores a word and then loads the other's
("I sleep" against "a request is there", "I sleep for N answers" against "my answers
count"), both loads can miss both stores, and then each side waits for the other. A full
fence between each side's store and its load rules that out.

Where the lanes kernel is built, ``full_fence`` is its C ``fence()`` (one fence
instruction). Elsewhere, taking and giving back a lock executes one (a locked
instruction: CPython's locks are glibc semaphores or its own mutex); each process has its
own lock, made again in a forked child, so a fork while another thread held it cannot
leave the child stuck.

Example:
    >>> full_fence()
"""
from __future__ import annotations

import os
import threading
from collections.abc import Callable

from vec_envs import kernels

__all__ = ["full_fence"]

_lock = threading.Lock()


def _renew() -> None:
    global _lock
    _lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_renew)


def _lock_fence() -> None:
    """Every store before this call is seen by other processes before any load after it."""
    with _lock:
        pass


_kernel = kernels.load("lanes")
#: every store before a call is seen by other processes before any load after it
full_fence: Callable[[], None] = _lock_fence if _kernel is None else _kernel.fence
