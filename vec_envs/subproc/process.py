"""WorkerProcess: the parent's side of the pipe to one worker process (``child.py`` runs in it).

Requests are numbered (``wire.Request``): ``recv`` returns the ``Reply`` to the last one sent,
dropping older ones; ``read_answers`` reads the lanes' messages. A worker's end is seen on its
sentinel, never by its pipe closing (an env's fork could hold it).
"""
from __future__ import annotations

import multiprocessing as mp
import os
import signal
import threading
import time
from collections.abc import Sequence
from multiprocessing.connection import wait
from typing import Any, TypeVar

from vec_envs.subproc.child import send_attach, worker_main
from vec_envs.subproc.cloudpickle_wrapper import CloudpickleWrapper
from vec_envs.subproc.doorbell import Spin, poller, spin_until
from vec_envs.workers.wire import Answers, Command, Reply, Request
from vec_envs.workers.worker import Worker, WorkerDied

__all__ = ["WorkerProcess", "describe_exit"]

CUT_MID_MESSAGE = "lost its pipe: a Ctrl-C cut a message to or from it in half"
M = TypeVar("M", Reply, Answers)


def describe_exit(code: int | None) -> str:
    """How a worker process ended, from its exit code (None: still running)."""
    if code is None:
        return "is unresponsive"
    if code < 0:
        try:
            return f"was killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


class WorkerProcess(Worker):
    """A worker process stepping envs ``first_index:stop`` in series."""

    def __init__(self, ctx: mp.context.BaseContext, index: int, env_fns: Sequence[Any], first_index: int, stop: int,
                 deferred: bool = False, pending: bool = False, spin: bool = False, thrifty: bool = False) -> None:
        super().__init__(index, first_index, stop)
        self.spin = Spin(spin, thrifty)
        self._seq = 0  # the number of the last request sent
        self._awaited = 0  # the number of the request whose reply is due (0: none)
        self._stash: list[Answers] = []  # lanes' messages that came while a reply was awaited
        self.conn, child_conn = ctx.Pipe(duplex=True)
        self._poller = poller(self.conn.fileno())  # a look at the pipe far cheaper than conn.poll()
        self._running = ctx.RawValue("q", 0)  # 1 + the env the worker is calling (0: none)
        pdeathsig = threading.current_thread() is threading.main_thread() or ctx.get_start_method() == "forkserver"
        self.process = ctx.Process(  # type: ignore[attr-defined]
            target=worker_main, name=f"vec_envs-worker-{index}", daemon=True,
            args=(child_conn, CloudpickleWrapper(list(env_fns)), first_index, deferred, pending, pdeathsig, spin,
                  self._running, thrifty, os.getpid()))
        # a Ctrl-C must not kill the worker as it starts: SIGINT blocked in this thread, its children (and a
        # forkserver) started meanwhile inherit the block until ``worker_main`` ignores it
        blocks = hasattr(signal, "pthread_sigmask")
        previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT}) if blocks else None
        try:
            self.process.start()
        finally:
            if previous is not None:
                signal.pthread_sigmask(signal.SIG_SETMASK, previous)
        child_conn.close()

    @property
    def usable(self) -> bool:
        return not self.conn.closed and not self.broken

    @property
    def awaiting(self) -> bool:
        return self._awaited != 0

    def running_env(self) -> int | None:
        running = int(self._running.value)
        return running - 1 if running > 0 else None

    def send(self, command: int, payload: Any) -> None:
        if self.conn.closed or self.broken:
            raise WorkerDied("was stopped" if self.conn.closed else CUT_MID_MESSAGE)
        self._seq = seq = self._seq + 1
        try:
            if command == Command.ATTACH:
                send_attach(self.conn, seq, payload, self.process.pid)
            else:
                self.conn.send(Request(command, seq, payload))
        except (BrokenPipeError, ConnectionResetError, OSError) as exc:
            self.process.join(0.5)
            raise WorkerDied(describe_exit(self.process.exitcode)) from exc
        except BaseException as exc:
            self.broken = not isinstance(exc, Exception)  # a Ctrl-C mid-message (a pickling error sends nothing)
            raise
        if command != Command.WAKE and not (command == Command.RESET and payload.seqs is not None):
            self._awaited = seq  # (WAKE and a RESET through the lanes are answered there)

    def recv(self) -> Reply:
        """The reply of the last request sent (lanes' messages before it kept for ``read_answers``)."""
        return self._read(Reply)

    def read_answers(self) -> Answers:
        """The next lanes' message (announced by an answer's message bit)."""
        return self._stash.pop(0) if self._stash else self._read(Answers)

    def _read(self, kind: type[M]) -> M:
        conn = self.conn
        while True:
            if conn.closed or self.broken:  # closed: killed by this process, nothing more comes
                raise WorkerDied("was stopped" if conn.closed else CUT_MID_MESSAGE)
            if (not self._poller.poll(0) and not (kind is Answers and spin_until(self.has_message, self.spin.budget))
                    and conn not in wait([conn, self.process.sentinel])):  # (an answer's message is on its way)
                self.process.join(1.0)  # ended with nothing left to read
                raise WorkerDied(describe_exit(self.process.exitcode))
            try:
                message = conn.recv()
            except (EOFError, ConnectionResetError, OSError):
                self.process.join(1.0)
                raise WorkerDied(describe_exit(self.process.exitcode)) from None
            except BaseException:  # a Ctrl-C mid-message: the rest of it is still in the pipe
                self.broken = True
                raise
            if type(message) is Answers and kind is Reply:
                self._stash.append(message)
            elif type(message) is kind and (kind is not Reply or message.seq == self._awaited):  # type: ignore[attr-defined]
                if kind is Reply:
                    self._awaited = 0
                return message

    def drop_messages(self) -> None:
        """Drop the lanes' messages waiting, unless a reply is due (then they are read in turn)."""
        self._stash.clear()
        while not self.awaiting and self.usable and self.has_message():
            try:
                self.conn.recv()
            except (EOFError, ConnectionResetError, OSError):
                return

    def has_message(self) -> bool:
        return not self.conn.closed and bool(self._poller.poll(0))

    @classmethod
    def wait(cls, workers: Sequence[WorkerProcess], timeout: float | None) -> list[WorkerProcess]:
        """Spin on the pipes a while, then sleep on them and on the processes' sentinels."""
        start = time.perf_counter()
        budget = max(w.spin.budget for w in workers)
        limit = budget if timeout is None else min(budget, timeout)
        if len(workers) == 1:  # a round trip: poll the one pipe, building no lists
            ready = list(workers) if spin_until(workers[0].has_message, limit) else []
        else:
            ready = spin_until(lambda: [w for w in workers if w.has_message()], limit)
        if not ready:
            ready = [w for w in workers if w.conn.closed]
            by_handle = {h: w for w in workers if not w.conn.closed for h in (w.conn, w.process.sentinel)}
            remaining = None if timeout is None else max(0.0, start + timeout - time.perf_counter())
            if not ready:
                ready = list({id(by_handle[h]): by_handle[h] for h in wait(list(by_handle), remaining)}.values())
        waited = time.perf_counter() - start
        for w in ready:
            w.spin.record(waited)
        return ready

    def shutdown(self, timeout: float) -> None:
        """Give the process ``timeout`` s to exit (its CLOSE was answered), then kill it."""
        if not self.conn.closed:
            self.process.join(timeout)
            self.kill()

    def forget(self) -> None:
        mp.process._children.discard(self.process)  # type: ignore[attr-defined]  # (multiprocessing's exit handler)
        self.conn.close()  # this process's copy of the pipe only

    def kill(self) -> None:
        if self.conn.closed:
            return
        if self.process.is_alive():
            self.process.kill()
        self.process.join(5.0)
        self.conn.close()
        if self.process.exitcode is not None:
            self.process.close()  # release the sentinel's file descriptor

