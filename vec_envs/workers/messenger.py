"""Messenger: the parent's round trips with its workers, whatever the transport.

It sends commands, collects their outcomes (the parent's own slice first, then whichever
worker answers next), gives up after a timeout, drains the late reply of a command the
caller gave up on, and turns a worker's failure or death into one ``EnvWorkerError``.

Example:
    >>> import gymnasium as gym
    >>> from vec_envs.workers.local_worker import LocalWorker
    >>> from vec_envs.workers.protocol import GetAttrRequest, SpacesReply
    >>> workers = [LocalWorker(0, [lambda: gym.make("CartPole-v1")] * 2, 0, 2)]
    >>> messenger = Messenger("Example", workers, LocalWorker)
    >>> messenger.round_trip(0, Command.GET_SPACES, None, None, "__init__", SpacesReply).observation_space.shape
    (4,)
    >>> messenger.round_trip(0, Command.GET_ATTR, GetAttrRequest("nope", [1]), None, "get_attr", list)
    Traceback (most recent call last):
    ...
    vec_envs.errors.EnvWorkerError: env 1 (worker 0) raised in get_attr(): AttributeError: ...
    <BLANKLINE>
    ...
    >>> messenger.broadcast(Command.CLOSE, "close", None, type(None))
    [None]
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from vec_envs.errors import EnvTimeoutError, EnvWorkerError
from vec_envs.workers.protocol import Command, Outcome, R, WorkerFailure, reply_as
from vec_envs.workers.worker import Worker, WorkerDied

__all__ = ["DRAIN_TIMEOUT_S", "Messenger"]

#: work given up on (a timeout, a Ctrl-C, a failed recv) finishes within this, all workers
#: together, or its workers are killed
DRAIN_TIMEOUT_S = 1.0


class Messenger:
    """Sends commands to ``workers`` and collects one outcome per command.

    Args:
        owner: the VecEnv's class name, for error messages.
        workers: the VecEnv's list of workers (shared: a restart replaces an entry).
        worker_class: the transport's ``Worker`` class, whose ``wait`` watches them all.
    """

    def __init__(self, owner: str, workers: list[Worker], worker_class: type[Worker]) -> None:
        self.owner = owner
        self.workers = workers
        self.worker_class = worker_class
        self.awaiting: dict[int, int] = {}  # worker -> the command whose reply is due
        self._outcomes: dict[int, Outcome] = {}  # arrived, not yet handed out

    def send(self, w: int, command: int, payload: Any) -> None:
        """Send ``command``; a dead worker's outcome is a failure, collected like a reply."""
        if w in self.awaiting:
            self.drain(w)
        self._outcomes.pop(w, None)  # the reply to a call given up on (a timeout) is stale now
        try:
            self.workers[w].send(command, payload)
        except WorkerDied as died:
            self._outcomes[w] = Outcome(False, died)
            return
        self.awaiting[w] = command

    def drain(self, w: int) -> None:
        """Discard the reply of a command the caller gave up on (timeout, Ctrl-C)."""
        self.drain_all([w], time.monotonic() + DRAIN_TIMEOUT_S)

    def drain_all(self, ws: Iterable[int], deadline: float) -> list[int]:
        """Discard the late replies of workers ``ws``, all within one ``deadline``. Kill
        those still busy then (returned), and those whose pipe a Ctrl-C cut mid-message;
        a command the parent's own slice has not run yet is just dropped."""
        ws = [w for w in ws if w in self.awaiting]
        for w in [w for w in ws if self.workers[w].is_local]:
            self.workers[w].cancel()
            self.awaiting.pop(w)
        ws = [w for w in ws if w in self.awaiting]
        broken = [w for w in ws if self.workers[w].broken]
        late: list[int] = []
        try:
            self.gather([w for w in ws if w not in broken], max(0.0, deadline - time.monotonic()), "drain")
        except EnvTimeoutError:
            late = [w for w in ws if w in self.awaiting and w not in broken]
        for w in broken + late:
            self.workers[w].kill()
            self.forget(w)
        for w in ws:
            self._outcomes.pop(w, None)
        return late

    def idle(self) -> bool:
        """Nothing sent and not collected, nothing collected and not taken?"""
        return not self.awaiting and not self._outcomes

    def arrived(self, ws: Iterable[int]) -> dict[int, Outcome]:
        """The outcomes of ``ws`` that arrived (after a gather ran past its timeout)."""
        return {w: self._outcomes.pop(w) for w in ws if w in self._outcomes}

    def forget(self, w: int) -> None:
        """Drop what is due from worker ``w`` (it was killed)."""
        self.awaiting.pop(w, None)
        self._outcomes.pop(w, None)

    def gather(self, ws: Sequence[int], timeout: float | None, method: str) -> dict[int, Outcome]:
        """Outcomes of workers ``ws``, in that order; EnvTimeoutError (keeping what arrived)
        after ``timeout``. The parent's own slice runs first, while the others work."""
        deadline = None if timeout is None else time.monotonic() + timeout
        outcomes, workers = self._outcomes, self.workers
        remote = []
        for w in ws:
            if w not in outcomes:
                worker = workers[w]
                if worker.is_local:
                    self._run_local(worker)
                else:
                    remote.append(worker)
        if remote:
            self._collect_remote(remote, deadline, timeout, method)
        gathered: dict[int, Outcome] = {}
        for w in ws:  # a loop: no comprehension's frame to make, once per step
            gathered[w] = outcomes.pop(w)
        return gathered

    def _collect_remote(self, waiting: list[Worker], deadline: float | None, timeout: float | None,
                        method: str) -> None:
        """Collect the outcomes of ``waiting`` (not empty) as they come; EnvTimeoutError at ``deadline``."""
        while True:
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready = self.worker_class.wait(waiting, remaining)
            if not ready:
                if timeout is None:  # no deadline: [] was a spurious wake-up, wait on
                    continue
                raise self.timeout_error([worker.index for worker in waiting], method, timeout)
            for worker in ready:
                self._collect(worker)
            if len(ready) == len(waiting):
                return
            waiting = [worker for worker in waiting if worker not in ready]

    def gather_any(self, ws: Iterable[int], timeout: float | None) -> dict[int, Outcome]:
        """The outcomes of those of ``ws`` that answer first (the parent's own slice at once);
        {} when none did within ``timeout``."""
        ws = list(ws)
        done = [w for w in ws if w in self._outcomes or self.workers[w].is_local]
        if not done:
            done = [worker.index for worker in self.worker_class.wait([self.workers[w] for w in ws], timeout)]
        for w in done:
            if w not in self._outcomes:
                self._collect(self.workers[w])
        return {w: self._outcomes.pop(w) for w in done}

    def _collect(self, worker: Worker) -> None:
        if worker.is_local:
            self._run_local(worker)
            return
        try:
            self._outcomes[worker.index] = worker.recv()
        except WorkerDied as died:
            self._outcomes[worker.index] = Outcome(False, died)
        self.awaiting.pop(worker.index, None)

    def _run_local(self, worker: Worker) -> None:
        """Step the parent's own slice now (its outcome never raises WorkerDied)."""
        self.awaiting.pop(worker.index, None)  # nothing stays due from it, even if a Ctrl-C stops it
        self._outcomes[worker.index] = worker.recv()

    def results(self, outcomes: dict[int, Outcome], method: str, reply: type[R]) -> dict[int, R]:
        """The replies, each a ``reply``, or the first failure raised (after every outcome
        was collected)."""
        for w, (ok, value) in outcomes.items():
            if not ok:
                raise self.error(w, value, method)
        return {w: reply_as(value, reply) for w, (ok, value) in outcomes.items()}

    def round_trip(self, w: int, command: int, payload: Any, timeout: float | None, method: str,
                   reply: type[R]) -> R:
        """Send one command to worker ``w`` and return its reply, a ``reply`` (or raise its failure)."""
        self.send(w, command, payload)
        return self.results(self.gather([w], timeout, method), method, reply)[w]

    def broadcast(self, command: Command, method: str, timeout: float | None, reply: type[R],
                  payload_for: Callable[[Worker], Any] | None = None) -> list[R]:
        """Send ``command`` to every worker and return their replies in worker order."""
        for worker in self.workers:
            self.send(worker.index, command, payload_for(worker) if payload_for else None)
        results = self.results(self.gather(range(len(self.workers)), timeout, method), method, reply)
        return [results[w] for w in range(len(self.workers))]

    def error(self, w: int, failure: WorkerFailure | WorkerDied, method: str) -> EnvWorkerError:
        """The error the caller raises for worker ``w``'s failure or death during ``method``."""
        worker = self.workers[w]
        envs = f"envs {worker.first_index}..{worker.stop - 1}"
        if isinstance(failure, WorkerDied):
            running = worker.running_env()  # the env it was in when it died, if the transport knows
            where = f"worker {w} ({envs})" if running is None else f"env {running} (worker {w}, {envs})"
            return EnvWorkerError(
                f"{where} {failure.reason} during {method}()", worker_index=w, method=method,
                env_index=worker.first_index if running is None else running, env_indices=worker.env_indices)
        where = f"env {failure.env_index}" if failure.env_index is not None else f"worker {w}"
        return EnvWorkerError(
            f"{where} (worker {w}) raised in {failure.method}(): {failure.summary}\n\n"
            f"Remote traceback:\n{failure.traceback}",
            env_index=failure.env_index, env_indices=worker.env_indices, worker_index=w, method=failure.method,
            remote_traceback=failure.traceback)

    def timeout_error(self, waiting: Sequence[int], method: str, timeout: float) -> EnvTimeoutError:
        busy = [i for w in waiting for i in self.workers[w].env_indices]
        return EnvTimeoutError(
            f"{self.owner}.{method}: envs {busy} (workers {list(waiting)}) did not answer within "
            f"{timeout} s", env_indices=busy, method=method, timeout=timeout)
