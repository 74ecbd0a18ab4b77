"""AsyncBatches: ``recv``/``send`` over the workers of a WorkerVecEnv, whatever the transport.

A worker gets one command per group of envs sent to it: RESET (``async_reset``: its whole
slice) or STEP_ENVS (the envs of one ``send``, with their actions). While a command is
out, the envs sent to that worker wait in the parent and go out together as the next
command when its reply arrives, so a worker never has more than one command out (Ray
actors, pipes and the parent's own slice alike). ``recv`` collects replies from whichever
workers answer first until ``count`` envs are ready; envs ready beyond that are returned
first by the next ``recv``.

A failed worker raises ``EnvWorkerError``, or with ``on_error="restart"`` is replaced: its
envs that were in flight come back with ``done=True`` and ``infos[i]["env_restarted"]``.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from vec_envs.errors import EnvTimeoutError
from vec_envs.spaces.batching import BatchBuffers, take_rows, write_rows
from vec_envs.spaces.nested import map_leaves
from vec_envs.types import Info, VecEnvRecvReturn
from vec_envs.workers.messenger import Messenger
from vec_envs.workers.protocol import (
    Command,
    Outcome,
    ResetReply,
    ResetRequest,
    StepEnvsReply,
    StepEnvsRequest,
    reply_as,
)
from vec_envs.workers.worker import Worker

__all__ = ["AsyncBatches", "BatchHost", "split_actions"]

BUSY = "{cls}.recv: envs {envs} did not finish within {timeout} s"


def split_actions(actions: Any, positions: np.ndarray) -> Any:
    """The actions at ``positions`` (rows of an array, or items of a list)."""
    if isinstance(actions, np.ndarray):
        return actions[positions]
    return [actions[j] for j in positions]


@dataclass(frozen=True)
class BatchHost:
    """What the recv/send machinery may use of its VecEnv, and nothing else."""

    name: str  # the VecEnv's class name, for error messages
    workers: list[Worker]  # shared with the VecEnv: a restart replaces an entry
    messenger: Messenger
    worker_of: np.ndarray  # env -> its worker
    buffers: BatchBuffers
    reset_infos: list[Info]
    restart: Callable[[int, Any, str], str]  # (worker, its failure, method): replaces it (or raises); the error text
    ended_info: Callable[[int, Info], Info]  # env i ended: its info with its terminal observation
    returned_envs: Callable[[], np.ndarray]  # envs returned by recv that wait for their send


class AsyncBatches:
    """The parent's side of asynchronous batches for a ``WorkerVecEnv``.

    Example:
        >>> import gymnasium as gym
        >>> from vec_envs import SubprocVecEnv
        >>> with SubprocVecEnv([lambda: gym.make("CartPole-v1")] * 4, in_series=2, shared_memory=False,
        ...                    batch_size=3) as venv:
        ...     venv.async_reset()                   # RESET to both workers
        ...     env_ids = venv.recv()[4]             # both replied: 3 of their 4 envs returned
        ...     kind = type(venv._async_batches).__name__
        >>> kind, len(env_ids)
        ('AsyncBatches', 3)
    """

    def __init__(self, host: BatchHost) -> None:
        self.host = host
        self.worker_of = host.worker_of
        self.busy: dict[int, tuple[Command, np.ndarray]] = {}  # worker -> its command out, for envs
        self.queued: dict[int, list[tuple[np.ndarray, Any]]] = {}  # worker -> (envs, actions) waiting
        self.ready: list[int] = []  # envs finished, not yet returned, first finished first
        self.infos: dict[int, Info] = {}  # infos of ready envs known already
        self._place = np.full(len(host.worker_of), -1, np.int64)  # pop_ready: env -> its place in the batch
        self.owed: dict[int, str] = {}  # env -> error: returned by recv when its worker was replaced

    # ---------------------------------------------------------------- the hooks
    def reset(self, seeds: list[int | None] | None, options: list[dict[str, Any]] | None,
              workers: list[int] | None = None) -> None:
        """Start resetting every env of ``workers`` (default: all), with its seed and options."""
        self._forget()
        for w in range(len(self.host.workers)) if workers is None else workers:
            worker = self.host.workers[w]
            request = ResetRequest.of_slice(seeds, options, worker.first_index, worker.stop)
            self.host.messenger.send(w, Command.RESET, request)
            self.busy[w] = (Command.RESET, np.arange(worker.first_index, worker.stop))

    def send(self, actions: Any, env_ids: np.ndarray) -> None:
        """Step ``env_ids``: one STEP_ENVS per idle worker, the rest queued behind the busy ones."""
        owners = self.worker_of[env_ids]
        for w in np.unique(owners).tolist():
            positions = np.flatnonzero(owners == w)
            group = (env_ids[positions], split_actions(actions, positions))
            if w in self.busy:
                self.queued.setdefault(w, []).append(group)
            else:
                self._step(w, [group])

    def recv(self, count: int, timeout: float | None) -> VecEnvRecvReturn:
        """The first ``count`` envs to finish, as ``(obs, rewards, dones, infos, env_ids)``."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while len(self.ready) < count:
            self.collect(deadline, timeout)
        return self.take(count)

    # ------------------------------------------------------------------ the work
    def collect(self, deadline: float | None, timeout: float | None) -> None:
        """Wait for the next replies (EnvTimeoutError past ``deadline``) and store them."""
        remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
        outcomes = self.host.messenger.gather_any(list(self.busy), remaining)
        if not outcomes:
            raise self.timeout_error(timeout)
        for w, outcome in outcomes.items():
            self._arrived(w, outcome)

    def take(self, count: int) -> VecEnvRecvReturn:
        """Return ``count`` ready envs, first finished first (their rows are in the buffers)."""
        env_ids = np.array(self.ready[:count], np.int64)
        return self.pop_ready(env_ids, self.host.buffers.dones[env_ids])

    def pop_ready(self, env_ids: np.ndarray, dones: np.ndarray) -> VecEnvRecvReturn:
        """Return ``env_ids``, the first of ``ready``, with their rows (``dones`` gathered already)."""
        del self.ready[:len(env_ids)]
        buffers = self.host.buffers
        infos: list[Info] = [{} for _ in range(len(env_ids))]
        if self.infos:  # a few envs: an info, an episode's end
            place = self._place
            place[env_ids] = np.arange(len(env_ids))
            for i in [i for i in self.infos if place[i] >= 0]:
                infos[place[i]] = self.infos.pop(i)
            place[env_ids] = -1
        return take_rows(buffers.obs, env_ids), buffers.rewards[env_ids], dones, infos, env_ids

    def in_flight(self) -> list[int]:
        """Envs sent or reset and not finished yet, in index order."""
        envs = [ids for _, ids in self.busy.values()]
        envs += [ids for groups in self.queued.values() for ids, _ in groups]
        return sorted(np.concatenate(envs).tolist()) if envs else []

    def timeout_error(self, timeout: float | None) -> EnvTimeoutError:
        busy = self.in_flight()
        return EnvTimeoutError(BUSY.format(cls=self.host.name, envs=busy, timeout=timeout),
                               env_indices=busy, method="recv", timeout=timeout or 0.0)

    def _step(self, w: int, groups: list[tuple[np.ndarray, Any]]) -> None:
        env_ids = np.concatenate([ids for ids, _ in groups])
        actions = groups[0][1] if len(groups) == 1 else _join([acts for _, acts in groups])
        first = self.host.workers[w].first_index
        self.host.messenger.send(w, Command.STEP_ENVS, StepEnvsRequest((env_ids - first).tolist(), actions))
        self.busy[w] = (Command.STEP_ENVS, env_ids)

    def _arrived(self, w: int, outcome: Outcome) -> None:
        command, env_ids = self.busy.pop(w)
        if not outcome.ok:
            self.restarted(w, self.host.restart(w, outcome.value, "recv"))
            return
        if command == Command.RESET:
            self._store_reset(env_ids, reply_as(outcome.value, ResetReply))
        else:
            self._store_step(w, env_ids, reply_as(outcome.value, StepEnvsReply))
        self.ready.extend(env_ids.tolist())
        groups = self.queued.pop(w, None)
        if groups:
            self._step(w, groups)

    def _store_reset(self, env_ids: np.ndarray, reply: ResetReply) -> None:
        buffers = self.host.buffers
        if reply.arrays is not None:
            write_rows(buffers.obs, int(env_ids[0]), reply.arrays.obs)
        buffers.rewards[env_ids] = 0.0
        buffers.dones[env_ids] = False
        for i, info in zip(env_ids.tolist(), reply.infos):
            self.host.reset_infos[i] = info
            self.infos[i] = dict(info)

    def _store_step(self, w: int, env_ids: np.ndarray, reply: StepEnvsReply) -> None:
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
            self.infos[i] = self.host.ended_info(i, self.infos.get(i, {}))
            if i - first not in reply.reset_infos:
                self.host.reset_infos[i] = {}

    def restarted(self, w: int, error: str) -> None:
        """Worker ``w`` was replaced: its envs in flight are ready, done, flagged."""
        worker = self.host.workers[w]
        lost = [ids for ids, _ in self.queued.pop(w, [])]
        lost.append(np.arange(worker.first_index, worker.stop))
        env_ids = np.unique(np.concatenate(lost))
        waiting = np.isin(env_ids, self.host.returned_envs())  # flagged at their send
        self.owe(env_ids[waiting], error)
        env_ids = env_ids[~waiting]
        self.flag_restarted(env_ids, error)
        self.ready.extend(i for i in env_ids.tolist() if i not in self.ready)

    def owe(self, env_ids: np.ndarray, error: str) -> None:
        """``env_ids`` wait for their send while their worker was replaced: their next row
        is flagged as restarted, as lock-step flags every env of the worker."""
        for i in env_ids.tolist():
            self.owed[i] = error

    def settle_owed(self, actions: Any, env_ids: np.ndarray) -> tuple[Any, np.ndarray]:
        """Make the owed envs of a ``send`` ready at once, flagged (their actions are
        dropped: the new worker reset them); returns the actions and envs left to send."""
        if not self.owed:
            return actions, env_ids
        owed = np.array([i in self.owed for i in env_ids.tolist()], np.bool_)
        if not owed.any():
            return actions, env_ids
        for i in env_ids[owed].tolist():
            self.flag_restarted(np.array([i]), self.owed.pop(i))
            self.ready.append(i)
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

    def abort(self) -> list[int]:
        """Before close: nothing to do here (the messenger drains the replies still due);
        returns the workers it had to kill (none)."""
        self._forget()
        return []

    def _forget(self) -> None:
        """A new round: what the last one left (after an error) is dropped; the messenger
        drains any reply still due before the next command to that worker."""
        self.busy.clear()
        self.queued.clear()
        self.ready.clear()
        self.infos.clear()
        self.owed.clear()


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
