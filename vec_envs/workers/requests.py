"""Requests: the parent's requests to its envs and their answers, lock-step and recv/send alike.

A worker VecEnv reaches its envs through one ``Requests`` object, whatever the call:

- lock-step: ``send(actions)`` requests a step of every env, ``collect()`` waits for
  every answer (``reset(...)`` + ``collect()`` for a reset);
- recv/send: ``reset(...)`` or ``send(actions, env_ids)`` requests some envs, ``recv(count)``
  returns the first ``count`` to answer.

The answered rows are in the VecEnv's batch buffers (written there by the workers, or
copied from their replies); where each env stands is ``AsyncEnvs``'s (the VecEnv's one
record of env states). This module's ``CommandRequests`` serves every transport: one
command per group of envs per worker (RESET, STEP), a worker never having more than
one out (Ray actors, pipes and the parent's own slice alike); the subprocess transport's
``LaneRequests`` (``subproc/parent/lane_requests.py``) does the same through shared memory.

An env whose episode ended was reset in the same step (its reset info comes with its
answer), unless its VecEnv defers resets (next-step and disabled autoreset): then its row
is its last observation, its info gains ``TimeLimit.truncated`` only and no reset info
changes (``RequestHost.deferred``).

A failed worker raises ``EnvWorkerError``, or with ``on_error="restart"`` is replaced: its
envs come back with ``done=True``, reward 0 and ``infos[i]["env_restarted"]``; an env that
waited for its ``send`` then is owed that row (``owe``).
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from vec_envs.async_envs import AsyncEnvs, EnvStatus
from vec_envs.errors import EnvTimeoutError
from vec_envs.spaces.batching import BatchBuffers, take_rows, write_rows
from vec_envs.spaces.nested import map_leaves
from vec_envs.stepping.ended_infos import with_terminal, with_truncated
from vec_envs.types import Info, VecEnvRecvReturn
from vec_envs.workers.messenger import Messenger
from vec_envs.workers.protocol import (
    Arrays,
    Command,
    Outcome,
    ResetReply,
    ResetRequest,
    StepReply,
    StepRequest,
    WorkerFailure,
    reply_as,
)
from vec_envs.workers.worker import Worker, WorkerDied

__all__ = ["CommandRequests", "RequestHost", "Requests", "split_actions", "store_arrays"]

BUSY = "{cls}.{method}: envs {envs} did not finish within {timeout} s"


def split_actions(actions: Any, positions: np.ndarray) -> Any:
    """The actions at ``positions`` (rows of an array, or items of a list)."""
    if isinstance(actions, np.ndarray):
        return actions[positions]
    return [actions[j] for j in positions]


def store_arrays(buffers: BatchBuffers, start: int, arrays: Arrays) -> None:
    """Rows ``start:`` of the buffers from a reply that carried them."""
    write_rows(buffers.obs, start, arrays.obs)
    buffers.rewards[start:start + len(arrays.rewards)] = arrays.rewards
    buffers.dones[start:start + len(arrays.dones)] = arrays.dones


@dataclass(frozen=True)
class RequestHost:
    """What the request machinery may use of its VecEnv, and nothing else."""

    name: str  # the VecEnv's class name, for error messages
    workers: list[Worker]  # shared with the VecEnv: a restart replaces an entry
    messenger: Messenger
    worker_of: np.ndarray  # env -> its worker
    buffers: BatchBuffers
    reset_infos: list[Info]
    envs: AsyncEnvs  # where each env stands
    restart: Callable[[int, Any, str], str]  # (worker, its failure, method): replaces it (or raises); the error text
    deferred: bool = False  # an ended env is reset at its next step (next-step, disabled autoreset)


class Requests:
    """What every transport's requests share: the infos of answered envs, their rows, and
    the flags of envs whose worker was replaced. A transport fills in ``reset``, ``send``,
    ``collect``, ``recv``, ``in_flight`` and ``abort``."""

    def __init__(self, host: RequestHost) -> None:
        self.host = host
        self.worker_of = host.worker_of
        self.envs = host.envs
        self.infos: dict[int, Info] = {}  # infos of answered envs known already (recv)
        self.owed: dict[int, str] = {}  # env -> error: returned by recv when its worker was replaced
        self._place = np.full(len(host.worker_of), -1, np.int64)  # pop_ready: env -> its place in the batch

    # -------------------------------------------------------------- the calls
    def reset(self, seeds: list[int | None] | None, options: list[dict[str, Any]] | None) -> None:
        """Request a reset of every env (env i with ``seeds[i]`` and ``options[i]`` when given)."""
        raise NotImplementedError

    def send(self, actions: Any, env_ids: np.ndarray | None = None) -> None:
        """Request a step of ``env_ids`` (None: every env, lock-step) with ``actions``."""
        raise NotImplementedError

    def collect(self, timeout: float | None) -> list[Info]:
        """Wait for every env's answer (lock-step); their infos (after a reset: ``{}`` each,
        the reset infos being stored). EnvTimeoutError past ``timeout``: still out."""
        raise NotImplementedError

    def recv(self, count: int, timeout: float | None) -> VecEnvRecvReturn:
        """The first ``count`` envs to answer, as ``(obs, rewards, dones, infos, env_ids)``."""
        raise NotImplementedError

    def in_flight(self) -> list[int]:
        """Envs requested and not answered yet, in index order."""
        raise NotImplementedError

    def abort(self) -> list[int]:
        """Give up on every request out (close, a failure): let the envs finish or kill their
        workers; the workers killed."""
        raise NotImplementedError

    # ------------------------------------------------------------- shared work
    def pop_ready(self, env_ids: np.ndarray, dones: np.ndarray) -> VecEnvRecvReturn:
        """Return ``env_ids``, the first of ``envs.ready``, with their rows (``dones`` gathered
        already) and the infos known for them."""
        del self.envs.ready[:len(env_ids)]
        buffers = self.host.buffers
        infos: list[Info] = [{} for _ in range(len(env_ids))]
        if self.infos:  # a few envs: an info, an episode's end
            place = self._place
            place[env_ids] = np.arange(len(env_ids))
            for i in [i for i in self.infos if place[i] >= 0]:
                infos[place[i]] = self.infos.pop(i)
            place[env_ids] = -1
        return take_rows(buffers.obs, env_ids), buffers.rewards[env_ids], dones, infos, env_ids

    def ended_info(self, i: int, info: Info) -> Info:
        """Env ``i`` ended: its info, with its terminal observation (deferred resets: its
        ``TimeLimit.truncated``) if that is in the buffers."""
        buffers = self.host.buffers
        if buffers.terminal_obs is None:
            return info
        return with_truncated(buffers, i, info) if self.host.deferred else with_terminal(buffers, i, info)

    def ended_reset_info(self, i: int, reset_info: Info | None) -> None:
        """Env ``i`` ended in the step just answered: its reset info is the reset's that
        followed (``{}``: it said none), unless resets are deferred (it was not reset)."""
        if not self.host.deferred:
            self.host.reset_infos[i] = reset_info or {}

    def timeout_error(self, method: str, timeout: float | None) -> EnvTimeoutError:
        busy = self.in_flight()
        return EnvTimeoutError(BUSY.format(cls=self.host.name, method=method, envs=busy, timeout=timeout),
                               env_indices=busy, method=method, timeout=timeout or 0.0)

    def restarted(self, w: int, error: str) -> None:
        """Worker ``w`` was replaced (its envs reset) during a recv round: its envs in flight
        are answered and its answered ones not returned yet stay so, all flagged; those
        returned by recv and waiting for their send are owed that row."""
        worker = self.host.workers[w]
        envs = np.arange(worker.first_index, worker.stop)
        status = self.envs.status[envs]
        self.owe(envs[status == EnvStatus.RETURNED], error)
        in_flight = envs[status == EnvStatus.IN_FLIGHT]
        self.flag_restarted(envs[(status == EnvStatus.IN_FLIGHT) | (status == EnvStatus.ANSWERED)], error)
        self.envs.answered(in_flight.tolist())

    def owe(self, env_ids: np.ndarray, error: str) -> None:
        """``env_ids`` wait for their send while their worker was replaced: their next row
        is flagged as restarted, as lock-step flags every env of the worker."""
        for i in env_ids.tolist():
            self.owed[i] = error

    def settle_owed(self, actions: Any, env_ids: np.ndarray) -> tuple[Any, np.ndarray]:
        """Make the owed envs of a ``send`` ready at once, flagged (their actions are
        dropped: the new worker reset them); the actions and envs left to send."""
        if not self.owed:
            return actions, env_ids
        owed = np.array([i in self.owed for i in env_ids.tolist()], np.bool_)
        if not owed.any():
            return actions, env_ids
        for i in env_ids[owed].tolist():
            self.flag_restarted(np.array([i]), self.owed.pop(i))
            self.envs.answered([i])
        keep = np.flatnonzero(~owed)
        return split_actions(actions, keep), env_ids[keep]

    def flag_owed_rows(self, infos: list[Info]) -> None:
        """A lock-step step after recv/send: the owed envs' rows of it are flagged (their
        worker was replaced while they waited), and nothing is owed any more."""
        for i, error in self.owed.items():
            self.host.buffers.rewards[i] = 0.0
            self.host.buffers.dones[i] = True
            infos[i] = {"env_restarted": True, "error": error}
        self.owed.clear()

    def flag_restarted(self, env_ids: np.ndarray, error: str) -> None:
        buffers = self.host.buffers
        buffers.rewards[env_ids] = 0.0
        buffers.dones[env_ids] = True
        for i in env_ids.tolist():
            self.infos[i] = {"env_restarted": True, "error": error}

    def forget(self) -> None:
        """A new round: what the last one left (after an error) is dropped."""
        self.infos.clear()
        self.owed.clear()

    def release(self) -> None:
        """The VecEnv closed: drop everything held (views of shared memory among them, so it
        is unmapped even while an error's frames still hold this object)."""
        vars(self).clear()


class CommandRequests(Requests):
    """Requests as commands through any ``Worker`` (Ray actors, pipes, the parent's own slice).

    A worker gets one command per group of envs sent to it: RESET (its whole slice) or
    STEP (the envs of one ``send``, with their actions; lock-step: its whole slice).
    While a command is out, the envs sent to that worker wait in the parent and go out
    together as the next command when its reply arrives.

    Example:
        >>> import gymnasium as gym
        >>> from vec_envs import SubprocVecEnv
        >>> with SubprocVecEnv([lambda: gym.make("CartPole-v1")] * 4, in_series=2, shared_memory=False,
        ...                    batch_size=3) as venv:
        ...     venv.async_reset()                   # RESET to both workers
        ...     env_ids = venv.recv()[4]             # both replied: 3 of their 4 envs returned
        ...     kind = type(venv.requests).__name__
        >>> kind, len(env_ids)
        ('CommandRequests', 3)
    """

    def __init__(self, host: RequestHost) -> None:
        super().__init__(host)
        self.busy: dict[int, tuple[Command, np.ndarray]] = {}  # worker -> its command out, for envs
        self.queued: dict[int, list[tuple[np.ndarray, Any]]] = {}  # worker -> (envs, actions) waiting

    # ---------------------------------------------------------------- the calls
    def reset(self, seeds: list[int | None] | None, options: list[dict[str, Any]] | None) -> None:
        self.forget()
        for worker in self.host.workers:
            request = ResetRequest.of_slice(seeds, options, worker.first_index, worker.stop)
            self.host.messenger.send(worker.index, Command.RESET, request)
            self.busy[worker.index] = (Command.RESET, np.arange(worker.first_index, worker.stop))

    def send(self, actions: Any, env_ids: np.ndarray | None = None) -> None:
        if env_ids is None:  # lock-step: every worker its whole slice
            for worker in self.host.workers:
                self._step(worker.index, [(np.arange(worker.first_index, worker.stop),
                                           actions[worker.first_index:worker.stop])])
            return
        owners = self.worker_of[env_ids]
        for w in np.unique(owners).tolist():
            positions = np.flatnonzero(owners == w)
            group = (env_ids[positions], split_actions(actions, positions))
            if w in self.busy:
                self.queued.setdefault(w, []).append(group)
            else:
                self._step(w, [group])

    def collect(self, timeout: float | None) -> list[Info]:
        ws = sorted(self.busy)
        outcomes = self.host.messenger.gather(ws, timeout, "reset" if self._resetting() else "step")
        infos: list[Info] = [{} for _ in range(len(self.worker_of))]
        failed = []
        for w, outcome in outcomes.items():
            command, env_ids = self.busy.pop(w)
            if outcome.ok:
                self._store(w, command, env_ids, outcome.value)
            else:
                failed.append((w, outcome.value))
        for w, failure in failed:
            worker = self.host.workers[w]
            self.flag_restarted(np.arange(worker.first_index, worker.stop), self.host.restart(w, failure, "step"))
        for i in list(self.infos):
            infos[i] = self.infos.pop(i)
        if self.owed:
            self.flag_owed_rows(infos)
        return infos

    def _resetting(self) -> bool:
        return any(command == Command.RESET for command, _ in self.busy.values())

    def recv(self, count: int, timeout: float | None) -> VecEnvRecvReturn:
        deadline = None if timeout is None else time.monotonic() + timeout
        while len(self.envs.ready) < count:
            self.wait_any(deadline, timeout)
        env_ids = np.array(self.envs.ready[:count], np.int64)
        return self.pop_ready(env_ids, self.host.buffers.dones[env_ids])

    def in_flight(self) -> list[int]:
        envs = [ids for _, ids in self.busy.values()]
        envs += [ids for groups in self.queued.values() for ids, _ in groups]
        return sorted(np.concatenate(envs).tolist()) if envs else []

    def abort(self) -> list[int]:
        """Nothing to do here: the messenger drains the replies still due (and kills the
        workers still busy); none killed here."""
        self.busy.clear()
        self.queued.clear()
        self.forget()
        return []

    # ------------------------------------------------------------------ the work
    def wait_any(self, deadline: float | None, timeout: float | None) -> None:
        """Wait for the next replies (EnvTimeoutError past ``deadline``) and store them."""
        remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
        outcomes = self.host.messenger.gather_any(list(self.busy), remaining)
        if not outcomes:
            raise self.timeout_error("recv", timeout)
        for w, outcome in outcomes.items():
            self._arrived(w, outcome)

    def _step(self, w: int, groups: list[tuple[np.ndarray, Any]]) -> None:
        env_ids = np.concatenate([ids for ids, _ in groups])
        actions = groups[0][1] if len(groups) == 1 else _join([acts for _, acts in groups])
        first = self.host.workers[w].first_index
        self.host.messenger.send(w, Command.STEP, StepRequest((env_ids - first).tolist(), actions))
        self.busy[w] = (Command.STEP, env_ids)

    def _arrived(self, w: int, outcome: Outcome) -> None:
        """A recv's reply: its envs are answered (or, the worker failed, restarted)."""
        command, env_ids = self.busy.pop(w)
        if not outcome.ok:
            failure: WorkerFailure | WorkerDied = outcome.value
            self.queued.pop(w, None)
            self.restarted(w, self.host.restart(w, failure, "recv"))
            return
        self._store(w, command, env_ids, outcome.value)
        self.envs.answered(env_ids.tolist())
        groups = self.queued.pop(w, None)
        if groups:
            self._step(w, groups)

    def _store(self, w: int, command: Command, env_ids: np.ndarray, value: Any) -> None:
        """The rows and infos of a reply."""
        if command == Command.RESET:
            self._store_reset(env_ids, reply_as(value, ResetReply))
        else:
            self._store_step(w, env_ids, reply_as(value, StepReply))

    def _store_reset(self, env_ids: np.ndarray, reply: ResetReply) -> None:
        buffers = self.host.buffers
        if reply.arrays is not None:
            write_rows(buffers.obs, int(env_ids[0]), reply.arrays.obs)
        buffers.rewards[env_ids] = 0.0
        buffers.dones[env_ids] = False
        for i, info in zip(env_ids.tolist(), reply.infos):
            self.host.reset_infos[i] = info
            self.infos[i] = dict(info)

    def _store_step(self, w: int, env_ids: np.ndarray, reply: StepReply) -> None:
        buffers, first = self.host.buffers, self.host.workers[w].first_index
        if reply.arrays is not None:
            _write_env_rows(buffers.obs, env_ids, reply.arrays.obs)
            buffers.rewards[env_ids] = reply.arrays.rewards
            buffers.dones[env_ids] = reply.arrays.dones
        for k, info in reply.infos.items():
            self.infos[first + k] = info
        for k, info in reply.reset_infos.items():
            self.host.reset_infos[first + k] = info
        for i in env_ids[buffers.dones[env_ids]].tolist():
            self.infos[i] = self.ended_info(i, self.infos.get(i, {}))
            if i - first not in reply.reset_infos:
                self.ended_reset_info(i, None)

    def forget(self) -> None:
        super().forget()
        self.queued.clear()


def _join(parts: list[Any]) -> Any:
    if all(isinstance(part, np.ndarray) for part in parts):
        return np.concatenate(parts)
    return [action for part in parts for action in part]


def _write_env_rows(batch: Any, env_ids: np.ndarray, rows: Any) -> None:
    """``batch[env_ids[j]] = rows[j]`` leaf by leaf."""
    def write(leaf: Any, part: Any) -> None:
        if isinstance(leaf, list):
            for i, row in zip(env_ids.tolist(), part):
                leaf[i] = row
        else:
            leaf[env_ids] = part
    map_leaves(write, batch, rows)
