"""The loop a worker process runs: wait for work, serve it, until CLOSE or the parent is gone.

Work comes two ways: commands through the pipe (every command; ``protocol.py``), and
requests in the env lanes of shared memory (``control.py``). The worker spins a while
looking at both (``spin_wait.py``), then says in its row that it sleeps and sleeps on its
pipe and on the workers' bell: the parent rings the bell once for every sleeping worker
(``wake_up.WorkerBell``), or, without one, wakes it with a WAKE message. Nothing in flight, it naps on
nothing: it wakes only for the pipe, or every ``PARENT_CHECK_S`` to see whether its
parent still lives.
"""
from __future__ import annotations

import os
import pickle
import select
import signal
import sys
import time
from collections.abc import Iterable
from multiprocessing.connection import Connection
from typing import Any

from vec_envs.subproc.cloudpickle_wrapper import CloudpickleWrapper
from vec_envs.subproc.control import WorkerLanes
from vec_envs.subproc.lane_serving import serve_requests
from vec_envs.subproc.parent_watch import watch_parent
from vec_envs.subproc.shared_slice_server import SharedSliceServer, receive_attach
from vec_envs.subproc.spin_wait import Spin, spin_until
from vec_envs.subproc.unpicklable import unpicklable_reply
from vec_envs.workers.protocol import NO_REPLY, Command, Outcome, ResetReply, StepReply, WorkerFailure

__all__ = ["PARENT_CHECK_S", "pipe_poller", "worker_main"]

PARENT_CHECK_S = 1.0  # how often a sleeping worker checks that its parent still lives
_PIPE, _LANES, _PARENT_GONE = 1, 2, 3  # what woke the worker (never 0: spin_until takes each as found)


def pipe_poller(conn: Connection) -> Any:
    """A reusable ``select.poll`` on ``conn`` (~1 us a look, where ``conn.poll()`` takes ~8)."""
    if not hasattr(select, "poll"):
        return None
    poller = select.poll()
    poller.register(conn.fileno(), select.POLLIN)
    return poller


def worker_main(conn: Connection, env_fns: CloudpickleWrapper, first_index: int, use_pdeathsig: bool,
                spin: bool = False, running: Any = None, thrifty: bool = False, parent_pid: int = 0) -> None:
    """Serve commands and lane requests until CLOSE, or until the parent (``parent_pid``,
    the VecEnv's process) is gone; keep ``running`` (a shared int) at 1 + the env being
    called, so the parent can name it should this process die."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # blocked since start()
    parent = os.getppid()
    if use_pdeathsig:
        _die_with_parent()
    watch_parent(parent_pid or parent)  # whatever the start method, even inside env.step
    server = SharedSliceServer(env_fns.x, first_index)
    if running is not None and server.slice is not None:
        server.slice.track_running(memoryview(running).cast("B").cast("q"))
    poller, spinner, sleeper = pipe_poller(conn), Spin(spin, thrifty), Sleeper(conn)
    try:
        while True:
            event = _wait_for_work(conn, poller, spinner, parent, server.lanes, sleeper.bells(server.bells))
            if event == _PARENT_GONE:
                return
            if event == _LANES and server.lanes is not None:
                serve_requests(conn, server, server.lanes)
            elif _serve_pipe_command(conn, server) == Command.CLOSE:
                return
    except (EOFError, BrokenPipeError, ConnectionResetError):
        return  # the parent closed its end
    finally:
        server.close_quietly()
        conn.close()


def _wait_for_work(conn: Connection, poller: Any, spin: Spin, parent: int, lanes: WorkerLanes | None,
                   bells: Sleeper) -> int:
    """Spin, then sleep on the pipe, until envs have new requests (_LANES), a command
    comes (_PIPE), or the parent is gone (_PARENT_GONE)."""
    def event() -> int:  # one look at everything, ~1 us: each spin turn costs this
        if lanes is not None and lanes.has_requests():
            return _LANES
        return _PIPE if poller is None or poller.poll(0) else 0

    if not spin.enabled:  # nothing to learn: sleep (after a last look at the lanes)
        return _sleep_until_work(parent, lanes, bells)
    start = time.perf_counter()
    found = spin_until(event, spin.budget()) or _sleep_until_work(parent, lanes, bells)
    spin.record(time.perf_counter() - start)
    return found


class Sleeper:
    """Where a worker sleeps: its pipe alone, or its pipe and the workers' bell of the next
    ring (``wake_up.WorkerBell``), with one reusable ``select.poll`` per bell."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self._fds: tuple[int, ...] | None = None
        self._pollers: list[Any] = []

    def bells(self, fds: tuple[int, ...] | None) -> Sleeper:
        """Sleep on these bells from now on (the attach sends them after the first commands)."""
        if fds != self._fds:
            self._fds, self._pollers = fds, [_poller(self.conn, fd) for fd in fds or ()]
        return self

    def next_ring(self, lanes: WorkerLanes | None) -> Any:
        """The poller on the pipe and the bell the next ring will ring (None: the pipe
        alone). Read before the last look at the lanes: a ring after that look rings it."""
        if lanes is None or not self._pollers:
            return None
        return self._pollers[(lanes.rings() + 1) % len(self._pollers)]

    def sleep(self, poller: Any, seconds: float) -> int:
        """Sleep on ``poller`` (``next_ring``) until a command waits in the pipe (_PIPE),
        its bell rings (_LANES) or ``seconds`` pass (0)."""
        if poller is None:
            return _PIPE if self.conn.poll(seconds) else 0
        woken = 0
        for fd, _ in poller.poll(int(seconds * 1000)):
            if fd == self.conn.fileno():
                return _PIPE
            woken = _LANES
        return woken


def _poller(conn: Connection, bell: int) -> Any:
    poller = select.poll()
    poller.register(conn.fileno(), select.POLLIN)
    poller.register(bell, select.POLLIN)
    return poller


def _sleep_until_work(parent: int, lanes: WorkerLanes | None, sleeper: Sleeper) -> int:
    """Say so in the row, look at the lanes once more, then sleep on the pipe and the bell
    of the next ring (a ring or a WAKE ends it; a command already in the pipe, at once)."""
    if lanes is not None:
        lanes.set_sleeping(True)
    try:
        while True:
            poller = sleeper.next_ring(lanes)
            if lanes is not None and lanes.has_requests():  # after reading the rings: a request rung already is seen
                return _LANES
            woken = sleeper.sleep(poller, PARENT_CHECK_S)
            if woken == _PIPE:
                return _PIPE
            if not woken and os.getppid() != parent:
                return _PARENT_GONE
    finally:
        if lanes is not None:
            lanes.set_sleeping(False)


def _serve_pipe_command(conn: Connection, server: SharedSliceServer) -> int:
    """Read and answer the command waiting in the pipe; returns it."""
    command, payload = conn.recv()
    if command in NO_REPLY:
        if command == Command.ASYNC_RESET:
            server.async_reset(conn, payload)
        return int(command)
    if command == Command.ATTACH_SHARED:
        payload = receive_attach(conn, payload)
    _reply(conn, server.handle(command, payload), command, server.first_index)
    return int(command)


def _die_with_parent() -> None:
    """Ask Linux to SIGKILL this process when its parent dies (best effort)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _reply(conn: Connection, outcome: Outcome, command: int, first_index: int) -> None:
    """Send the outcome; a reply that cannot be pickled becomes a failure naming why."""
    try:
        conn.send(outcome)
    except (pickle.PicklingError, TypeError, AttributeError) as exc:
        conn.send(Outcome(False, _unpicklable(outcome.value, Command(command).name.lower(), first_index, exc)))


def _unpicklable(reply: Any, method: str, first_index: int, exc: Exception) -> WorkerFailure:
    """Why ``reply`` cannot be pickled: the first env info that cannot, naming the env."""
    infos = ((what, source, first_index + k, info) for what, source, pairs in _infos_of(reply) for k, info in pairs)
    return unpicklable_reply(method, infos, f"the result of {method}()", None, exc)


def _infos_of(reply: Any) -> list[tuple[str, str, Iterable[tuple[int, Any]]]]:
    """The per-env infos a reply carries: (what, the env method, (k, info) pairs)."""
    if isinstance(reply, StepReply):
        return [("info", "step", reply.infos.items()), ("reset info", "reset", reply.reset_infos.items())]
    if isinstance(reply, ResetReply):
        return [("reset info", "reset", enumerate(reply.infos))]
    return []
