"""SharedBuffers: batch buffers in one anonymous shared-memory region.

The region is a ``memfd`` (an unlinked temporary file where memfd is missing): it has no
name in ``/dev/shm``, so nothing is left behind however the processes end. Workers map it
through a file descriptor passed over their pipe; every observation leaf, the rewards,
the dones and the terminal rows (``BatchBuffers``) are NumPy views into it, shaped
``(num_envs, *shape)``.
"""
from __future__ import annotations

import mmap
import os
import tempfile
from typing import Any

import numpy as np
from gymnasium import spaces

from vec_envs.spaces.batching import BatchBuffers, leaf_shape
from vec_envs.spaces.nested import FIXED_SIZE_LEAVES
from vec_envs.subproc.doorbell import SLOTS

__all__ = ["SharedBuffers", "map_region"]

_ALIGN = 64  # bytes: each leaf starts on its own cache line


def _action_leaf(action_space: spaces.Space | None) -> spaces.Space | None:
    """The action space if its actions fit one fixed-shape array, else None (pipes)."""
    return action_space if isinstance(action_space, FIXED_SIZE_LEAVES) else None


def _layout(space: spaces.Space, action_space: spaces.Space | None, n: int, doorbells: int,
            buf: Any, slot_workers: int = 0) -> tuple[BatchBuffers, np.ndarray | None, np.ndarray | None, int,
                                                       tuple[np.ndarray, ...] | None]:
    """Lay out the buffers, actions, doorbell rows and env slots of ``n`` envs in ``buf``
    (just size them if None)."""
    offset = 0

    def allocate(shape: tuple, dtype: np.dtype) -> np.ndarray:
        nonlocal offset
        offset = -(-offset // _ALIGN) * _ALIGN
        count = int(np.prod(shape))
        if buf is None:
            arr = np.empty(0, dtype)
        else:
            arr = np.frombuffer(buf, dtype, count, offset).reshape(shape)
        offset += count * dtype.itemsize
        return arr

    buffers = BatchBuffers.allocate(space, n, allocate, terminal=True)
    leaf = _action_leaf(action_space)
    actions = None if leaf is None else allocate((n, *leaf_shape(leaf)), np.dtype(leaf.dtype))
    bells = allocate((doorbells, SLOTS), np.dtype(np.int64)) if doorbells else None
    slots = None
    if slot_workers:  # written by the parent, by the workers, by the workers: one cache line apart
        slots = (allocate((n,), np.dtype(np.int64)), allocate((n,), np.dtype(np.int64)),
                 allocate((slot_workers + 1, SLOTS), np.dtype(np.int64)))  # a row per worker, the parent's last
    return buffers, actions, bells, max(offset, 1), slots


def _anonymous_fd(size: int) -> int:
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("vec_envs", os.MFD_CLOEXEC)
    else:
        with tempfile.TemporaryFile(prefix="vec_envs-") as f:
            fd = os.dup(f.fileno())
    os.ftruncate(fd, size)
    return fd


def map_region(space: spaces.Space, action_space: spaces.Space | None, n: int, doorbells: int, fd: int,
               size: int, slot_workers: int = 0) -> tuple[mmap.mmap, BatchBuffers, np.ndarray | None,
                                                          np.ndarray | None, tuple[np.ndarray, ...] | None]:
    """Map the region behind ``fd`` (in a worker): the region, buffers, actions, doorbells and
    the env slots' arrays (``EnvSlots``), each None when not laid out."""
    region = mmap.mmap(fd, size)
    buffers, actions, bells, _, slots = _layout(space, action_space, n, doorbells, region, slot_workers)
    return region, buffers, actions, bells, slots


class SharedBuffers:
    """``BatchBuffers`` of ``n`` envs, and their actions, in shared memory.

    ``actions`` is None when the action space has no fixed shape (actions then travel
    through the pipes); ``doorbells`` holds one ``Doorbell`` row per worker if asked for;
    ``slots`` the arrays of ``EnvSlots`` (asynchronous batches) for ``slot_workers`` workers,
    whose rows end with the parent's (``wake_up.py``).

    Example:
        >>> shared = SharedBuffers(spaces.Box(0, 1, (4,)), spaces.Discrete(2), 8)
        >>> shared.buffers.obs.shape, shared.actions.shape       # pass fd/size to workers
        ((8, 4), (8,))
        >>> shared.close()
    """

    def __init__(self, space: spaces.Space, action_space: spaces.Space, n: int, doorbells: int = 0,
                 slot_workers: int = 0) -> None:
        self.space, self.action_space, self.n, self.num_doorbells = space, action_space, n, doorbells
        self.slot_workers = slot_workers
        self.size = _layout(space, action_space, n, doorbells, None, slot_workers)[3]
        self.fd = _anonymous_fd(self.size)
        self._region, self.buffers, self.actions, self.doorbells, self.slots = map_region(
            space, action_space, n, doorbells, self.fd, self.size, slot_workers)

    def close(self) -> None:
        """Close the descriptor and unmap (once no caller holds a view any more)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        self.buffers = self.actions = self.doorbells = self.slots = None  # type: ignore[assignment]
        try:
            self._region.close()
        except BufferError:
            pass  # the caller still holds views (copy=False); freed with the last of them
