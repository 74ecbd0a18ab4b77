"""Scheduler: how a worker VecEnv's resets and steps reach its envs, and their answers come back.

One interface for every transport: ``submit`` and ``submit_reset`` ask envs, ``collect`` waits for their
answers and returns the workers that failed (the VecEnv raises or replaces them: ``restarted``), ``take``
returns the infos (the rows are in the batch buffers). ``CommandScheduler`` works through requests (Ray
actors, pipes, the parent's own slice), the subprocess transport's ``LaneScheduler`` through shared memory.
"""
from __future__ import annotations

import time
from typing import Any

import numpy as np

from vec_envs.env_states import IN_FLIGHT, RETURNED, EnvStates
from vec_envs.errors import EnvTimeoutError
from vec_envs.spaces.batching import BatchBuffers
from vec_envs.spaces.nested import map_leaves
from vec_envs.types import Info
from vec_envs.workers.env_slice import ended_infos
from vec_envs.workers.wire import Answers, Command, Reply, Reset, Step, WorkerFailure
from vec_envs.workers.worker import Worker, WorkerDied, replies

__all__ = ["BUSY", "DID_NOT_ANSWER", "CommandScheduler", "Failure", "Scheduler", "split_actions", "write_rows_of"]

BUSY = "{cls}.{method}: envs {envs} did not finish within {timeout} s"
DID_NOT_ANSWER = "{cls}.{method}: envs {envs} (workers {workers}) did not answer within {timeout} s"
#: why a worker stopped answering: an env's failure, or the worker's death
Failure = WorkerFailure | WorkerDied


def split_actions(actions: Any, positions: Any) -> Any:
    """The actions at ``positions`` (rows of an array, or items of a list)."""
    return actions[positions] if isinstance(actions, np.ndarray) else [actions[j] for j in positions]


class Scheduler:
    """What every transport's scheduler shares: what answered envs said, replaced workers' flags, a batch's infos."""

    def __init__(self, name: str, workers: list[Worker], buffers: BatchBuffers, reset_infos: list[Info],
                 states: EnvStates, deferred: bool) -> None:
        self.name, self.workers, self.buffers, self.reset_infos = name, workers, buffers, reset_infos
        self.states, self.deferred = states, deferred
        self.worker_of = np.array([w.index for w in workers for _ in range(w.first_index, w.stop)], np.int64)
        self.terminal = buffers.terminal_obs is not None and buffers.time_limit_truncated is not None
        self.said: dict[int, tuple[Info, Info | None]] = {}  # env -> (info, reset info) of its answer
        self.flagged: dict[int, str] = {}  # env -> error: its worker was replaced, its next row says so
        self.owed: dict[int, str] = {}  # env -> error: replaced while it waited for its send
        self.resets_out = False  # some env's request out is a reset
        self.columns: Any = None  # the lanes (``ParentLanes``) whose info columns infos may come in

    def submit(self, env_ids: np.ndarray | None, actions: Any) -> None:
        """Ask ``env_ids`` (None: every env) to step with ``actions``."""
        raise NotImplementedError

    def submit_reset(self, seeds: list[int | None] | None, options: list[dict[str, Any]] | None) -> None:
        """Ask every env to reset (env i with ``seeds[i]`` and ``options[i]`` when given)."""
        raise NotImplementedError

    def collect(self, count: int | None, timeout: float | None) -> dict[int, Failure]:
        """Wait until every env asked answered (``count`` None) or ``count`` envs are ready; the workers
        that failed meanwhile. ``EnvTimeoutError`` after ``timeout`` s (the envs stay out)."""
        raise NotImplementedError

    def in_flight(self) -> list[int]:
        """The envs asked that have not answered, in index order."""
        raise NotImplementedError

    def settle(self, ws: list[int]) -> None:
        """Before another request to workers ``ws``: take in what they owe (replies come in order)."""

    def abort(self) -> list[int]:
        """Give up on every request out; the workers that had to be killed."""
        for held in (self.said, self.flagged, self.owed):
            held.clear()
        self.states.resetting[:] = self.resets_out = False
        return []

    def take(self, env_ids: np.ndarray | None) -> list[Info]:
        """The infos of the answered ``env_ids`` (None: every env); stores the reset infos of those reset."""
        dones = self.buffers.dones if env_ids is None else self.buffers.dones[env_ids]
        infos = (ended_infos(self.buffers, dones, env_ids, self.reset_infos, self.deferred) if self.terminal
                 else [{} for _ in range(len(dones))])  # (the ended envs' infos from the terminal rows)
        if self.columns is not None and (self.columns.schemas or self.columns.objects):  # infos in the columns
            self.columns.column_infos(env_ids, self.worker_of, infos)
        if env_ids is None and self.owed:  # a lock-step step after recv/send: their row is this one
            self.flagged.update(self.owed)
            self.owed.clear()
        if self.said or self.flagged or self.resets_out:
            said, flagged, resetting, ending = self.said, self.flagged, self.states.resetting, dones.tolist()
            # (lock-step, no reset out: only the envs that said something or were flagged, each at its index)
            ids: Any = env_ids.tolist() if env_ids is not None else range(len(dones)) if self.resets_out else \
                [*said, *(flagged.keys() - said.keys())]
            for j, i in zip(ids if env_ids is None else range(len(ids)), ids):  # what it said over its rows' info
                got = said.pop(i, None)
                error = flagged.pop(i, None)
                if error is not None:  # its worker was replaced
                    self.buffers.rewards[i], self.buffers.dones[i] = 0.0, True
                    infos[j] = {"env_restarted": True, "error": error}
                elif self.resets_out and resetting[i]:
                    self.reset_infos[i] = {} if got is None else got[0]
                    infos[j] = dict(self.reset_infos[i])
                elif ending[j]:
                    info, reset_info = got or ({}, None)
                    if not self.deferred:
                        self.reset_infos[i] = reset_info or {}
                    infos[j] = {**info, **infos[j]} if infos[j] else info
                elif got is not None:
                    infos[j] = got[0]
            resetting[slice(None) if env_ids is None else env_ids] = False
            self.resets_out = bool(resetting.any())
        return infos

    def restarted(self, w: int, error: str) -> None:
        """Worker ``w`` was replaced, its envs reset anew: their next rows say so (``done=True``, reward 0,
        ``infos[i]["env_restarted"]``; after its ``send`` for an env waiting for one), unless a reset() is
        out (it got the reset asked for)."""
        if self.resets_out and not self.states.round:
            return
        envs = range(self.workers[w].first_index, self.workers[w].stop)
        status = self.states.status
        for i in envs:
            self.said.pop(i, None)
            if self.states.round and status[i] == RETURNED:
                self.owed[i] = error
            else:
                self.flagged[i] = error
        if self.states.round:
            self.states.answered([i for i in envs if status[i] == IN_FLIGHT])

    def settle_owed(self, actions: Any, env_ids: np.ndarray) -> tuple[Any, np.ndarray]:
        """A ``send``: answer the owed envs of ``env_ids`` at once (flagged); the actions and envs left."""
        owed = np.array([i in self.owed for i in env_ids.tolist()], np.bool_)
        if not owed.any():
            return actions, env_ids
        for i in env_ids[owed].tolist():
            self.flagged[i] = self.owed.pop(i)
        self.states.answered(env_ids[owed].tolist())
        keep = np.flatnonzero(~owed)
        return split_actions(actions, keep), env_ids[keep]

    def timeout_error(self, method: str, timeout: float | None) -> EnvTimeoutError:
        """The envs still out (recv), or every env of the workers that owe answers (lock-step)."""
        busy = self.in_flight()
        if method == "recv":
            message = BUSY.format(cls=self.name, method=method, envs=busy, timeout=timeout)
        else:
            workers = sorted(set(self.worker_of[busy].tolist()))
            busy = [i for w in workers for i in self.workers[w].env_indices]
            message = DID_NOT_ANSWER.format(cls=self.name, method=method, envs=busy, workers=workers, timeout=timeout)
        return EnvTimeoutError(message, env_indices=busy, method=method, timeout=timeout or 0.0)

    def release(self) -> None:
        """The VecEnv closed: drop everything held (views of shared memory among them)."""
        vars(self).clear()


class CommandScheduler(Scheduler):
    """Resets and steps as requests through any ``Worker``, one out per worker; envs for a busy one wait together."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.busy: dict[int, np.ndarray] = {}  # worker -> the envs of its request out
        self.queued: dict[int, list[tuple[np.ndarray, Any]]] = {}  # worker -> (envs, actions) waiting
        self.arrived: dict[int, Reply | WorkerDied] = {}  # replies read before a timeout

    def submit(self, env_ids: np.ndarray | None, actions: Any) -> None:
        if env_ids is None:
            for worker in self.workers:
                a, b = worker.first_index, worker.stop
                self._send(worker.index, Command.STEP, np.arange(a, b), Step(list(range(b - a)), actions[a:b]))
            return
        owners = self.worker_of[env_ids]
        for w in np.unique(owners).tolist():
            positions = np.flatnonzero(owners == w)
            group = (env_ids[positions], split_actions(actions, positions))
            if w in self.busy:
                self.queued.setdefault(w, []).append(group)
            else:
                self._step(w, [group])

    def submit_reset(self, seeds: list[int | None] | None, options: list[dict[str, Any]] | None) -> None:
        self.states.resetting[:] = self.resets_out = True
        for worker in self.workers:
            a, b = worker.first_index, worker.stop
            request = Reset(list(range(b - a)), None if seeds is None else seeds[a:b],
                            None if options is None else options[a:b])
            self._send(worker.index, Command.RESET, np.arange(a, b), request)

    def _step(self, w: int, groups: list[tuple[np.ndarray, Any]]) -> None:
        env_ids = np.concatenate([ids for ids, _ in groups])
        parts = [acts for _, acts in groups]
        actions = parts[0] if len(parts) == 1 else np.concatenate(parts) if all(
            isinstance(p, np.ndarray) for p in parts) else [a for p in parts for a in p]
        self._send(w, Command.STEP, env_ids, Step((env_ids - self.workers[w].first_index).tolist(), actions))

    def _send(self, w: int, command: Command, env_ids: np.ndarray, payload: Any) -> None:
        self.busy[w] = env_ids
        self.arrived.pop(w, None)
        try:
            self.workers[w].send(command, payload)
        except WorkerDied as died:
            self.arrived[w] = died

    def collect(self, count: int | None, timeout: float | None) -> dict[int, Failure]:
        deadline = None if timeout is None else time.monotonic() + timeout
        method = "recv" if count is not None else "reset" if self.resets_out else "step"
        failures: dict[int, Failure] = {}
        while self.busy and (count is None or len(self.states.ready) < count) and not failures:
            waiting = [self.workers[w] for w in self.busy if w not in self.arrived]
            self.arrived.update(replies(waiting, deadline, first=count is not None))
            if not self.arrived or count is None and len(self.arrived) < len(self.busy):
                raise self.timeout_error(method, timeout)
            for w, reply in list(self.arrived.items()):
                env_ids = self.busy.pop(w)
                del self.arrived[w]
                failure = self._store(env_ids, reply)
                if failure is not None:
                    failures[w] = failure
                    self.queued.pop(w, None)
                elif count is not None:
                    self.states.answered(env_ids.tolist())
                    if self.queued.get(w):
                        self._step(w, self.queued.pop(w))
        return failures

    def _store(self, env_ids: np.ndarray, reply: Reply | WorkerDied) -> Failure | None:
        if isinstance(reply, WorkerDied):
            return reply
        if not reply.ok:
            return reply.value
        answers: Answers = reply.value
        if answers.obs is not None:
            write_rows_of(self.buffers.obs, env_ids, answers.obs)
            self.buffers.rewards[env_ids] = answers.rewards
            self.buffers.dones[env_ids] = answers.dones
        for i, info, reset_info in zip(env_ids.tolist(), answers.infos, answers.reset_infos):
            if info or reset_info is not None:
                self.said[i] = (info, reset_info)
        return None if not answers.failures else answers.failures[min(answers.failures)]

    def settle(self, ws: list[int]) -> None:
        self.arrived.update(replies([self.workers[w] for w in ws if w in self.busy and w not in self.arrived], None))

    def in_flight(self) -> list[int]:
        groups = [ids for w, ids in self.busy.items() if w not in self.arrived]
        groups += [ids for queue in self.queued.values() for ids, _ in queue]
        return sorted(np.concatenate(groups).tolist()) if groups else []

    def abort(self) -> list[int]:
        """The requests out are left to ``drain`` (the VecEnv's): nothing is killed here."""
        for held in (self.busy, self.queued, self.arrived):
            held.clear()
        return super().abort()


def write_rows_of(batch: Any, env_ids: np.ndarray, rows: Any) -> None:
    """``batch[env_ids[j]] = rows[j]``, leaf by leaf."""
    def write(leaf: Any, part: Any) -> None:
        if isinstance(leaf, list):
            for i, row in zip(env_ids.tolist(), part):
                leaf[i] = row
        else:
            leaf[env_ids] = part
    map_leaves(write, batch, rows)
