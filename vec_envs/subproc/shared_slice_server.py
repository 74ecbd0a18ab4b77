"""SharedSliceServer: the slice server of a worker process, stepping into shared memory.

What only the subprocess transport needs, on top of the transport-free protocol: the
``ATTACH_SHARED`` command (map the parent's shared batch buffers, whose file descriptor
follows the request through the pipe) and STEP requests rung on a ``Doorbell``.

Example:
    >>> import gymnasium as gym
    >>> from vec_envs.spaces.shared_memory import SharedBuffers
    >>> from vec_envs.workers.protocol import ResetRequest
    >>> env_fns = [lambda: gym.make("CartPole-v1")] * 2
    >>> shared = SharedBuffers(gym.spaces.Box(-5, 5, (4,)), gym.spaces.Discrete(2), 2, doorbells=1)
    >>> server = SharedSliceServer(env_fns, first_index=0)
    >>> request = AttachSharedRequest(shared.space, shared.action_space, shared.n, 0, shared.size,
    ...                               shared.num_doorbells, 0, shared.fd)
    >>> server.handle(Command.ATTACH_SHARED, request).ok
    True
    >>> server.handle(Command.RESET, ResetRequest(seeds=None)).value.arrays is None  # in shared memory
    True
    >>> shared.actions[:] = [0, 1]
    >>> server.step_for_doorbell() is None        # nothing to say: the parent reads it all
    True
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
from vec_envs.subproc.doorbell import Doorbell
from vec_envs.subproc.env_slots import AsyncResetRequest, WorkerSlots
from vec_envs.subproc.slot_stepping import async_reset, serve_requests
from vec_envs.subproc.wake_up import Waker
from vec_envs.types import EnvFn
from vec_envs.workers.protocol import Command, Outcome, SliceServer

__all__ = ["AttachSharedRequest", "SharedSliceServer", "receive_attach", "send_attach"]


class AttachSharedRequest(NamedTuple):
    """Where a worker finds its rows: the shared region's layout and descriptor."""

    space: spaces.Space
    action_space: spaces.Space
    n: int  # envs in the whole batch
    start: int  # the worker's first env
    size: int  # bytes of the region
    num_doorbells: int
    worker_index: int  # the worker's doorbell row
    fd: int  # travels by ``send_handle``, after the request
    slot_workers: int = 0  # rows of env slots laid out (asynchronous batches), 0: none
    wake_fd: int | None = None  # the parent's wake fd (``wake_up.py``), sent after ``fd``; None: none


def send_attach(conn: Connection, request: AttachSharedRequest, pid: int) -> None:
    """Send the request through the pipe, then its file descriptor to process ``pid``."""
    conn.send((int(Command.ATTACH_SHARED), request._replace(fd=-1, wake_fd=None if request.wake_fd is None else -1)))
    send_handle(conn, request.fd, pid)
    if request.wake_fd is not None:
        send_handle(conn, request.wake_fd, pid)


def receive_attach(conn: Connection, request: AttachSharedRequest) -> AttachSharedRequest:
    """The request completed with the file descriptors that follow it."""
    request = request._replace(fd=recv_handle(conn))
    return request if request.wake_fd is None else request._replace(wake_fd=recv_handle(conn))


class SharedSliceServer(SliceServer):
    """A ``SliceServer`` that can attach to shared memory and answer doorbell steps."""

    HANDLERS: ClassVar[dict[Command, str]] = {**SliceServer.HANDLERS, Command.ATTACH_SHARED: "_attach_shared"}

    def __init__(self, env_fns: Sequence[EnvFn], first_index: int) -> None:
        super().__init__(env_fns, first_index)
        self.doorbell: Doorbell | None = None
        self.slots: WorkerSlots | None = None  # asynchronous batches, when laid out
        self.waker: Waker | None = None  # wakes the parent when it sleeps on answers
        self._region: mmap.mmap | None = None

    def _attach_shared(self, request: AttachSharedRequest) -> None:
        self._region, full, actions, bells, slots = map_region(
            request.space, request.action_space, request.n, request.num_doorbells, request.fd, request.size,
            request.slot_workers)
        stop = request.start + len(self.envs)
        self.attach(full.view(request.start, stop), None if actions is None else actions[request.start:stop])
        self.doorbell = None if bells is None else Doorbell(bells[request.worker_index])
        if slots is not None and actions is not None:
            requested, answered, rows = slots
            self.slots = WorkerSlots(requested, answered, rows[request.worker_index], request.start, stop)
            if request.wake_fd is not None:
                self.waker = Waker(rows, request.worker_index, request.wake_fd)

    def serve_slots(self, conn: Connection) -> int:
        """Step the envs whose requests are new (asynchronous batches); how many."""
        if self.slots is None or self._actions is None:
            return 0
        return serve_requests(conn, self.envs, self.slots, self._actions, self.waker)

    def async_reset(self, conn: Connection, request: AsyncResetRequest) -> None:
        """ASYNC_RESET: reset every env, each answered on its own in the slots."""
        if self.slots is not None:
            async_reset(conn, self.envs, self.slots, request, self.waker)

    def step_for_doorbell(self) -> Outcome | None:
        """Step as the doorbell asked: the outcome to send through the pipe, or None when
        there is nothing to say (no infos, no error: the parent reads it all from memory)."""
        outcome = self.handle(Command.STEP, None)
        return None if outcome.ok and outcome.value.is_empty else outcome
