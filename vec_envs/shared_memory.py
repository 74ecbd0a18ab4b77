"""SharedBuffers: batch buffers in one anonymous shared-memory region.

The region is a ``memfd`` (an unlinked temporary file where memfd is missing): it has no
name in ``/dev/shm``, so nothing is left behind however the processes end. Workers map it
through a file descriptor passed over their pipe; every observation leaf, the rewards
and the dones are NumPy views into it, shaped ``(num_envs, *shape)``.
"""
from __future__ import annotations

import mmap
import os
import tempfile
from typing import Any

import numpy as np
from gymnasium import spaces

from vec_envs.batching import BatchBuffers

__all__ = ["SharedBuffers", "map_buffers"]

_ALIGN = 64  # bytes: each leaf starts on its own cache line


def _layout(space: spaces.Space, n: int, buf: Any) -> tuple[BatchBuffers, int]:
    """Lay out the buffers of ``n`` envs in ``buf`` (or just size them when buf is None)."""
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

    buffers = BatchBuffers.allocate(space, n, allocate)
    return buffers, max(offset, 1)


def _anonymous_fd(size: int) -> int:
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("vec_envs", os.MFD_CLOEXEC)
    else:
        with tempfile.TemporaryFile(prefix="vec_envs-") as f:
            fd = os.dup(f.fileno())
    os.ftruncate(fd, size)
    return fd


def map_buffers(space: spaces.Space, n: int, fd: int, size: int) -> tuple[mmap.mmap, BatchBuffers]:
    """Map the region behind ``fd`` (in a worker) and return it with its buffer views."""
    region = mmap.mmap(fd, size)
    buffers, _ = _layout(space, n, region)
    return region, buffers


class SharedBuffers:
    """``BatchBuffers`` of ``n`` envs in shared memory, created by the parent.

    Example:
        >>> shared = SharedBuffers(spaces.Box(0, 1, (4,)), 8)    # doctest: +SKIP
        >>> shared.buffers.obs.shape, shared.fd                 # pass fd/size to workers
        ((8, 4), 5)
        >>> shared.close()
    """

    def __init__(self, space: spaces.Space, n: int) -> None:
        self.space, self.n = space, n
        _, self.size = _layout(space, n, None)
        self.fd = _anonymous_fd(self.size)
        self._region, self.buffers = map_buffers(space, n, self.fd, self.size)

    def close(self) -> None:
        """Close the descriptor and unmap (once no caller holds a view any more)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        self.buffers = None  # type: ignore[assignment]
        try:
            self._region.close()
        except BufferError:
            pass  # the caller still holds views (copy=False); freed with the last of them
