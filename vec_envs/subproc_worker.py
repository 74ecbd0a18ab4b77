"""SubprocWorker: a worker process talking over a pipe, and the loop it runs."""
from __future__ import annotations

import multiprocessing as mp
import os
import signal
import sys
import threading
from multiprocessing.connection import Connection, wait
from multiprocessing.reduction import recv_handle, send_handle
from typing import Any, Sequence

from vec_envs.cloudpickle_wrapper import CloudpickleWrapper
from vec_envs.worker import Worker, WorkerDied
from vec_envs.worker_protocol import Command, SliceServer

__all__ = ["SubprocWorker", "worker_main"]

PARENT_CHECK_S = 1.0  # how often an idle worker checks that its parent still lives


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


def worker_main(conn: Connection, env_fns: CloudpickleWrapper, first_index: int, use_pdeathsig: bool) -> None:
    """Serve commands until CLOSE, or until the parent is gone."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    parent = os.getppid()
    if use_pdeathsig:
        _die_with_parent()
    server = SliceServer(env_fns.x, first_index)
    try:
        while True:
            while not conn.poll(PARENT_CHECK_S):
                if os.getppid() != parent:
                    return
            command, payload = conn.recv()
            if command == Command.ATTACH_SHARED:
                payload = (*payload, recv_handle(conn))
            conn.send(server.handle(command, payload))
            if command == Command.CLOSE:
                return
    except (EOFError, BrokenPipeError, ConnectionResetError):
        return  # the parent closed its end
    finally:
        server.close_quietly()
        conn.close()


def _describe_exit(code: int | None) -> str:
    if code is None:
        return "is unresponsive"
    if code < 0:
        try:
            return f"was killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


class SubprocWorker(Worker):
    """A worker process stepping envs ``first_index:stop`` in series.

    Example:
        >>> w = SubprocWorker(mp.get_context("spawn"), 0, env_fns, 0, 4)   # doctest: +SKIP
        >>> w.send(Command.GET_SPACES, None); w.recv()
    """

    def __init__(self, ctx: mp.context.BaseContext, index: int, env_fns: Sequence[Any],
                 first_index: int, stop: int) -> None:
        super().__init__(index, first_index, stop)
        self.conn, child_conn = ctx.Pipe(duplex=True)
        use_pdeathsig = threading.current_thread() is threading.main_thread() or ctx.get_start_method() == "forkserver"
        self.process = ctx.Process(
            target=worker_main, name=f"vec_envs-worker-{index}", daemon=True,
            args=(child_conn, CloudpickleWrapper(list(env_fns)), first_index, use_pdeathsig),
        )
        self.process.start()
        child_conn.close()

    def send(self, command: Command, payload: Any) -> None:
        if self.conn.closed:
            raise WorkerDied("was stopped")
        try:
            if command == Command.ATTACH_SHARED:
                *rest, fd = payload
                self.conn.send((command, tuple(rest)))
                send_handle(self.conn, fd, self.process.pid)
            else:
                self.conn.send((command, payload))
        except (BrokenPipeError, ConnectionResetError, OSError) as exc:
            self.process.join(0.5)
            raise WorkerDied(_describe_exit(self.process.exitcode)) from exc

    def recv(self) -> tuple[bool, Any]:
        try:
            if self.conn.poll():
                return self.conn.recv()
        except (EOFError, ConnectionResetError, OSError):
            pass
        self.process.join(1.0)
        raise WorkerDied(_describe_exit(self.process.exitcode))

    @classmethod
    def wait(cls, workers: Sequence["SubprocWorker"], timeout: float | None) -> list["SubprocWorker"]:
        ready = [w for w in workers if w.conn.poll()]
        if ready:
            return ready
        by_handle = {}
        for w in workers:
            by_handle[w.conn] = w
            by_handle[w.process.sentinel] = w
        return list({id(by_handle[h]): by_handle[h] for h in wait(list(by_handle), timeout)}.values())

    def shutdown(self, timeout: float) -> None:
        if self.conn.closed:
            return
        self.process.join(timeout)
        if self.process.is_alive():
            self.process.terminate()
            self.process.join(1.0)
        self.kill()

    def kill(self) -> None:
        if self.conn.closed:
            return
        if self.process.is_alive():
            self.process.kill()
        self.process.join(5.0)
        self.conn.close()
        if self.process.exitcode is not None:
            self.process.close()  # release the sentinel's file descriptor
