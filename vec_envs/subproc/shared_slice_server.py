"""SharedSliceServer: the slice server of a worker process, stepping into shared memory.

What only the subprocess transport needs, on top of the transport-free protocol: the
``ATTACH_SHARED`` command (map the parent's shared batch buffers, whose file descriptor
follows the request through the pipe) and the requests of its env lanes (``control.py``).

Example:
    >>> import gymnasium as gym
    >>> from vec_envs.spaces.shared_memory import SharedBuffers
    >>> from vec_envs.subproc.control import ControlBlock, ParentLanes
    >>> from vec_envs.workers.protocol import ResetRequest
    >>> env_fns = [lambda: gym.make("CartPole-v1")] * 2
    >>> shared = SharedBuffers(gym.spaces.Box(-5, 5, (4,)), gym.spaces.Discrete(2), 2, ControlBlock.words(2, 1))
    >>> server = SharedSliceServer(env_fns, first_index=0)
    >>> request = AttachSharedRequest(shared.space, shared.action_space, 2, 0, shared.size, 0, shared.fd, workers=1)
    >>> server.handle(Command.ATTACH_SHARED, request).ok
    True
    >>> server.handle(Command.RESET, ResetRequest(seeds=None)).value.arrays is None  # in shared memory
    True
    >>> shared.actions[:] = [0, 1]
    >>> parent = ParentLanes(ControlBlock(shared.control, 2, 1))
    >>> seq = parent.request(slice(0, 2))
    >>> server.serve_lanes(None), parent.finished(slice(0, 2)).tolist()   # nothing to say: no message
    (2, [True, True])
    >>> server.handle(Command.CLOSE, None).ok
    True
    >>> shared.close()
"""
from __future__ import annotations

import mmap
from collections.abc import Sequence
from multiprocessing.connection import Connection
from multiprocessing.reduction import recv_handle, send_handle
from typing import ClassVar, NamedTuple

from gymnasium import spaces

from vec_envs.spaces.shared_memory import map_region
from vec_envs.subproc.control import ControlBlock, WorkerLanes
from vec_envs.subproc.lane_serving import AsyncResetRequest, async_reset, serve_requests
from vec_envs.subproc.wake_up import Waker
from vec_envs.types import EnvFn
from vec_envs.workers.protocol import Command
from vec_envs.workers.slice_server import SliceServer

__all__ = ["AttachSharedRequest", "SharedSliceServer", "receive_attach", "send_attach"]


class AttachSharedRequest(NamedTuple):
    """Where a worker finds its rows: the shared region's layout and descriptor."""

    space: spaces.Space
    action_space: spaces.Space
    n: int  # envs in the whole batch
    start: int  # the worker's first env
    size: int  # bytes of the region
    worker_index: int  # the worker's row of the control block
    fd: int  # travels by ``send_handle``, after the request
    workers: int = 0  # worker rows of the control block after the buffers (``control.py``); 0: no block
    wake_fd: int | None = None  # the parent's wake fd (``wake_up.py``), sent after ``fd``; None: none
    bells: tuple[int, ...] | None = None  # the workers' bell (``wake_up.WorkerBell``), sent after those; None: none


def send_attach(conn: Connection, request: AttachSharedRequest, pid: int) -> None:
    """Send the request through the pipe, then its file descriptor to process ``pid``."""
    bells = None if request.bells is None else (-1,) * len(request.bells)  # the fds follow
    conn.send((int(Command.ATTACH_SHARED),
               request._replace(fd=-1, wake_fd=None if request.wake_fd is None else -1, bells=bells)))
    send_handle(conn, request.fd, pid)
    for fd in (request.wake_fd, *(request.bells or ())):
        if fd is not None:
            send_handle(conn, fd, pid)


def receive_attach(conn: Connection, request: AttachSharedRequest) -> AttachSharedRequest:
    """The request completed with the file descriptors that follow it."""
    request = request._replace(fd=recv_handle(conn))
    if request.wake_fd is not None:
        request = request._replace(wake_fd=recv_handle(conn))
    return request if request.bells is None else request._replace(bells=tuple(recv_handle(conn) for _ in request.bells))


class SharedSliceServer(SliceServer):
    """A ``SliceServer`` that can attach to shared memory and answer its env lanes."""

    HANDLERS: ClassVar[dict[Command, str]] = {**SliceServer.HANDLERS, Command.ATTACH_SHARED: "_attach_shared"}

    def __init__(self, env_fns: Sequence[EnvFn], first_index: int) -> None:
        super().__init__(env_fns, first_index)
        self.lanes: WorkerLanes | None = None  # when the actions and the control block are shared
        self._region: mmap.mmap | None = None
        self.bells: tuple[int, ...] | None = None  # the workers' bell (``wake_up.WorkerBell``), polled asleep

    def _attach_shared(self, request: AttachSharedRequest) -> None:
        words = ControlBlock.words(request.n, request.workers) if request.workers else 0
        self._region, full, actions, control = map_region(
            request.space, request.action_space, request.n, request.fd, request.size, words)
        stop = request.start + len(self.envs)
        self.attach(full.view(request.start, stop), None if actions is None else actions[request.start:stop])
        if control is not None and actions is not None:
            block = ControlBlock(control, request.n, request.workers)
            waker = None if request.wake_fd is None else Waker(block, request.wake_fd).answered
            self.lanes = WorkerLanes(block, request.worker_index, request.start, stop, waker)
            self.bells = request.bells

    def serve_lanes(self, conn: Connection | None) -> int:
        """Step the envs whose requests are new, answering in their lanes; how many."""
        if self.lanes is None:
            return 0
        return serve_requests(conn, self, self.lanes)

    def async_reset(self, conn: Connection, request: AsyncResetRequest) -> None:
        """ASYNC_RESET: reset every env, each answered on its own in its lane."""
        if self.lanes is not None:
            async_reset(conn, self.envs, self.lanes, request)
