"""WorkerVecEnv: the parent side of every worker backend, whatever the transport.

Slicing envs into workers, the command round trips, error reports, timeouts and the
restart policy live here once; a transport (SubprocVecEnv, RayVecEnv) only says how to
start a ``Worker`` and, optionally, how to share the batch buffers with it.
"""
from __future__ import annotations

import math
import os
import time
import weakref
from typing import Any, Callable, Sequence

import numpy as np

from vec_envs.spaces.batching import BatchBuffers, copy_obs, write_rows
from vec_envs.errors import EnvTimeoutError, EnvWorkerError
from vec_envs.workers.local_worker import LocalWorker
from vec_envs.types import EnvFn, VecEnvIndices, VecEnvObs, VecEnvStepReturn
from vec_envs.vec_env_base import VecEnvBase
from vec_envs.workers.worker import Worker, WorkerDied
from vec_envs.workers.protocol import Command, WorkerFailure

__all__ = ["WorkerVecEnv", "split_into_slices", "resolve_in_series"]

ON_ERROR = ("raise", "restart")
CLOSE_TIMEOUT_S = 10.0
DRAIN_TIMEOUT_S = 1.0


def available_cpus() -> int:
    """CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def resolve_in_series(in_series: int | str, num_envs: int, cpus: int | None = None) -> int:
    """Envs per worker: an int as given, "auto" for about one worker per CPU (``cpus``, by
    default those available to this process)."""
    if in_series == "auto":
        return math.ceil(num_envs / min(num_envs, cpus or available_cpus()))
    if isinstance(in_series, bool) or not isinstance(in_series, int) or in_series < 1:
        raise ValueError(f"in_series must be a positive int or 'auto', received {in_series!r}")
    return min(in_series, num_envs)


def split_into_slices(num_envs: int, in_series: int) -> list[tuple[int, int]]:
    """Contiguous ``(start, stop)`` slices of ``in_series`` envs (the last may be shorter)."""
    return [(start, min(start + in_series, num_envs)) for start in range(0, num_envs, in_series)]


def _kill_all(workers: list[Worker], resources: list[Any]) -> None:
    for worker in workers:
        worker.kill()
    for resource in resources:
        resource.close()


class WorkerVecEnv(VecEnvBase):
    """Envs in workers, each stepping a contiguous slice of envs in series.

    Subclasses implement ``_start_worker`` and may override ``_make_buffers`` /
    ``_prepare_worker`` to share memory with their workers. With ``step_in_parent`` the
    last slice is stepped by the parent itself (a ``LocalWorker``) while the workers
    step theirs.
    """

    worker_class: type[Worker]

    def __init__(self, env_fns: Sequence[EnvFn], in_series: int | str = "auto", copy: bool = True,
                 timeout: float | None = None, on_error: str = "raise", max_restarts: int = 10,
                 step_in_parent: bool = False) -> None:
        if len(env_fns) == 0:
            raise ValueError(f"{type(self).__name__}: env_fns is empty (expected at least one env factory)")
        if on_error not in ON_ERROR:
            raise ValueError(f"on_error must be one of {ON_ERROR}, received {on_error!r}")
        self._env_fns = list(env_fns)
        self.in_series = resolve_in_series(in_series, len(env_fns))
        self.copy, self.timeout, self.on_error, self.max_restarts = copy, timeout, on_error, max_restarts
        self.restarts = 0
        self.step_in_parent = step_in_parent
        self._shared_actions: np.ndarray | None = None
        self.workers: list[Worker] = []
        self._resources: list[Any] = []
        self._awaiting: dict[int, Command] = {}
        self._replies: dict[int, tuple[bool, Any]] = {}
        self._finalizer = weakref.finalize(self, _kill_all, self.workers, self._resources)
        try:
            self._start(split_into_slices(len(env_fns), self.in_series))
        except BaseException:
            self._finalizer()
            raise

    def _start(self, slices: list[tuple[int, int]]) -> None:
        self._local_index = len(slices) - 1 if self.step_in_parent else None
        self.workers.extend(self._new_worker(w, a, b) for w, (a, b) in enumerate(slices))
        self._worker_of = [w for w, (a, b) in enumerate(slices) for _ in range(a, b)]
        spaces = self._broadcast(Command.GET_SPACES, "__init__", timeout=self._start_timeout())
        observation_space, action_space = spaces[0]
        for w, (obs_space, act_space) in enumerate(spaces):
            if (obs_space, act_space) != (observation_space, action_space):
                raise EnvWorkerError(
                    f"envs {self.workers[w].first_index}.. have spaces {obs_space}, {act_space}, but env 0 "
                    f"has {observation_space}, {action_space}: every env must have the same spaces",
                    env_index=self.workers[w].first_index, worker_index=w, method="__init__")
        super().__init__(len(self._env_fns), observation_space, action_space)
        self.buffers = self._make_buffers()
        for w in range(len(self.workers)):
            self._prepare_worker(w)

    def _new_worker(self, index: int, first: int, stop: int) -> Worker:
        if index == self._local_index:
            return LocalWorker(index, self._env_fns[first:stop], first, stop)
        return self._start_worker(index, first, stop)

    # ------------------------------------------------------------- transport hooks
    def _start_worker(self, index: int, first: int, stop: int) -> Worker:
        raise NotImplementedError

    def _start_timeout(self) -> float | None:
        """Seconds new workers may take to build their envs and answer (default: ``timeout``)."""
        return self.timeout

    def _make_buffers(self) -> BatchBuffers:
        """The parent's batch buffers (default: local arrays the replies are copied into)."""
        return BatchBuffers.allocate(self.observation_space, self.num_envs)

    def _prepare_worker(self, w: int) -> None:
        """Called once per (re)started worker, after its spaces were checked.

        A local worker steps straight into the parent's buffers; transports extend this
        to share memory with their workers.
        """
        worker = self.workers[w]
        if isinstance(worker, LocalWorker):
            worker.server.attach(self.buffers.view(worker.first_index, worker.stop))

    # ------------------------------------------------------------------ messaging
    def _send(self, w: int, command: Command, payload: Any) -> None:
        if w in self._awaiting:
            self._drain(w)
        try:
            self.workers[w].send(command, payload)
        except WorkerDied as died:
            self._replies[w] = (False, died)
            return
        self._awaiting[w] = command

    def _drain(self, w: int) -> None:
        """Discard the reply of a command the caller gave up on (timeout, Ctrl-C)."""
        try:
            self._gather([w], DRAIN_TIMEOUT_S, "drain")
        except EnvTimeoutError:
            self.workers[w].kill()
            self._awaiting.pop(w, None)
        self._replies.pop(w, None)

    def _gather(self, ws: Sequence[int], timeout: float | None, method: str) -> dict[int, tuple[bool, Any]]:
        """Replies of workers ``ws``; EnvTimeoutError (keeping what arrived) after ``timeout``."""
        deadline = None if timeout is None else time.monotonic() + timeout
        waiting = [w for w in ws if w not in self._replies]
        for w in [w for w in waiting if self.workers[w].is_local]:
            self._replies[w] = self.workers[w].recv()  # the parent's own slice, stepped now
            self._awaiting.pop(w, None)
            waiting.remove(w)
        while waiting:
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready = self.worker_class.wait([self.workers[w] for w in waiting], remaining)
            if not ready:
                if timeout is None:  # no deadline: [] was a spurious wake-up, wait on
                    continue
                raise self._timeout_error(waiting, method, timeout)
            for worker in ready:
                try:
                    self._replies[worker.index] = worker.recv()
                except WorkerDied as died:
                    self._replies[worker.index] = (False, died)
                self._awaiting.pop(worker.index, None)
                waiting.remove(worker.index)
        return {w: self._replies.pop(w) for w in ws}

    def _timeout_error(self, waiting: list[int], method: str, timeout: float) -> EnvTimeoutError:
        busy = [i for w in waiting for i in self.workers[w].env_indices]
        return EnvTimeoutError(
            f"{type(self).__name__}.{method}: envs {busy} (workers {waiting}) did not answer within "
            f"{timeout} s", env_indices=busy, method=method, timeout=timeout)

    def _error(self, w: int, failure: WorkerFailure | WorkerDied, method: str) -> EnvWorkerError:
        worker = self.workers[w]
        if isinstance(failure, WorkerDied):
            return EnvWorkerError(
                f"worker {w} (envs {worker.first_index}..{worker.stop - 1}) {failure.reason} during "
                f"{method}()", env_index=worker.first_index, worker_index=w, method=method)
        where = f"env {failure.env_index}" if failure.env_index is not None else f"worker {w}"
        return EnvWorkerError(
            f"{where} (worker {w}) raised in {failure.method}(): {failure.summary}\n\n"
            f"Remote traceback:\n{failure.traceback}",
            env_index=failure.env_index, worker_index=w, method=failure.method,
            remote_traceback=failure.traceback)

    def _results(self, replies: dict[int, tuple[bool, Any]], method: str) -> dict[int, Any]:
        """The results, or the first failure raised (after every reply was collected)."""
        for w, (ok, value) in replies.items():
            if not ok:
                raise self._error(w, value, method)
        return {w: value for w, (ok, value) in replies.items()}

    def _broadcast(self, command: Command, method: str, payload_for: Callable[[Worker], Any] | None = None,
                   timeout: float | None = None) -> list[Any]:
        """Send ``command`` to every worker and return their results in worker order."""
        for worker in self.workers:
            self._send(worker.index, command, payload_for(worker) if payload_for else None)
        replies = self._gather(range(len(self.workers)), timeout or self.timeout, method)
        results = self._results(replies, method)
        return [results[w] for w in range(len(self.workers))]

    # --------------------------------------------------------------- reset / step
    def reset_async(self) -> None:
        """Start resetting every env (seeds from ``seed()``); finish with ``reset_wait``."""
        self._check_idle("reset_async")
        seeds, self._seeds = self._seeds, None
        self._send_reset(seeds)
        self._pending = "reset"

    def reset_wait(self, timeout: float | None = None) -> VecEnvObs:
        """Wait for the reset started by ``reset_async``; returns the batched observations."""
        self._check_pending("reset_wait", "reset")
        return self._finish_pending(lambda: self._reset_wait(timeout))

    def _reset(self, seeds: list[int | None] | None) -> VecEnvObs:
        self._send_reset(seeds)
        return self._reset_wait(None)

    def _send_reset(self, seeds: list[int | None] | None) -> None:
        for worker in self.workers:
            self._send(worker.index, Command.RESET, None if seeds is None else seeds[worker.first_index:worker.stop])

    def _reset_wait(self, timeout: float | None) -> VecEnvObs:
        replies = self._gather(range(len(self.workers)), timeout or self.timeout, "reset")
        for w, (ok, value) in replies.items():
            if ok:
                self._store_reset(w, value)
            else:
                self._restart(w, value, "reset")
        return self._observations()

    def _store_reset(self, w: int, result: tuple) -> None:
        infos, arrays = result
        worker = self.workers[w]
        self.reset_infos[worker.first_index:worker.stop] = infos
        if arrays is not None:
            self._store_arrays(worker.first_index, arrays)

    def _store_arrays(self, start: int, arrays: tuple) -> None:
        obs, rewards, dones = arrays
        write_rows(self.buffers.obs, start, obs)
        self.buffers.rewards[start:start + len(rewards)] = rewards
        self.buffers.dones[start:start + len(dones)] = dones

    def _observations(self) -> VecEnvObs:
        return copy_obs(self.buffers.obs) if self.copy else self.buffers.obs

    def _step_async(self, actions: Any) -> None:
        shared = self._shared_actions
        if shared is not None:
            shared[...] = actions  # the workers read their rows; only the command is sent
        for worker in self.workers:
            own = shared is None or worker.is_local
            self._send(worker.index, Command.STEP, actions[worker.first_index:worker.stop] if own else None)

    def _step_wait(self, timeout: float | None) -> VecEnvStepReturn:
        replies = self._gather(range(len(self.workers)), timeout or self.timeout, "step")
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        for w, (ok, value) in replies.items():
            if ok:
                self._store_step(w, value, infos)
            else:
                self._flag_restarted(w, self._restart(w, value, "step"), infos)
        return self._observations(), self.buffers.rewards.copy(), self.buffers.dones.copy(), infos

    def _store_step(self, w: int, result: tuple, infos: list[dict[str, Any]]) -> None:
        sparse, new_reset_infos, arrays = result
        first = self.workers[w].first_index
        if arrays is not None:
            self._store_arrays(first, arrays)
        for k, info in sparse.items():
            infos[first + k] = info
        for i in range(first, self.workers[w].stop):
            if self.buffers.dones[i]:
                self.reset_infos[i] = new_reset_infos.get(i - first, {})

    def _flag_restarted(self, w: int, error: str, infos: list[dict[str, Any]]) -> None:
        worker = self.workers[w]
        for i in worker.env_indices:
            infos[i] = {"env_restarted": True, "error": error}
        self.buffers.rewards[worker.first_index:worker.stop] = 0.0
        self.buffers.dones[worker.first_index:worker.stop] = True

    # -------------------------------------------------------------------- restart
    def _restart(self, w: int, failure: WorkerFailure | WorkerDied, method: str) -> str:
        """Replace worker ``w`` with a fresh one whose envs are reset; returns the error text."""
        error = self._error(w, failure, method)
        if self.on_error != "restart":
            raise error
        if self.restarts >= self.max_restarts:
            raise EnvWorkerError(f"{error} (max_restarts={self.max_restarts} reached)",
                                 env_index=error.env_index, worker_index=w, method=method,
                                 remote_traceback=error.remote_traceback) from error
        self.restarts += 1
        old = self.workers[w]
        old.kill()
        self._awaiting.pop(w, None)
        self._replies.pop(w, None)
        self.workers[w] = self._new_worker(w, old.first_index, old.stop)
        self._send(w, Command.GET_SPACES, None)
        self._results(self._gather([w], self._start_timeout(), "__init__"), "__init__")
        self._prepare_worker(w)
        self._send(w, Command.RESET, None)
        self._store_reset(w, self._results(self._gather([w], self.timeout, "reset"), "reset")[w])
        return str(error).split("\n\nRemote traceback:")[0]

    # ------------------------------------------------------------------ env access
    def _reset_single_env(self, index: int, seed: int | None) -> Any:
        w = self._worker_of[index]
        first = self.workers[w].first_index
        self._send(w, Command.RESET_ONE, (index - first, seed))
        obs, info = self._results(self._gather([w], self.timeout, "reset"), "reset")[w]
        self.reset_infos[index] = info
        return obs

    def _env_call(self, command: Command, method: str, indices: VecEnvIndices,
                  payload: Callable[[list[int]], Any]) -> list[Any]:
        self._check_idle(method)
        groups: dict[int, list[tuple[int, int]]] = {}
        for pos, i in enumerate(self._indices(indices, method)):
            w = self._worker_of[i]
            groups.setdefault(w, []).append((pos, i - self.workers[w].first_index))
        for w, items in groups.items():
            self._send(w, command, payload([k for _, k in items]))
        results = self._results(self._gather(list(groups), self.timeout, method), method)
        out: list[Any] = [None] * sum(len(items) for items in groups.values())
        for w, items in groups.items():
            for (pos, _), value in zip(items, results[w]):
                out[pos] = value
        return out

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        return self._env_call(Command.GET_ATTR, "get_attr", indices, lambda ks: (attr_name, ks))

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        self._env_call(Command.SET_ATTR, "set_attr", indices, lambda ks: (attr_name, value, ks))

    def env_method(self, method_name: str, *method_args: Any, indices: VecEnvIndices = None,
                   **method_kwargs: Any) -> list[Any]:
        return self._env_call(Command.ENV_METHOD, "env_method", indices,
                              lambda ks: (method_name, method_args, method_kwargs, ks))

    def env_is_wrapped(self, wrapper_class: type, indices: VecEnvIndices = None) -> list[bool]:
        return self._env_call(Command.ENV_IS_WRAPPED, "env_is_wrapped", indices, lambda ks: (wrapper_class, ks))

    def get_images(self) -> list[np.ndarray]:
        self._check_idle("get_images")
        return [img for images in self._broadcast(Command.GET_IMAGES, "render") for img in images]

    # ------------------------------------------------------------ states (planning)
    def _get_states(self, indices: list[int]) -> list[Any]:
        return self._env_call(Command.GET_STATES, "get_states", indices, lambda ks: ks)

    def _set_states(self, states: list[Any], indices: list[int]) -> None:
        """One SET_STATES message per worker, with that worker's states and env numbers."""
        by_worker: dict[int, tuple[list[Any], list[int]]] = {}
        for i, state in zip(indices, states):
            w = self._worker_of[i]
            batch, ks = by_worker.setdefault(w, ([], []))
            batch.append(state)
            ks.append(i - self.workers[w].first_index)
        for w, payload in by_worker.items():
            self._send(w, Command.SET_STATES, payload)
        self._results(self._gather(list(by_worker), self.timeout, "set_states"), "set_states")

    def _step_batch(self, actions: Any, states: list[Any] | None, dts: list[int],
                    return_states: bool) -> tuple[VecEnvObs, list[tuple]]:
        """One STEP_BATCH message per worker; a failure raises (no restart: the caller owns the states)."""
        for worker in self.workers:
            a, b = worker.first_index, worker.stop
            self._send(worker.index, Command.STEP_BATCH,
                       (actions[a:b], None if states is None else states[a:b], dts[a:b], return_states))
        results = self._results(self._gather(range(len(self.workers)), self.timeout, "step_batch"), "step_batch")
        outcomes: list[tuple] = []
        for w in range(len(self.workers)):
            worker_outcomes, arrays = results[w]
            if arrays is not None:
                self._store_arrays(self.workers[w].first_index, arrays)
            outcomes.extend(worker_outcomes)
        return self._observations(), outcomes

    # ---------------------------------------------------------------------- close
    def close_extras(self) -> None:
        """Ask every worker to close its envs, then end the workers and free the buffers."""
        failure = None
        try:
            for w in list(self._awaiting):
                self._drain(w)
            for worker in self.workers:
                self._send(worker.index, Command.CLOSE, None)
            replies = self._gather(range(len(self.workers)), CLOSE_TIMEOUT_S, "close")
            failure = next((self._error(w, v, "close") for w, (ok, v) in replies.items()
                            if not ok and not isinstance(v, WorkerDied)), None)
        except EnvTimeoutError:
            pass  # the workers still busy are killed below
        finally:
            for worker in self.workers:
                worker.shutdown(CLOSE_TIMEOUT_S)
            vars(self).pop("buffers", None)  # drop our views: shared memory is unmapped now
            self._shared_actions = None
            self._finalizer()
        if failure is not None:
            raise failure
