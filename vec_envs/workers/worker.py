"""Worker: the parent's handle on one slice of envs, whatever the transport; LocalWorker, the
slice the parent steps itself; and the round trips with a group of workers.

A transport (a worker process, a Ray actor) fills in how requests travel and how workers are
waited for, stopped and killed. Each request gets one ``Reply`` (``wire.py``), read with ``recv`` once
``wait`` names the worker. ``replies`` collects a group's (the parent's slice first, while the others
work); ``drain`` those of requests given up on, killing the workers still busy.
"""
from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from contextlib import suppress
from typing import TYPE_CHECKING, Any

from vec_envs.types import EnvFn
from vec_envs.workers.env_slice import EnvSlice
from vec_envs.workers.wire import Command, Reply, WorkerFailure, serve

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = ["DRAIN_TIMEOUT_S", "LocalWorker", "Worker", "WorkerDied", "drain", "replies"]

#: work given up on (a timeout, a Ctrl-C) finishes within this, all workers together, or they are killed
DRAIN_TIMEOUT_S = 1.0


class WorkerDied(Exception):
    """The worker is gone; ``reason`` says how (exit code, signal, lost node)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Worker(ABC):
    """One endpoint serving envs ``first_index:stop`` (see the module)."""

    is_local = False  #: the parent's own slice
    broken = False  #: a Ctrl-C cut a message to or from it in half: it can only be killed

    def __init__(self, index: int, first_index: int, stop: int) -> None:
        self.index, self.first_index, self.stop = index, first_index, stop

    @property
    def env_indices(self) -> list[int]:
        return list(range(self.first_index, self.stop))

    @property
    def usable(self) -> bool:
        """False once killed or broken: the VecEnv replaces it at its next reset."""
        return not self.broken

    @property
    @abstractmethod
    def awaiting(self) -> bool:
        """Is the reply of a request due?"""

    @abstractmethod
    def send(self, command: int, payload: Any) -> None:
        """Send one request (``WorkerDied`` if the worker is gone)."""

    @abstractmethod
    def recv(self) -> Reply:
        """The reply of the last request (``WorkerDied`` if the worker is gone)."""

    @classmethod
    @abstractmethod
    def wait(cls, workers: Sequence[Self], timeout: float | None) -> list[Self]:
        """Until some of ``workers`` have their reply or died; [] after ``timeout``."""

    @abstractmethod
    def shutdown(self, timeout: float) -> None:
        """Let the worker end (its CLOSE was answered): ``timeout`` s, then kill it."""

    @abstractmethod
    def kill(self) -> None:
        """End the worker now."""

    def running_env(self) -> int | None:
        """The env whose call the worker is running (global index), where the transport knows."""
        return None

    def forget(self) -> None:
        """In a forked child: drop the worker without touching it (it is the parent's)."""
        return None


class LocalWorker(Worker):
    """A slice the parent steps itself, each request when its reply is read (while the workers
    step theirs). An env hanging here cannot be interrupted by a timeout."""

    is_local = True

    def __init__(self, index: int, env_fns: Sequence[EnvFn], first_index: int, stop: int,
                 deferred: bool = False, pending: bool = False) -> None:
        super().__init__(index, first_index, stop)
        self.shared = False  # its rows are the parent's buffers
        self.lanes: Any = None  # the transport's own handle on the slice (the subprocess transport's lanes)
        self.failure: WorkerFailure | None = None
        self.envs: EnvSlice | None = None
        try:
            self.envs = EnvSlice(env_fns, first_index, deferred, pending)
        except Exception as exc:  # reported on the first request, as a worker process would
            self.failure = WorkerFailure.of(exc, "__init__")
        self._request: tuple[int, Any] | None = None

    @property
    def usable(self) -> bool:
        return self.envs is not None or self.failure is not None

    @property
    def awaiting(self) -> bool:
        return self._request is not None

    def send(self, command: int, payload: Any) -> None:
        self._request = (command, payload)

    def recv(self) -> Reply:
        if self._request is None:
            raise RuntimeError(f"LocalWorker {self.index}: recv() without a request")
        (command, payload), self._request = self._request, None
        if self.envs is None:
            if command == Command.CLOSE:
                return Reply(0, True, None)
            return Reply(0, False, self.failure or WorkerFailure(None, "handle", "its envs are closed", ""))
        try:
            return Reply(0, True, serve(self.envs, command, payload, self.shared))
        except Exception as exc:
            return Reply(0, False, WorkerFailure.of(exc, "handle"))

    @classmethod
    def wait(cls, workers: Sequence[LocalWorker], timeout: float | None) -> list[LocalWorker]:
        return list(workers)

    def cancel(self) -> None:
        """Drop the request not run yet (given up on)."""
        self._request = None

    def shutdown(self, timeout: float) -> None:
        self.kill()

    def kill(self) -> None:
        """Close the envs (quietly: nobody waits for their errors now); drop a request not run."""
        self._request = None
        envs, self.envs = self.envs, None
        if envs is not None:
            with suppress(Exception):  # the envs are dropped whatever their close() raises
                envs.close()


def replies(workers: Sequence[Worker], deadline: float | None, first: bool = False) -> dict[int, Reply | WorkerDied]:
    """The replies of ``workers`` (the parent's slice first) by ``deadline``; with ``first``, only the first."""
    got: dict[int, Reply | WorkerDied] = {worker.index: _recv(worker) for worker in workers if worker.is_local}
    remote = [worker for worker in workers if not worker.is_local]
    while remote and not (first and got):
        remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
        ready = type(remote[0]).wait(remote, remaining)
        if not ready and remaining is not None and time.monotonic() >= deadline:  # type: ignore[operator]
            break
        for worker in ready:
            got[worker.index] = _recv(worker)
        remote = [worker for worker in remote if worker not in ready]
    return got


def _recv(worker: Worker) -> Reply | WorkerDied:
    try:
        return worker.recv()
    except WorkerDied as died:
        return died


def drain(workers: Sequence[Worker], deadline: float) -> list[int]:
    """Let busy workers answer the requests given up on by ``deadline`` (the parent's slice
    drops its own); kill the others and those a Ctrl-C cut off. The indices of those killed."""
    busy = [w for w in workers if w.awaiting and not w.is_local and not w.broken]
    for worker in workers:
        if isinstance(worker, LocalWorker):
            worker.cancel()
    answered = replies(busy, deadline)
    killed = [w for w in workers if w.broken or w in busy and w.index not in answered]
    for worker in killed:
        worker.kill()
    return [w.index for w in killed]
