"""SharedBuffers: batch buffers in one anonymous shared-memory region.

The region is a ``memfd`` (an unlinked temporary file where memfd is missing): it has no
name in ``/dev/shm``, so nothing is left behind however the processes end. Workers map it
through a file descriptor passed over their pipe; every observation leaf, the rewards,
the dones and the terminal rows (``BatchBuffers``) are NumPy views into it, shaped
``(num_envs, *shape)``. A transport may ask for ``control_words`` int64 after them, its
own control block, whose layout is its own business.
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

__all__ = ["SharedBuffers", "map_region"]

_ALIGN = 64  # bytes: each leaf starts on its own cache line


def _action_leaf(action_space: spaces.Space | None) -> spaces.Space | None:
    """The action space if its actions fit one fixed-shape array, else None (pipes)."""
    return action_space if isinstance(action_space, FIXED_SIZE_LEAVES) else None


def _layout(space: spaces.Space, action_space: spaces.Space | None, n: int, control_words: int,
            buf: Any) -> tuple[BatchBuffers, np.ndarray | None, np.ndarray | None, int]:
    """Lay out the buffers, actions and control words of ``n`` envs in ``buf`` (just size
    them if None): the buffers, the actions, the control words, the size in bytes."""
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
    control = allocate((control_words,), np.dtype(np.int64)) if control_words else None
    return buffers, actions, control, max(offset, 1)


def _anonymous_fd(size: int) -> int:
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("vec_envs", os.MFD_CLOEXEC)
    else:
        with tempfile.TemporaryFile(prefix="vec_envs-") as f:
            fd = os.dup(f.fileno())
    os.ftruncate(fd, size)
    return fd


def map_region(space: spaces.Space, action_space: spaces.Space | None, n: int, fd: int, size: int,
               control_words: int = 0) -> tuple[mmap.mmap, BatchBuffers, np.ndarray | None, np.ndarray | None]:
    """Map the region behind ``fd`` (in a worker): the region, buffers, actions and control
    words, the last two None when not laid out."""
    region = mmap.mmap(fd, size)
    buffers, actions, control, _ = _layout(space, action_space, n, control_words, region)
    return region, buffers, actions, control


class SharedBuffers:
    """``BatchBuffers`` of ``n`` envs, and their actions, in shared memory.

    ``actions`` is None when the action space has no fixed shape (actions then travel
    through the pipes); ``control`` holds the ``control_words`` int64 a transport asked
    for (None if none), zeroed.

    Example:
        >>> shared = SharedBuffers(spaces.Box(0, 1, (4,)), spaces.Discrete(2), 8)
        >>> shared.buffers.obs.shape, shared.actions.shape       # pass fd/size to workers
        ((8, 4), (8,))
        >>> shared.close()
    """

    def __init__(self, space: spaces.Space, action_space: spaces.Space, n: int, control_words: int = 0) -> None:
        self.space, self.action_space, self.n, self.control_words = space, action_space, n, control_words
        self.size = _layout(space, action_space, n, control_words, None)[3]
        self.fd = _anonymous_fd(self.size)
        self._region, self.buffers, self.actions, self.control = map_region(
            space, action_space, n, self.fd, self.size, control_words)

    def close(self) -> None:
        """Close the descriptor and unmap (once no caller holds a view any more)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        self.buffers = self.actions = self.control = None  # type: ignore[assignment]
        try:
            self._region.close()
        except BufferError:
            pass  # the caller still holds views (copy=False); freed with the last of them
