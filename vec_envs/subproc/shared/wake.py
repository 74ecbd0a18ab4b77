"""How a sleeping process is woken: answers and requests are numbers in shared memory
(``control_block.py``), and a number written to memory wakes nobody, so each side also
has file descriptors to sleep on, made by the parent and handed to each worker with the
shared memory (``messages.AttachSharedRequest``):

- the parent's wake fd (an eventfd; a pipe where there is none; ``parent/waiting.py``):
  before it sleeps, the parent writes in its row the total of answers it waits for and
  that it sleeps (numbered sleeps), then sleeps on this fd with whatever else it watches.
  A worker whose answer brings the total there writes ``ONE`` to it, once per sleep
  (``worker/lanes.py``), so the parent wakes once per batch, not once per env.
- the workers' bell (``BELLS`` eventfds; ``parent/lanes.py``): ring ``r`` (counted in the
  parent's row) empties fd ``(r + 1) % BELLS`` and writes to fd ``r % BELLS``; a worker
  about to sleep reads the count ``g``, looks at its lanes, and polls fd
  ``(g + 1) % BELLS`` with its pipe (``worker/main.py``): quiet until the next ring, and a
  ring that came meanwhile is seen by the look. Without eventfds the parent sends each
  sleeping worker a WAKE message through its pipe instead.

A stored "I sleep" and the other side's stored answer or request can cross (each process
loads before the other's store is seen), so each side fences between its store and its
load (``fence.py``), and the parent never sleeps more than ``FALLBACK_S`` before it looks
again (and wakes, through their pipes, the workers that still owe answers): a wake-up
lost any other way costs a few milliseconds, never a hang.

Example:
    >>> read, write = os.pipe()
    >>> os.write(write, ONE), readable(read)
    (8, True)
    >>> os.close(read); os.close(write)
"""
from __future__ import annotations

import os
import select

__all__ = ["BELLS", "FALLBACK_S", "ONE", "bells_supported", "readable", "supported"]

BELLS = 4  # eventfds of the workers' bell, rung in turn
FALLBACK_S = 0.005  # the longest a parent sleeps between looks (a wake-up lost all the same)
ONE = (1).to_bytes(8, "little")  # what an eventfd write takes (a pipe takes it as well)


def supported() -> bool:
    """Where ``select.poll`` can sleep on the wake fd and the worker sentinels together (POSIX)."""
    return hasattr(select, "poll")


def bells_supported() -> bool:
    """Where the workers' bell can be made (eventfds: Linux)."""
    return hasattr(os, "eventfd")


def readable(fd: int) -> bool:
    """Is ``fd`` readable now (a ring or a wake-up waits)?"""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(0))
