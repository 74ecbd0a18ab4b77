"""A worker leaves with its parent, however the parent dies and whatever the worker does.

The parent is the VecEnv's process, named by its pid: not the worker's OS parent, which
under ``forkserver`` is the fork server. A daemon thread waits for that process to end
(on a pidfd where Linux has them, else looking every ``POLL_S``) and ends the worker with
``os._exit``, even while its main thread is inside a long ``env.step`` (the envs' own
``close()`` is not owed then). The shared memory is a memfd: nothing is left behind.
"""
from __future__ import annotations

import os
import select
import threading
import time
from collections.abc import Callable

__all__ = ["POLL_S", "parent_alive", "watch_parent"]

POLL_S = 0.5  # where no pidfd can be had: how often the watch looks at the parent
EXIT_CODE = 0  # the parent is gone: nobody reads it


def parent_alive(pid: int) -> bool:
    """Does process ``pid`` still run (a zombie counts as gone where ``/proc`` says so)?

    Example:
        >>> parent_alive(os.getpid())
        True
    """
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # a process of another user took the pid: ours is gone
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return True


def _open_pidfd(pid: int) -> int | None:
    """A pidfd on ``pid`` (readable once it ends), or None where Linux or Python lacks them."""
    pidfd_open = getattr(os, "pidfd_open", None)
    if pidfd_open is None:
        return None
    try:
        return int(pidfd_open(pid))
    except ProcessLookupError:
        os._exit(EXIT_CODE)  # gone already
    except OSError:
        return None  # ENOSYS (kernel < 5.3), or a sandbox that refuses it


def _wait_on_pidfd(pidfd: int) -> None:
    poller = select.poll()
    poller.register(pidfd, select.POLLIN)
    while not poller.poll():
        pass
    os._exit(EXIT_CODE)


def _poll_parent(pid: int) -> None:
    while parent_alive(pid):
        time.sleep(POLL_S)
    os._exit(EXIT_CODE)


def watch_parent(pid: int) -> threading.Thread:
    """Start the daemon thread that ends this process with ``os._exit`` once ``pid`` is gone."""
    pidfd = _open_pidfd(pid)
    target: Callable[[int], None] = _poll_parent if pidfd is None else _wait_on_pidfd
    thread = threading.Thread(target=target, args=(pid if pidfd is None else pidfd,), name="vec_envs-parent-watch",
                              daemon=True)
    thread.start()
    return thread
