"""WorkerVecEnv: the parent side of every worker backend, whatever the transport.

Slicing envs into workers and the VecEnv API over them live here once: every reset and
step, lock-step or recv/send, goes through one ``Requests`` object (``requests.py``), the
other commands' round trips through a ``Messenger``, and the restart policy is a
``RestartPolicy``. A transport (SubprocVecEnv, RayVecEnv) only says how to start a
``Worker`` and, optionally, how to share the batch buffers with it and how its requests
travel.
"""
from __future__ import annotations

import math
import os
import time
import warnings
import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np

from vec_envs.arguments import check_env_fns, check_int, check_timeout, resolve_autoreset_mode
from vec_envs.async_envs import check_batch_size
from vec_envs.autoreset import AutoresetMode
from vec_envs.cpus import available_cpus
from vec_envs.errors import EnvTimeoutError, EnvWorkerError
from vec_envs.spaces.batching import BatchBuffers, copy_obs, create_batch, is_fixed_size, make_writer
from vec_envs.types import EnvFn, VecEnvObs, VecEnvRecvReturn, VecEnvStepReturn
from vec_envs.vec_env_base import VecEnvBase
from vec_envs.workers import fork_safety
from vec_envs.workers.env_access import WorkerEnvAccess
from vec_envs.workers.local_worker import LocalWorker
from vec_envs.workers.messenger import DRAIN_TIMEOUT_S, Messenger
from vec_envs.workers.protocol import (
    Command,
    DeferResetsRequest,
    ResetEnvsReply,
    ResetEnvsRequest,
    ResetReply,
    ResetRequest,
    SpacesReply,
    WorkerFailure,
)
from vec_envs.workers.requests import CommandRequests, RequestHost, Requests, store_arrays
from vec_envs.workers.restart_policy import RestartPolicy
from vec_envs.workers.shutdown import close_workers, end_workers
from vec_envs.workers.worker import Worker, WorkerDied

__all__ = ["WorkerVecEnv", "resolve_in_series", "split_into_slices"]

CLOSE_TIMEOUT_S = 10.0  # close(): every worker together closes its envs within this, or is killed
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


class WorkerVecEnv(WorkerEnvAccess, VecEnvBase):
    """Envs in workers, each stepping a contiguous slice of envs in series.

    Subclasses implement ``_start_worker`` and may override ``_make_buffers`` /
    ``_prepare_worker`` to share memory with their workers and ``_make_requests`` to send
    requests their own way. With ``step_in_parent`` the last slice is stepped by the
    parent itself (a ``LocalWorker``) while the workers step theirs. The env-access methods
    are ``WorkerEnvAccess``'s.
    """

    _worker_class: type[Worker]

    def __init__(self, env_fns: Sequence[EnvFn], in_series: int | str = "auto", copy: bool = True,
                 timeout: float | None = None, on_error: str = "raise", max_restarts: int = 10,
                 step_in_parent: bool = False, batch_size: int | None = None,
                 autoreset_mode: AutoresetMode | str = AutoresetMode.SAME_STEP) -> None:
        env_fns = check_env_fns(env_fns, type(self).__name__, picklable=False)
        check_batch_size(batch_size, len(env_fns), type(self).__name__)  # before any worker starts
        self._autoreset_mode = resolve_autoreset_mode(autoreset_mode, type(self).__name__)
        self.restart_policy = RestartPolicy(on_error, check_int("max_restarts", max_restarts, minimum=0))
        self._env_fns = list(env_fns)
        self.in_series = resolve_in_series(in_series, len(env_fns))
        self.copy, self.timeout = copy, check_timeout(timeout)
        self.close_timeout = CLOSE_TIMEOUT_S  #: seconds close() gives all workers together
        self._owner_pid = os.getpid()  # a forked child's copy leaves the workers alone
        self._resetting: ResetRequest | None = None  # a reset() out: a worker replaced meanwhile gets it too
        self.step_in_parent = step_in_parent
        self._batch_size = batch_size
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
        spaces = self.messenger.broadcast(Command.GET_SPACES, "__init__", self._start_timeout(), SpacesReply)
        observation_space, action_space = spaces[0]
        for w, (obs_space, act_space) in enumerate(spaces):
            if (obs_space, act_space) != (observation_space, action_space):
                raise EnvWorkerError(
                    f"envs {self.workers[w].first_index}.. have spaces {obs_space}, {act_space}, but env 0 "
                    f"has {observation_space}, {action_space}: every env must have the same spaces",
                    env_index=self.workers[w].first_index, worker_index=w, method="__init__")
        super().__init__(len(self._env_fns), observation_space, action_space, self._batch_size,
                         self._autoreset_mode)
        self.buffers = self._make_buffers()
        for w in range(len(self.workers)):
            self._prepare_worker(w)
            self._defer_resets(w, pending=False)
        self.requests = self._make_requests(RequestHost(
            type(self).__name__, self.workers, self.messenger, np.asarray(self._worker_of, np.int64), self.buffers,
            self.reset_infos, self._async, self._restart, self.autoreset_mode is not AutoresetMode.SAME_STEP))

    def _defer_resets(self, w: int, pending: bool) -> bool:
        """Under next-step and disabled autoreset: worker ``w`` resets an ended env at its next
        step (``pending``: every env's next step is its reset). Whether it was told so."""
        if self.autoreset_mode is AutoresetMode.SAME_STEP:
            return False
        self.messenger.round_trip(w, Command.DEFER_RESETS, DeferResetsRequest(pending), self._start_timeout(),
                                  "__init__", type(None))
        return True

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

    def _make_requests(self, host: RequestHost) -> Requests:
        """How resets and steps reach the envs (default: one command per group of envs per worker)."""
        return CommandRequests(host)

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
        self._mend()
        seeds, options = self._take_reset_args()
        self._resetting = ResetRequest(seeds, options)
        self.requests.reset(seeds, options)
        self._pending = "reset"

    def reset_wait(self, timeout: float | None = None) -> VecEnvObs:
        """Wait for the reset started by ``reset_async``; returns the batched observations."""
        self._check_pending("reset_wait", "reset")
        timeout = check_timeout(timeout, "reset_wait(): timeout")
        return self._finish_pending(lambda: self._reset_wait(timeout))

    def _reset(self, seeds: list[int | None] | None, options: list[dict[str, Any]] | None) -> VecEnvObs:
        self._mend()
        self._resetting = ResetRequest(seeds, options)
        self.requests.reset(seeds, options)
        return self._reset_wait(None)

    def _reset_wait(self, timeout: float | None) -> VecEnvObs:
        try:
            self.requests.collect(self._wait_timeout(timeout))
        except EnvTimeoutError:
            raise  # still out: a worker replaced while it is waited for again gets its seeds too
        except BaseException:
            self._resetting = None
            raise
        self._resetting = None
        return self._observations()

    def _wait_timeout(self, timeout: float | None) -> float | None:
        """A wait's limit: ``timeout`` if given (0: don't wait), else the constructor's."""
        return self.timeout if timeout is None else timeout

    def _observations(self) -> VecEnvObs:
        obs = self.buffers.obs
        if not self.copy:
            return obs
        return obs.copy() if type(obs) is np.ndarray else copy_obs(obs)

    def _step_async(self, actions: Any) -> None:
        self.requests.send(actions)

    def _step_wait(self, timeout: float | None) -> VecEnvStepReturn:
        infos = self.requests.collect(self.timeout if timeout is None else timeout)
        buffers = self.buffers
        obs = buffers.obs
        if self.copy:
            obs = obs.copy() if type(obs) is np.ndarray else copy_obs(obs)
        return obs, buffers.rewards.copy(), buffers.dones.copy(), infos

    def _reset_envs(self, indices: list[int], seeds: list[int | None], options: list[dict[str, Any]]) -> VecEnvObs:
        """One RESET_ENVS per worker holding some of ``indices``, all out together."""
        groups: dict[int, list[int]] = {}
        for j, i in enumerate(indices):
            groups.setdefault(self._worker_of[i], []).append(j)
        for w, places in groups.items():
            first = self.workers[w].first_index
            request = ResetEnvsRequest([indices[j] - first for j in places], [seeds[j] for j in places],
                                       [options[j] for j in places])
            self.messenger.send(w, Command.RESET_ENVS, request)
        outcomes = self.messenger.gather(list(groups), self.timeout, "reset")
        replies = self.messenger.results(outcomes, "reset", ResetEnvsReply)
        obs = create_batch(self.observation_space, len(indices))
        write = make_writer(self.observation_space, obs)
        for w, places in groups.items():
            for j, row, info in zip(places, replies[w].obs, replies[w].infos):
                write(j, row)
                self.reset_infos[indices[j]] = info
        return obs

    # ---------------------------------------------------------- asynchronous batches
    def _async_reset(self, seeds: list[int | None] | None, options: list[dict[str, Any]] | None) -> None:
        self._mend()
        self.requests.reset(seeds, options)

    def _send(self, actions: Any, env_ids: np.ndarray) -> None:
        if self.requests.owed:  # envs of a replaced worker: answered at once, flagged
            actions, env_ids = self.requests.settle_owed(actions, env_ids)
            if not len(env_ids):
                return
        self.requests.send(actions, env_ids)

    def _recv(self, count: int, timeout: float | None) -> VecEnvRecvReturn:
        return self.requests.recv(count, self.timeout if timeout is None else timeout)

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
        self.messenger.round_trip(w, Command.GET_SPACES, None, self._start_timeout(), "__init__", SpacesReply)
        self._prepare_worker(w)
        worker = self.workers[w]
        if self._resetting is not None:  # found dead by a reset(): its envs get that reset, seeds and options
            self._defer_resets(w, pending=False)
            request = ResetRequest.of_slice(self._resetting.seeds, self._resetting.options, worker.first_index,
                                            worker.stop)
        elif self._defer_resets(w, pending=True):  # as after an episode's end: the next step resets its envs
            return
        else:
            request = ResetRequest(None)
        reply = self.messenger.round_trip(w, Command.RESET, request, self.timeout, "reset", ResetReply)
        self.reset_infos[worker.first_index:worker.stop] = reply.infos
        if reply.arrays is not None:
            store_arrays(self.buffers, worker.first_index, reply.arrays)

    def _mend(self) -> None:
        """Before a reset: give up on whatever a call left out (a Ctrl-C, a failure), and
        replace each worker that had to be killed for it, or whose pipe a Ctrl-C cut (its
        envs are reset like the others; no restart is counted)."""
        late = self.requests.abort()
        awaiting = [w for w in self.messenger.awaiting if w not in late]
        self.messenger.drain_all(awaiting, time.monotonic() + DRAIN_TIMEOUT_S)
        for worker in list(self.workers):
            if not worker.usable:
                self._replace_worker(worker.index)

    # ---------------------------------------------------------------------- close
    def _drop_views(self) -> None:
        """Drop every view of the batch buffers, so shared memory is unmapped at once (an
        error's frames may still hold the request machinery: it lets go of them too)."""
        vars(self).pop("buffers", None)
        requests = vars(self).pop("requests", None)
        if requests is not None:
            requests.release()

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
            if "requests" in vars(self):
                late = self.requests.abort()  # envs still out: let them finish (else killed)
            awaiting = [w for w in self.messenger.awaiting if w not in late]
            late += self.messenger.drain_all(awaiting, min(deadline, start + DRAIN_TIMEOUT_S))
            ws = [w for w in range(len(self.workers)) if w not in late and not self.workers[w].broken]
            closed, failure = close_workers(self.messenger, ws, deadline)
            late += [w for w in ws if w not in closed and w in self.messenger.awaiting]
        finally:
            end_workers(self.messenger, self.workers, closed, deadline)
            self._drop_views()
            self._finalizer()
        if late:
            envs = [i for w in sorted(late) for i in self.workers[w].env_indices]
            warnings.warn(KILLED_AT_CLOSE.format(cls=type(self).__name__, envs=envs, workers=sorted(late),
                                                 seconds=time.monotonic() - start), RuntimeWarning, stacklevel=4)
        if failure is not None:
            raise failure

    def close_interrupted(self) -> None:
        """A close that a Ctrl-C stopped part-way: kill every worker and release the buffers now."""
        self._drop_views()
        self._finalizer()

    # ------------------------------------------------------------------ fork safety
    def _forget_workers_after_fork(self) -> None:
        """In a forked child: leave the workers to the parent (called by ``fork_safety``)."""
        self._finalizer.detach()
        for worker in self.workers:
            worker.forget()
