"""WorkerVecEnv: the parent side of every worker backend, whatever the transport.

Slicing envs into workers and the VecEnv API over them live here once, with the command
round trips in a ``Messenger`` and the restart policy in a ``RestartPolicy``; a transport
(SubprocVecEnv, RayVecEnv) only says how to start a ``Worker`` and, optionally, how to
share the batch buffers with it.
"""
from __future__ import annotations

import math
import os
import time
import warnings
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from vec_envs.arguments import check_int, check_timeout
from vec_envs.async_envs import EnvStatus, check_batch_size
from vec_envs.cpus import available_cpus
from vec_envs.errors import EnvTimeoutError, EnvWorkerError, VecEnvError
from vec_envs.spaces.batching import BatchBuffers, copy_obs, is_fixed_size, write_rows
from vec_envs.stepping.env_slice import with_terminal
from vec_envs.types import EnvFn, VecEnvIndices, VecEnvObs, VecEnvRecvReturn, VecEnvStepReturn
from vec_envs.vec_env_base import VecEnvBase
from vec_envs.workers import fork_safety
from vec_envs.workers.async_batches import AsyncBatches, BatchHost
from vec_envs.workers.local_worker import LocalWorker
from vec_envs.workers.messenger import DRAIN_TIMEOUT_S, Messenger
from vec_envs.workers.protocol import (
    Arrays,
    Command,
    EnvIsWrappedRequest,
    EnvMethodRequest,
    GetAttrRequest,
    GetStatesRequest,
    Outcome,
    ResetOneReply,
    ResetOneRequest,
    ResetReply,
    ResetRequest,
    SetAttrRequest,
    SetStatesRequest,
    SpacesReply,
    StepBatchReply,
    StepBatchRequest,
    StepReply,
    WorkerFailure,
)
from vec_envs.workers.restart_policy import RestartPolicy
from vec_envs.workers.worker import Worker, WorkerDied

__all__ = ["WorkerVecEnv", "resolve_in_series", "split_into_slices"]

CLOSE_TIMEOUT_S = 10.0  # close(): every worker together closes its envs within this, or is killed
EXIT_TIMEOUT_S = 1.0  # a worker that answered CLOSE has this long to exit before it is killed
KILLED_AT_CLOSE = ("{cls}.close(): envs {envs} (workers {workers}) were still busy after {seconds:.1f} s and were "
                   "killed (their envs were not closed)")


def resolve_in_series(in_series: int | str, num_envs: int, cpus: int | None = None) -> int:
    """Envs per worker: an int as given, "auto" for about one worker per CPU (``cpus``, by
    default those this process may use: ``vec_envs.cpus``)."""
    if in_series == "auto":
        return math.ceil(num_envs / min(num_envs, cpus or available_cpus()))
    return min(check_int("in_series", in_series, alternatives="or 'auto'"), num_envs)


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

    _worker_class: type[Worker]

    def __init__(self, env_fns: Sequence[EnvFn], in_series: int | str = "auto", copy: bool = True,
                 timeout: float | None = None, on_error: str = "raise", max_restarts: int = 10,
                 step_in_parent: bool = False, batch_size: int | None = None) -> None:
        if len(env_fns) == 0:
            raise ValueError(f"{type(self).__name__}: env_fns is empty (expected at least one env factory)")
        check_batch_size(batch_size, len(env_fns), type(self).__name__)  # before any worker starts
        self.restart_policy = RestartPolicy(on_error, check_int("max_restarts", max_restarts, minimum=0))
        self._env_fns = list(env_fns)
        self.in_series = resolve_in_series(in_series, len(env_fns))
        self.copy, self.timeout = copy, check_timeout(timeout)
        self.close_timeout = CLOSE_TIMEOUT_S  #: seconds close() gives all workers together
        self._owner_pid = os.getpid()  # a forked child's copy leaves the workers alone
        self.step_in_parent = step_in_parent
        self._shared_actions: np.ndarray | None = None
        self._batch_size = batch_size
        self._batches: AsyncBatches | None = None
        self.workers: list[Worker] = []
        self.messenger = Messenger(type(self).__name__, self.workers, self._worker_class)
        self._resources: list[Any] = []
        self._finalizer = weakref.finalize(self, _kill_all, self.workers, self._resources)
        fork_safety.register(self)
        try:
            self._start(split_into_slices(len(env_fns), self.in_series))
        except BaseException:
            self._finalizer()
            raise

    def _start(self, slices: list[tuple[int, int]]) -> None:
        self._local_index = len(slices) - 1 if self.step_in_parent else None
        self.workers.extend(self._new_worker(w, a, b) for w, (a, b) in enumerate(slices))
        self._worker_of = [w for w, (a, b) in enumerate(slices) for _ in range(a, b)]
        spaces: list[SpacesReply] = self.messenger.broadcast(Command.GET_SPACES, "__init__", self._start_timeout())
        observation_space, action_space = spaces[0]
        for w, (obs_space, act_space) in enumerate(spaces):
            if (obs_space, act_space) != (observation_space, action_space):
                raise EnvWorkerError(
                    f"envs {self.workers[w].first_index}.. have spaces {obs_space}, {act_space}, but env 0 "
                    f"has {observation_space}, {action_space}: every env must have the same spaces",
                    env_index=self.workers[w].first_index, worker_index=w, method="__init__")
        super().__init__(len(self._env_fns), observation_space, action_space, self._batch_size)
        self.buffers = self._make_buffers()
        for w in range(len(self.workers)):
            self._prepare_worker(w)

    def _new_worker(self, index: int, first: int, stop: int) -> Worker:
        if index == self._local_index:
            return LocalWorker(index, self._env_fns[first:stop], first, stop)
        return self._start_worker(index, first, stop)

    @property
    def on_error(self) -> str:
        return self.restart_policy.on_error

    @property
    def max_restarts(self) -> int:
        return self.restart_policy.max_restarts

    @property
    def restarts(self) -> int:
        """Workers replaced so far (``on_error="restart"``)."""
        return self.restart_policy.restarts

    # ------------------------------------------------------------- transport hooks
    def _start_worker(self, index: int, first: int, stop: int) -> Worker:
        raise NotImplementedError

    def _start_timeout(self) -> float | None:
        """Seconds new workers may take to build their envs and answer (default: ``timeout``)."""
        return self.timeout

    def _make_buffers(self) -> BatchBuffers:
        """The parent's batch buffers (default: local arrays the replies are copied into)."""
        return BatchBuffers.allocate(self.observation_space, self.num_envs)

    def _make_async_batches(self) -> AsyncBatches:
        """The parent's side of recv/send (default: one command per group of envs per worker)."""
        return AsyncBatches(self._batch_host())

    def _batch_host(self) -> BatchHost:
        """What the recv/send machinery may use of this VecEnv."""
        return BatchHost(type(self).__name__, self.workers, self.messenger, np.asarray(self._worker_of, np.int64),
                         self.buffers, self.reset_infos, self._restart, self._ended_info, self._returned_envs)

    def _prepare_worker(self, w: int) -> None:
        """Called once per (re)started worker, after its spaces were checked.

        A local worker steps straight into the parent's buffers; transports extend this
        to share memory with their workers.
        """
        worker = self.workers[w]
        if isinstance(worker, LocalWorker) and is_fixed_size(self.observation_space):
            worker.server.attach(self.buffers.view(worker.first_index, worker.stop))
        # (observations of no fixed size are batched in lists, and a slice of a list is a
        # copy: the local worker then returns its rows, as a remote one does)

    # --------------------------------------------------------------- reset / step
    def reset_async(self) -> None:
        """Start resetting every env (seeds from ``seed()``, options from ``set_options()``);
        finish with ``reset_wait``."""
        self._check_idle("reset_async")
        self._send_reset(*self._take_reset_args())
        self._pending = "reset"

    def reset_wait(self, timeout: float | None = None) -> VecEnvObs:
        """Wait for the reset started by ``reset_async``; returns the batched observations."""
        self._check_pending("reset_wait", "reset")
        timeout = check_timeout(timeout, "reset_wait(): timeout")
        return self._finish_pending(lambda: self._reset_wait(timeout))

    def _reset(self, seeds: list[int | None] | None, options: list[dict[str, Any]] | None) -> VecEnvObs:
        self._send_reset(seeds, options)
        return self._reset_wait(None)

    def _send_reset(self, seeds: list[int | None] | None, options: list[dict[str, Any]] | None) -> None:
        for worker in self.workers:
            self.messenger.send(worker.index, Command.RESET,
                                ResetRequest.of_slice(seeds, options, worker.first_index, worker.stop))

    def _reset_wait(self, timeout: float | None) -> VecEnvObs:
        outcomes = self.messenger.gather(range(len(self.workers)), self._wait_timeout(timeout), "reset")
        for w, (ok, value) in outcomes.items():
            if ok:
                self._store_reset(w, value)
            else:
                self._restart(w, value, "reset")
        return self._observations()

    def _store_reset(self, w: int, reply: ResetReply) -> None:
        worker = self.workers[w]
        self.reset_infos[worker.first_index:worker.stop] = reply.infos
        if reply.arrays is not None:
            self._store_arrays(worker.first_index, reply.arrays)

    def _store_arrays(self, start: int, arrays: Arrays) -> None:
        write_rows(self.buffers.obs, start, arrays.obs)
        self.buffers.rewards[start:start + len(arrays.rewards)] = arrays.rewards
        self.buffers.dones[start:start + len(arrays.dones)] = arrays.dones

    def _wait_timeout(self, timeout: float | None) -> float | None:
        """A wait's limit: ``timeout`` if given (0: don't wait), else the constructor's."""
        return self.timeout if timeout is None else timeout

    def _observations(self) -> VecEnvObs:
        return copy_obs(self.buffers.obs) if self.copy else self.buffers.obs

    def _step_async(self, actions: Any) -> None:
        shared = self._shared_actions
        if shared is not None:
            shared[...] = actions  # the workers read their rows; only the command is sent
        for worker in self.workers:
            own = shared is None or worker.is_local
            self.messenger.send(worker.index, Command.STEP, actions[worker.first_index:worker.stop] if own else None)

    def _step_wait(self, timeout: float | None) -> VecEnvStepReturn:
        outcomes = self.messenger.gather(range(len(self.workers)), self._wait_timeout(timeout), "step")
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        failed = []
        for w, (ok, value) in outcomes.items():
            if ok:
                self._store_step(w, value, infos)
            else:
                failed.append((w, value))
        if self.buffers.terminal_obs is not None:
            self._store_ended(outcomes, infos)
        for w, failure in failed:
            self._flag_restarted(w, self._restart(w, failure, "step"), infos)
        return self._observations(), self.buffers.rewards.copy(), self.buffers.dones.copy(), infos

    def _store_step(self, w: int, reply: StepReply, infos: list[dict[str, Any]]) -> None:
        """Store worker ``w``'s rows and infos; without terminal rows, only envs with an
        info can have ended (StepReply), and their reset infos are stored here."""
        first = self.workers[w].first_index
        if reply.arrays is not None:
            self._store_arrays(first, reply.arrays)
        dones = self.buffers.dones
        terminal_rows = self.buffers.terminal_obs is not None
        for k, info in reply.infos.items():
            infos[first + k] = info
            if dones[first + k] and not terminal_rows:
                self.reset_infos[first + k] = reply.reset_infos.get(k, {})

    def _store_ended(self, outcomes: dict[int, Outcome], infos: list[dict[str, Any]]) -> None:
        """The envs that ended, found by their done flag (workers that answered only): their
        terminal observation from the terminal rows, their reset info from the reply."""
        worker_of, workers = self._worker_of, self.workers
        for i in np.flatnonzero(self.buffers.dones).tolist():
            ok, reply = outcomes[worker_of[i]]
            if ok:
                infos[i] = with_terminal(self.buffers, i, infos[i])
                self.reset_infos[i] = reply.reset_infos.get(i - workers[worker_of[i]].first_index, {})

    def _ended_info(self, i: int, info: dict[str, Any]) -> dict[str, Any]:
        """Env ``i`` ended: its info, with its terminal observation if that is in the buffers."""
        return info if self.buffers.terminal_obs is None else with_terminal(self.buffers, i, info)

    def _flag_restarted(self, w: int, error: str, infos: list[dict[str, Any]]) -> None:
        worker = self.workers[w]
        for i in worker.env_indices:
            infos[i] = {"env_restarted": True, "error": error}
        self.buffers.rewards[worker.first_index:worker.stop] = 0.0
        self.buffers.dones[worker.first_index:worker.stop] = True

    # ---------------------------------------------------------- asynchronous batches
    @property
    def _async_batches(self) -> AsyncBatches:
        """The recv/send machinery, made at the first ``async_reset``."""
        if self._batches is None:
            self._batches = self._make_async_batches()
        return self._batches

    def _async_reset(self, seeds: list[int | None] | None, options: list[dict[str, Any]] | None) -> None:
        self._async_batches.reset(seeds, options)

    def _send(self, actions: Any, env_ids: np.ndarray) -> None:
        self._async_batches.send(actions, env_ids)

    def _recv(self, count: int, timeout: float | None) -> VecEnvRecvReturn:
        obs, rewards, dones, infos, env_ids = self._async_batches.recv(count, self._wait_timeout(timeout))
        return obs, rewards, dones, infos, env_ids

    def _returned_envs(self) -> np.ndarray:
        """The envs returned by ``recv`` that wait for their ``send``."""
        return np.flatnonzero(self._async.status == EnvStatus.RETURNED)

    # -------------------------------------------------------------------- restart
    def _restart(self, w: int, failure: WorkerFailure | WorkerDied, method: str) -> str:
        """Replace worker ``w`` if the policy allows (else raise); returns the error text."""
        error = self.messenger.error(w, failure, method)
        self.restart_policy.admit(error, method)
        self._replace_worker(w)
        return str(error).split("\n\nRemote traceback:")[0]

    def _replace_worker(self, w: int) -> None:
        """Kill worker ``w`` and start a fresh one over the same envs, reset."""
        old = self.workers[w]
        old.kill()
        self.messenger.forget(w)
        self.workers[w] = self._new_worker(w, old.first_index, old.stop)
        self.messenger.round_trip(w, Command.GET_SPACES, None, self._start_timeout(), "__init__")
        self._prepare_worker(w)
        self._store_reset(w, self.messenger.round_trip(w, Command.RESET, ResetRequest(None), self.timeout, "reset"))

    # ------------------------------------------------------------------ env access
    def _reset_single_env(self, index: int, seed: int | None) -> Any:
        w = self._worker_of[index]
        request = ResetOneRequest(index - self.workers[w].first_index, seed)
        reply: ResetOneReply = self.messenger.round_trip(w, Command.RESET_ONE, request, self.timeout, "reset")
        self.reset_infos[index] = reply.info
        return reply.obs

    def _env_call(self, command: Command, method: str, indices: VecEnvIndices,
                  request: Callable[[list[int]], Any]) -> list[Any]:
        """Send ``request(ks)`` to each worker holding some of ``indices`` (``ks``: their
        places in its slice); the replies, one per index, in the order of ``indices``."""
        self._check_idle(method)
        groups: dict[int, list[tuple[int, int]]] = {}
        for pos, i in enumerate(self._indices(indices, method)):
            w = self._worker_of[i]
            groups.setdefault(w, []).append((pos, i - self.workers[w].first_index))
        for w, items in groups.items():
            self.messenger.send(w, command, request([k for _, k in items]))
        results = self.messenger.results(self.messenger.gather(list(groups), self.timeout, method), method)
        out: list[Any] = [None] * sum(len(items) for items in groups.values())
        for w, items in groups.items():
            for (pos, _), value in zip(items, results[w]):
                out[pos] = value
        return out

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        return self._env_call(Command.GET_ATTR, "get_attr", indices, lambda ks: GetAttrRequest(attr_name, ks))

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        self._env_call(Command.SET_ATTR, "set_attr", indices, lambda ks: SetAttrRequest(attr_name, value, ks))

    def env_method(self, method_name: str, *method_args: Any, indices: VecEnvIndices = None,
                   **method_kwargs: Any) -> list[Any]:
        return self._env_call(Command.ENV_METHOD, "env_method", indices,
                              lambda ks: EnvMethodRequest(method_name, method_args, method_kwargs, ks))

    def env_is_wrapped(self, wrapper_class: type, indices: VecEnvIndices = None) -> list[bool]:
        return self._env_call(Command.ENV_IS_WRAPPED, "env_is_wrapped", indices,
                              lambda ks: EnvIsWrappedRequest(wrapper_class, ks))

    def get_images(self) -> list[np.ndarray]:
        self._check_idle("get_images")
        return [img for images in self.messenger.broadcast(Command.GET_IMAGES, "render", self.timeout)
                for img in images]

    # ------------------------------------------------------------ states (planning)
    def _get_states(self, indices: list[int]) -> list[Any]:
        return self._env_call(Command.GET_STATES, "get_states", indices, GetStatesRequest)

    def _set_states(self, states: list[Any], indices: list[int]) -> None:
        """One SET_STATES message per worker, with that worker's states and env numbers."""
        by_worker: dict[int, SetStatesRequest] = {}
        for i, state in zip(indices, states):
            w = self._worker_of[i]
            request = by_worker.setdefault(w, SetStatesRequest([], []))
            request.states.append(state)
            request.ks.append(i - self.workers[w].first_index)
        for w, request in by_worker.items():
            self.messenger.send(w, Command.SET_STATES, request)
        self.messenger.results(self.messenger.gather(list(by_worker), self.timeout, "set_states"), "set_states")

    def _step_batch(self, actions: Any, states: list[Any] | None, dts: list[int],
                    return_states: bool) -> tuple[VecEnvObs, list[tuple]]:
        """One STEP_BATCH message per worker; a failure raises (no restart: the caller owns the states)."""
        for worker in self.workers:
            a, b = worker.first_index, worker.stop
            request = StepBatchRequest(actions[a:b], None if states is None else states[a:b], dts[a:b], return_states)
            self.messenger.send(worker.index, Command.STEP_BATCH, request)
        outcomes = self.messenger.gather(range(len(self.workers)), self.timeout, "step_batch")
        replies: dict[int, StepBatchReply] = self.messenger.results(outcomes, "step_batch")
        results: list[tuple] = []
        for w, reply in sorted(replies.items()):
            if reply.arrays is not None:
                self._store_arrays(self.workers[w].first_index, reply.arrays)
            results.extend(reply.outcomes)
        return self._observations(), results

    # ---------------------------------------------------------------------- close
    def _drop_views(self) -> None:
        """Drop every view of the batch buffers, so shared memory is unmapped at once."""
        vars(self).pop("buffers", None)
        self._shared_actions = None
        self._batches = None

    def close_extras(self) -> None:
        """Ask every worker to close its envs, then end the workers and free the buffers.

        One deadline (``close_timeout``) covers every worker together: late replies are
        drained, CLOSE is answered, processes exit. A worker still busy then is killed and
        a RuntimeWarning names its envs; one whose pipe a Ctrl-C cut is killed at once.
        """
        if os.getpid() != self._owner_pid:
            self._drop_views()
            return  # a forked copy: the workers are the parent's (see fork_safety)
        start = time.monotonic()
        deadline = start + self.close_timeout
        late: list[int] = []
        closed: list[int] = []
        failure = None
        try:
            if self._batches is not None:
                self._batches.abort()  # envs still in flight: let them finish, read what is due
            late = self.messenger.drain_all(list(self.messenger.awaiting), min(deadline, start + DRAIN_TIMEOUT_S))
            ws = [w for w in range(len(self.workers)) if w not in late and not self.workers[w].broken]
            closed, failure = self._close_workers(ws, deadline)
            late += [w for w in ws if w not in closed and w in self.messenger.awaiting]
        finally:
            self._end_workers(closed, deadline)
            self._drop_views()
            self._finalizer()
        if late:
            envs = [i for w in sorted(late) for i in self.workers[w].env_indices]
            warnings.warn(KILLED_AT_CLOSE.format(cls=type(self).__name__, envs=envs, workers=sorted(late),
                                                 seconds=time.monotonic() - start), RuntimeWarning, stacklevel=4)
        if failure is not None:
            raise failure

    def _close_workers(self, ws: list[int], deadline: float) -> tuple[list[int], EnvWorkerError | None]:
        """Send CLOSE to workers ``ws``: those that answered by ``deadline``, and the first
        env failure in closing (raised once everything is released)."""
        for w in ws:
            self.messenger.send(w, Command.CLOSE, None)
        try:
            outcomes = self.messenger.gather(ws, max(0.0, deadline - time.monotonic()), "close")
        except EnvTimeoutError:
            outcomes = self.messenger.arrived(ws)
        closed = [w for w, (ok, v) in outcomes.items() if ok or not isinstance(v, WorkerDied)]
        failure = next((self.messenger.error(w, v, "close") for w, (ok, v) in outcomes.items()
                        if not ok and not isinstance(v, WorkerDied)), None)
        return closed, failure

    def _end_workers(self, closed: list[int], deadline: float) -> None:
        """Let the workers that answered CLOSE exit (by ``deadline``, within a second);
        kill every other one now."""
        for worker in self.workers:
            if worker.index not in closed:
                worker.kill()
        exit_by = min(deadline, time.monotonic() + EXIT_TIMEOUT_S)
        for w in closed:
            self.workers[w].shutdown(max(0.0, exit_by - time.monotonic()))
        for w in range(len(self.workers)):
            self.messenger.forget(w)

    # ------------------------------------------------------------------ fork safety
    def _forget_workers_after_fork(self) -> None:
        """In a forked child: leave the workers to the parent (called by ``fork_safety``)."""
        self._finalizer.detach()
        for worker in self.workers:
            worker.forget()

    def _check_open(self, method: str) -> None:
        super()._check_open(method)
        if os.getpid() != self._owner_pid:
            raise VecEnvError(fork_safety.FORKED_COPY.format(cls=type(self).__name__, method=method,
                                                             owner=self._owner_pid, pid=os.getpid()))
