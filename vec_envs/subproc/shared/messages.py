"""What travels through a worker's pipe, both ways: the subprocess transport's wire.

Parent to worker, a ``Request``: a command of the transport-free protocol
(``workers/protocol.py``) or one of this transport's own (``PipeCommand``), the request's
number and its payload. Worker to parent:

- a ``Reply`` to every request but those of ``NO_REPLY``, carrying the request's number:
  a reply whose number is not the one awaited answers a request the parent gave up on
  (a timeout, a Ctrl-C) and is dropped, never read as another call's reply;
- an ``EnvMessages`` for the lanes (``control_block.py``): what the envs answered in a
  serving of their requests had to say (infos, reset infos, failures), in one message for
  every env of that serving that said something, sent before their answers are written.
  Each env's entry carries the number of the request it answers, so the entry of a round
  given up on is recognised the same way. Its fields are lists, an entry per env: they
  pickle in a fraction of the time a list of small objects would.

Example:
    >>> Request(PipeCommand.WAKE, 3, None).command in NO_REPLY
    True
    >>> said = EnvMessages(envs=[2], seqs=[7], infos=[{"lives": 3}], reset_infos=[None], failures=None)
    >>> said.infos[said.envs.index(2)]
    {'lives': 3}
"""
from __future__ import annotations

import enum
from collections.abc import Sequence
from multiprocessing.connection import Connection
from multiprocessing.reduction import recv_handle, send_handle
from typing import Any, NamedTuple

from gymnasium import spaces

from vec_envs.types import Info
from vec_envs.workers.protocol import Outcome, WorkerFailure

__all__ = ["NO_REPLY", "AsyncResetRequest", "AttachSharedRequest", "EnvMessages", "PipeCommand", "Reply", "Request",
           "receive_attach", "send_attach"]


class PipeCommand(enum.IntEnum):
    """The subprocess transport's own commands (numbered after the protocol's ``Command``)."""

    ATTACH_SHARED = 101  # map the shared memory whose descriptors follow the request
    ASYNC_RESET = 102  # reset the slice's envs, each answered in its lane
    WAKE = 103  # new requests in the lanes: look at them (a worker asleep without the bell)


#: the requests that get no ``Reply`` (answered in the lanes, or not at all)
NO_REPLY = frozenset({PipeCommand.ASYNC_RESET, PipeCommand.WAKE})


class Request(NamedTuple):
    """Parent to worker: one command."""

    command: int  # a ``Command`` or a ``PipeCommand``
    seq: int  # the request's number (the worker's ``Reply`` carries it)
    payload: Any


class Reply(NamedTuple):
    """Worker to parent: the outcome of request ``seq``."""

    seq: int
    outcome: Outcome


class EnvMessages(NamedTuple):
    """Worker to parent: what the envs of one serving had to say, an entry per env.

    After a step, an env's ``infos`` entry is its info and its ``reset_infos`` entry the
    info of the reset that followed its episode's end (None: it did not end); after a
    reset, ``infos`` holds the reset info. A failed env's entry is in ``failures`` too
    (its info is empty then).
    """

    envs: list[int]  # global indices
    seqs: list[int]  # the request each answers
    infos: list[Info]
    reset_infos: list[Info | None]
    failures: dict[int, WorkerFailure] | None  # env -> why its call failed


class AsyncResetRequest(NamedTuple):
    """ASYNC_RESET: reset the slice's envs; env k's answer carries ``seqs[k]``."""

    seeds: Sequence[int | None] | None
    seqs: list[int]
    options: Sequence[dict | None] | None = None  # one per env of the slice; None: no options


class AttachSharedRequest(NamedTuple):
    """ATTACH_SHARED: where a worker finds its rows, its lanes and the wake-up fds."""

    space: spaces.Space
    action_space: spaces.Space
    n: int  # envs in the whole batch
    start: int  # the worker's first env
    size: int  # bytes of the region
    worker_index: int  # the worker's row of the control block
    fd: int  # travels by ``send_handle``, after the request
    workers: int = 0  # worker rows of the control block after the buffers; 0: no block
    wake_fd: int | None = None  # the parent's wake fd (``wake.WakeFd``), sent after ``fd``; None: none
    bells: tuple[int, ...] | None = None  # the workers' bell (``wake.WorkerBell``), sent after those; None: none


def send_attach(conn: Connection, seq: int, request: AttachSharedRequest, pid: int) -> None:
    """Send the request through the pipe, then its file descriptors to process ``pid``."""
    bells = None if request.bells is None else (-1,) * len(request.bells)  # the fds follow
    payload = request._replace(fd=-1, wake_fd=None if request.wake_fd is None else -1, bells=bells)
    conn.send(Request(PipeCommand.ATTACH_SHARED, seq, payload))
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
