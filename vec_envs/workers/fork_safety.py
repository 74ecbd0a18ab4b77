"""A child made with ``os.fork()`` leaves its parent's workers alone.

A forked child inherits the parent's VecEnvs, their worker handles and their
finalizers. Left as they are, a child that exits normally would stop the parent's
workers: multiprocessing's exit handler terminates every daemonic process it knows of
(the parent's workers, in the child's copy of its list), and the VecEnv's finalizer
would kill them too (and fail, as they are not the child's children). So every live
worker VecEnv is registered here, and right after a fork the child's copy of each one
forgets its workers: they stay the parent's, and the copy refuses every call
(``VecEnvBase._check_open``, ``errors.FORKED_COPY``).
"""
from __future__ import annotations

import os
import threading
import weakref
from typing import Any

__all__ = ["register"]

_live: weakref.WeakSet[Any] = weakref.WeakSet()
_lock = threading.Lock()
_hooked = False


def register(venv: Any) -> None:
    """Have ``venv._forget_workers_after_fork()`` called in every child forked from now on."""
    global _hooked
    with _lock:
        if not _hooked and hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=_forget_in_child)
            _hooked = True
        _live.add(venv)


def _forget_in_child() -> None:
    global _lock
    _lock = threading.Lock()  # the parent's may have been held by another thread at the fork
    for venv in list(_live):
        venv._forget_workers_after_fork()
    _live.clear()
