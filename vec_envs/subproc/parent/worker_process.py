"""WorkerProcess: the parent's handle on one worker process (``worker/main.py`` runs in it).

Every command goes through the pipe as a numbered ``Request``; ``recv`` returns the
``Reply`` that carries the number of the last request sent, and drops any other (the
reply of a request given up on after a timeout or a Ctrl-C, or the lanes' messages of a
round given up on), so a stale message is never read as another call's reply. The lanes'
messages (``EnvMessages``) are read with ``read(EnvMessages)``. Waiting for replies, the
parent polls the pipes a while before it sleeps on them (``shared/spin.py``).
"""
from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import signal
import threading
import time
from collections.abc import Iterator, Sequence
from multiprocessing.connection import wait
from typing import Any, TypeVar

from vec_envs.subproc.cloudpickle_wrapper import CloudpickleWrapper
from vec_envs.subproc.shared.messages import NO_REPLY, EnvMessages, PipeCommand, Reply, Request, send_attach
from vec_envs.subproc.shared.spin import WAIT_TIMES, Spin, pipe_poller, spin_until
from vec_envs.subproc.worker.main import worker_main
from vec_envs.workers.protocol import Outcome
from vec_envs.workers.worker import Worker, WorkerDied

__all__ = ["WorkerProcess", "describe_exit"]

CUT_MID_MESSAGE = "lost its pipe: a Ctrl-C cut a message to or from it in half"
M = TypeVar("M", Reply, EnvMessages)


@contextlib.contextmanager
def _sigint_blocked() -> Iterator[None]:
    """Block SIGINT in this thread; children started meanwhile (and a forkserver started
    meanwhile, hence its children) inherit the block until ``worker_main`` ignores it."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


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
    """A worker process stepping envs ``first_index:stop`` in series.

    Example:
        >>> import gymnasium as gym
        >>> from vec_envs.workers.protocol import Command
        >>> w = WorkerProcess(mp.get_context("spawn"), 0, [lambda: gym.make("CartPole-v1")] * 2, 0, 2)
        >>> w.send(Command.GET_SPACES, None); WorkerProcess.wait([w], 60.0) == [w]
        True
        >>> w.recv().value.observation_space.shape
        (4,)
        >>> w.send(Command.CLOSE, None); WorkerProcess.wait([w], 10.0) and w.recv().ok
        True
        >>> w.shutdown(10.0)
    """

    def __init__(self, ctx: mp.context.BaseContext, index: int, env_fns: Sequence[Any],
                 first_index: int, stop: int, spin: bool = False, thrifty: bool = False) -> None:
        super().__init__(index, first_index, stop)
        self.spin = Spin(spin, thrifty)
        self._seq = 0  # the number of the last request sent
        self._awaited = 0  # the number of the request whose reply is due (0: none)
        self.conn, child_conn = ctx.Pipe(duplex=True)
        self._poller = pipe_poller(self.conn)
        self._running = ctx.RawValue("q", 0)  # 1 + the env the worker is calling (0: none)
        use_pdeathsig = threading.current_thread() is threading.main_thread() or ctx.get_start_method() == "forkserver"
        # every context mp.get_context returns has Process; typeshed's BaseContext does not declare it
        self.process = ctx.Process(  # type: ignore[attr-defined]
            target=worker_main, name=f"vec_envs-worker-{index}", daemon=True,
            args=(child_conn, CloudpickleWrapper(list(env_fns)), first_index, use_pdeathsig, spin, self._running,
                  thrifty, os.getpid()),
        )
        with _sigint_blocked():  # a Ctrl-C now must not kill the worker while it starts
            self.process.start()
        child_conn.close()

    @property
    def usable(self) -> bool:
        return not self.conn.closed and not self.broken

    def running_env(self) -> int | None:
        running = int(self._running.value)
        return running - 1 if running > 0 else None

    def send(self, command: int, payload: Any) -> None:
        if self.conn.closed:
            raise WorkerDied("was stopped")
        if self.broken:
            raise WorkerDied(CUT_MID_MESSAGE)
        self._seq = seq = self._seq + 1
        try:
            if command == PipeCommand.ATTACH_SHARED:
                send_attach(self.conn, seq, payload, self.process.pid)
            else:
                self.conn.send(Request(command, seq, payload))
        except (BrokenPipeError, ConnectionResetError, OSError) as exc:
            self.process.join(0.5)
            raise WorkerDied(describe_exit(self.process.exitcode)) from exc
        except BaseException as exc:
            self.broken = not isinstance(exc, Exception)  # a Ctrl-C mid-message (a pickling error sends nothing)
            raise
        if command not in NO_REPLY:
            self._awaited = seq

    def wake(self) -> None:
        """Have the worker look at its lanes (it sleeps without the workers' bell); no reply."""
        self.send(PipeCommand.WAKE, None)

    def recv(self) -> Outcome:
        """The reply to the last request sent (waiting for it); any other message is dropped."""
        return self.read(Reply).outcome

    def read(self, kind: type[M]) -> M:
        """The next message of ``kind`` through the pipe (a ``Reply``: the one to the last
        request), waiting for it; any other is dropped (a request or round given up on).
        WorkerDied if the worker is gone."""
        conn = self.conn
        while True:
            if conn.closed:  # killed by this process: nothing more comes
                raise WorkerDied("was stopped")
            if self.broken:
                raise WorkerDied(CUT_MID_MESSAGE)
            try:
                message = conn.recv()
            except (EOFError, ConnectionResetError, OSError):
                self.process.join(1.0)
                raise WorkerDied(describe_exit(self.process.exitcode)) from None
            except BaseException:  # a Ctrl-C mid-message: the rest of it is still in the pipe
                self.broken = True
                raise
            if type(message) is not kind:
                continue
            if isinstance(message, Reply):
                if message.seq != self._awaited:
                    continue
                self._awaited = 0
            return message

    @classmethod
    def wait(cls, workers: Sequence[WorkerProcess], timeout: float | None) -> list[WorkerProcess]:
        if WAIT_TIMES.enabled:
            return cls._counted_wait(workers, timeout)
        start = time.perf_counter()
        budget = max([w.spin.budget() for w in workers])
        limit = budget if timeout is None else min(budget, timeout)
        if len(workers) == 1:  # the usual case of a round trip: poll the one pipe, building no lists
            ready = list(workers) if spin_until(workers[0].has_message, limit) else []
        else:
            ready = spin_until(lambda: [w for w in workers if w.has_message()], limit)
        if not ready:
            by_handle: dict[Any, WorkerProcess] = {}
            for w in workers:
                by_handle[w.conn] = by_handle[w.process.sentinel] = w
            remaining = None if timeout is None else max(0.0, start + timeout - time.perf_counter())
            ready = list({id(by_handle[h]): by_handle[h] for h in wait(list(by_handle), remaining)}.values())
        waited = time.perf_counter() - start
        for w in ready:
            w.spin.record(waited)
        return ready

    @classmethod
    def _counted_wait(cls, workers: Sequence[WorkerProcess], timeout: float | None) -> list[WorkerProcess]:
        """``wait``, adding its CPU to ``WAIT_TIMES`` (spun: a look at the pipes is polling)."""
        WAIT_TIMES.enabled = False
        cpu = time.thread_time()
        try:
            return cls.wait(workers, timeout)
        finally:
            WAIT_TIMES.enabled = True
            WAIT_TIMES.spun += time.thread_time() - cpu

    def has_message(self) -> bool:
        """Is a message waiting in the pipe?"""
        if self.conn.closed:
            return False
        if self._poller is None:
            return self.conn.poll()
        return bool(self._poller.poll(0))

    def shutdown(self, timeout: float) -> None:
        """Give the process ``timeout`` s to exit (CLOSE was answered), then kill it."""
        if self.conn.closed:
            return
        self.process.join(timeout)
        self.kill()

    def forget(self) -> None:
        mp.process._children.discard(self.process)  # type: ignore[attr-defined]  # see fork_safety
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
