"""The loop a worker process runs: wait for work, serve it, until CLOSE or the parent is gone.

Work comes two ways: requests through the pipe (every command; ``shared/messages.py``),
and requests in the env lanes of shared memory (``shared/control_block.py``). The worker
spins a while looking at both (``shared/spin.py``), then says in its row that it sleeps
and sleeps on its pipe and on the workers' bell: the parent rings the bell once for every
sleeping worker (``shared/wake.py``), or, without one, sends it a WAKE through its pipe.
Asleep, it wakes only for the pipe or the bell, or every ``PARENT_CHECK_S`` to see
whether its parent still lives. ``serving.py`` answers what woke it.
"""
from __future__ import annotations

import multiprocessing as mp
import os
import select
import signal
import sys
import time
from multiprocessing.connection import Connection
from typing import Any

from vec_envs.subproc.cloudpickle_wrapper import CloudpickleWrapper
from vec_envs.subproc.shared.spin import WAIT_TIMES, Spin, pipe_poller, spin_until
from vec_envs.subproc.worker.lanes import WorkerLanes
from vec_envs.subproc.worker.parent_watch import watch_parent
from vec_envs.subproc.worker.serving import ProcessSliceServer
from vec_envs.workers.protocol import Command

__all__ = ["PARENT_CHECK_S", "allow_children", "worker_main"]

PARENT_CHECK_S = 1.0  # how often a sleeping worker checks that its parent still lives
_PIPE, _LANES, _PARENT_GONE = 1, 2, 3  # what woke the worker (never 0: spin_until takes each as found)


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
    allow_children()
    server = ProcessSliceServer(env_fns.x, first_index, conn)
    if running is not None and server.slice is not None:
        server.slice.track_running(memoryview(running).cast("B").cast("q"))
    poller, spinner, sleeper = pipe_poller(conn), Spin(spin, thrifty), Sleeper(conn)
    try:
        while True:
            event = _wait_for_work(conn, poller, spinner, parent, server.lanes, sleeper.bells(server.bells))
            if event == _PARENT_GONE:
                return
            if event == _LANES:
                server.serve_lanes()
            elif server.serve_command() == Command.CLOSE:
                return
    except (EOFError, BrokenPipeError, ConnectionResetError):
        return  # the parent closed its end
    finally:
        server.close_quietly()
        conn.close()


def allow_children() -> None:
    """Let this worker's envs start processes of their own (an env that is itself a
    SubprocVecEnv): multiprocessing refuses children to a daemonic process, and a worker
    is daemonic only so that the parent's interpreter ends it at exit. Seen from here it
    need not be: its children are daemonic in their turn, end with it when it exits, and
    watch it (``parent_watch``) should it be killed."""
    mp.current_process().daemon = False


def _wait_for_work(conn: Connection, poller: Any, spin: Spin, parent: int, lanes: WorkerLanes | None,
                   bells: Sleeper) -> int:
    """Spin, then sleep on the pipe, until envs have new requests (_LANES), a command
    comes (_PIPE), or the parent is gone (_PARENT_GONE)."""
    def event() -> int:  # one look at everything: each spin turn costs this
        if lanes is not None and lanes.has_requests():
            return _LANES
        return _PIPE if poller is None or poller.poll(0) else 0

    times = WAIT_TIMES
    if times.enabled:
        return _counted_wait(event, spin, parent, lanes, bells)
    if not spin.enabled:  # nothing to learn: sleep (after a last look at the lanes)
        return _sleep_until_work(parent, lanes, bells)
    start = time.perf_counter()
    found = spin_until(event, spin.budget()) or _sleep_until_work(parent, lanes, bells)
    spin.record(time.perf_counter() - start)
    return found


def _counted_wait(event: Any, spin: Spin, parent: int, lanes: WorkerLanes | None, bells: Sleeper) -> int:
    """``_wait_for_work``, adding its CPU to ``WAIT_TIMES``: the spin's and the sleep's."""
    start, cpu = time.perf_counter(), time.thread_time()
    found = spin_until(event, spin.budget())
    slept = time.thread_time()
    WAIT_TIMES.spun += slept - cpu
    if not found:
        found = _sleep_until_work(parent, lanes, bells)
        WAIT_TIMES.slept += time.thread_time() - slept
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
