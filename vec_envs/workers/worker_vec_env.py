"""WorkerVecEnv: the VecEnv over workers, whatever the transport (SubprocVecEnv, RayVecEnv).

The envs are cut into contiguous slices, one per ``Worker``. Resets and steps go through a
``Scheduler``; other env access is one ``EnvCall`` per worker asked (``WorkerEnvAccess``). A failed
worker raises ``EnvWorkerError`` or, with ``on_error="restart"``, is replaced with a ``RuntimeWarning``
(counted in ``restarts``; its envs start anew, flagged). A transport says how to start a worker
and, optionally, how to share the batch buffers and which scheduler to use.
"""
from __future__ import annotations

import math
import os
import sys
import threading
import time
import warnings
import weakref
from collections.abc import Sequence
from contextlib import suppress
from typing import Any, ClassVar

import numpy as np

from vec_envs.arguments import check_batch_size, check_env_fns, check_int, check_timeout, resolve_autoreset_mode
from vec_envs.autoreset import AutoresetMode
from vec_envs.cpus import available_cpus
from vec_envs.errors import EnvTimeoutError, EnvWorkerError
from vec_envs.spaces.batching import BatchBuffers, copy_obs, create_batch, is_fixed_size, make_writer, take_rows
from vec_envs.types import EnvFn, VecEnvIndices, VecEnvObs, VecEnvRecvReturn, VecEnvStepReturn
from vec_envs.vec_env_base import VecEnvBase
from vec_envs.workers.env_slice import spaces_mismatch
from vec_envs.workers.scheduler import DID_NOT_ANSWER, CommandScheduler, Failure, Scheduler, write_rows_of
from vec_envs.workers.wire import Command, EnvCall, Reply, Reset, Spaces
from vec_envs.workers.worker import DRAIN_TIMEOUT_S, LocalWorker, Worker, WorkerDied, drain, replies

__all__ = ["ON_ERROR", "WorkerEnvAccess", "WorkerVecEnv", "resolve_in_series", "split_into_slices"]

ON_ERROR = ("raise", "restart")
CLOSE_TIMEOUT_S = 10.0  # close(): every worker together closes its envs within this, or is killed
EXIT_TIMEOUT_S = 1.0  # a worker that answered CLOSE has this long to exit before it is killed
KILLED_AT_CLOSE = ("{cls}.close(): envs {envs} (workers {workers}) were still busy after {seconds:.1f} s and were "
                   "killed (their envs were not closed)")
RESTARTED = "{cls}: {error}; the worker was replaced, its envs {envs} start anew (restart {n} of {max})"


def resolve_in_series(in_series: int | str, num_envs: int, cpus: int | None = None) -> int:
    """Envs per worker: an int as given, "auto" for about one worker per CPU (``cpus``: default ``vec_envs.cpus``)."""
    if in_series == "auto":
        return math.ceil(num_envs / min(num_envs, cpus or available_cpus()))
    return min(check_int("in_series", in_series, alternatives="or 'auto'"), num_envs)


def split_into_slices(num_envs: int, in_series: int) -> list[tuple[int, int]]:
    """Contiguous ``(start, stop)`` slices of ``in_series`` envs (the last may be shorter)."""
    return [(start, min(start + in_series, num_envs)) for start in range(0, num_envs, in_series)]


def worker_error(worker: Worker, failure: Failure, method: str) -> BaseException:
    """The error for ``worker``'s failure or death in ``method``: ``EnvWorkerError``, or our check's class."""
    w, envs = worker.index, f"envs {worker.first_index}..{worker.stop - 1}"
    if isinstance(failure, WorkerDied):
        running = worker.running_env()
        if method == "recv" and running is not None:  # recv knows no call: name the env's step
            return EnvWorkerError(f"env {running} (worker {w}) raised in step(): worker {w} {failure.reason} while "
                                  f"stepping env {running}", worker_index=w, method="step", env_index=running,
                                  env_indices=worker.env_indices)
        where = f"worker {w} ({envs})" if running is None else f"env {running} (worker {w}, {envs})"
        return EnvWorkerError(f"{where} {failure.reason} during {method}()", worker_index=w, method=method,
                              env_index=worker.first_index if running is None else running,
                              env_indices=worker.env_indices)
    if failure.raise_as is not None:
        return failure.raise_as(failure.summary)
    where = f"env {failure.env_index}" if failure.env_index is not None else f"worker {w}"
    return EnvWorkerError(f"{where} (worker {w}) raised in {failure.method}(): {failure.summary}\n\nRemote "
                          f"traceback:\n{failure.traceback}", env_index=failure.env_index,
                          env_indices=worker.env_indices, worker_index=w, method=failure.method,
                          remote_traceback=failure.traceback)


class WorkerEnvAccess(VecEnvBase):
    """A worker VecEnv's round trips other than resets and steps (the base of ``WorkerVecEnv``)."""

    workers: list[Worker]
    scheduler: Scheduler
    buffers: BatchBuffers
    timeout: float | None
    copy: bool
    #: the least seconds new workers get to build their envs and answer (a constructor timeout is raised to it)
    start_timeout_s: ClassVar[float] = 0.0

    def _round_trips(self, requests: dict[int, tuple[Command, Any]], method: str,
                     timeout: float | None = None) -> dict[int, Any]:
        """Send each worker its request; the replies' values. The first failure is raised once all came;
        a wait past ``timeout`` is an ``EnvTimeoutError``."""
        if "scheduler" in vars(self):
            self.scheduler.settle(list(requests))
        for w, (command, payload) in requests.items():
            with suppress(WorkerDied):  # found by the wait
                self.workers[w].send(command, payload)
        got = replies([self.workers[w] for w in requests], None if timeout is None else time.monotonic() + timeout)
        late = [w for w in requests if w not in got]
        if late:
            envs = [i for w in late for i in self.workers[w].env_indices]
            raise EnvTimeoutError(DID_NOT_ANSWER.format(cls=type(self).__name__, method=method, envs=envs,
                                                        workers=late, timeout=timeout),
                                  env_indices=envs, method=method, timeout=timeout or 0.0)
        for w, reply in sorted(got.items()):
            if isinstance(reply, WorkerDied) or not reply.ok:
                raise worker_error(self.workers[w], reply if isinstance(reply, WorkerDied) else reply.value, method)
        return {w: reply.value for w, reply in got.items() if isinstance(reply, Reply)}

    def _spaces(self, ws: Sequence[int]) -> Spaces:
        """Ask workers ``ws`` for their spaces: every env's must be the first's."""
        timeout = None if self.timeout is None else max(self.timeout, self.start_timeout_s)
        got = self._round_trips({w: (Command.SPACES, None) for w in ws}, "__init__", timeout)
        first = Spaces(self.observation_space, self.action_space) if "observation_space" in vars(self) else got[min(ws)]
        for w in ws:
            mismatch = spaces_mismatch(got[w], first, self.workers[w].first_index, 0)
            if mismatch is not None:
                raise ValueError(mismatch)
        return first

    def _observations(self) -> VecEnvObs:
        obs = self.buffers.obs
        if not self.copy:
            return obs
        return obs.copy() if type(obs) is np.ndarray else copy_obs(obs)

    def _env_call(self, method: str, indices: VecEnvIndices | list[int], args: tuple = (),
                  per_env: list | None = None, check: bool = True) -> list[Any]:
        """``method`` (an ``EnvCall``) on the envs named (checked if ``check``); their results in order."""
        if check:
            self._check_idle(method)
        ids = self._indices(indices, method) if check else list(indices)  # type: ignore[arg-type]
        groups: dict[int, list[int]] = {}
        for pos, i in enumerate(ids):
            groups.setdefault(int(self.scheduler.worker_of[i]), []).append(pos)
        requests = {w: (Command.ENV_CALL, EnvCall(method, [ids[p] - self.workers[w].first_index for p in places],
                                                  args, None if per_env is None else [per_env[p] for p in places]))
                    for w, places in groups.items()}
        results = self._round_trips(requests, "reset" if method == "reset_one" else method, self.timeout)
        by_pos = {pos: value for w, places in groups.items() for pos, value in zip(places, results[w])}
        return [by_pos.get(pos) for pos in range(len(ids))]

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        return self._env_call("get_attr", indices, (attr_name,))

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        self._env_call("set_attr", indices, (attr_name, value))

    def env_method(self, method_name: str, *method_args: Any, indices: VecEnvIndices = None,
                   **method_kwargs: Any) -> list[Any]:
        return self._env_call("env_method", indices, (method_name, method_args, method_kwargs))

    def env_is_wrapped(self, wrapper_class: type, indices: VecEnvIndices = None) -> list[bool]:
        return self._env_call("env_is_wrapped", indices, (wrapper_class,))

    def get_images(self) -> list[np.ndarray]:
        return self._env_call("get_images", None)

    def _get_states(self, indices: list[int]) -> list[Any]:
        return self._env_call("get_states", indices, check=False)

    def _set_states(self, states: list[Any], indices: list[int]) -> None:
        self._env_call("set_states", indices, per_env=list(states), check=False)

    def _step_batch(self, actions: Any, states: list[Any] | None, dts: list[int],
                    return_states: bool) -> tuple[VecEnvObs, list[tuple]]:
        """One ``step_from`` per env (no restart: the caller owns the states)."""
        per_env = [(None if states is None else states[i], actions[i], dts[i]) for i in range(self.num_envs)]
        outcomes = self._env_call("step_from", list(range(self.num_envs)), (return_states,), per_env, check=False)
        write = make_writer(self.observation_space, self.buffers.obs)
        for i, outcome in enumerate(outcomes):
            write(i, outcome[0])
        return self._observations(), [outcome[1:] for outcome in outcomes]

    def _reset_envs(self, indices: list[int], seeds: list[int | None], options: list[dict[str, Any]]) -> VecEnvObs:
        results = self._env_call("reset_one", indices, per_env=list(zip(seeds, options)), check=False)
        obs = create_batch(self.observation_space, len(indices))
        write = make_writer(self.observation_space, obs)
        for j, (i, (row, info)) in enumerate(zip(indices, results)):
            write(j, row)
            self.reset_infos[i] = info
        return obs

    def _reset_single_env(self, index: int, seed: int | None) -> Any:
        row, self.reset_infos[index] = self._env_call("reset_one", [index], per_env=[(seed, None)], check=False)[0]
        return row


class WorkerVecEnv(WorkerEnvAccess):
    """Envs in workers, each stepping a contiguous slice in series (see the module); with
    ``step_in_parent`` the parent steps the last slice itself (a ``LocalWorker``)."""

    def __init__(self, env_fns: Sequence[EnvFn], in_series: int | str = "auto", copy: bool = True,
                 timeout: float | None = None, on_error: str = "raise", max_restarts: int = 10,
                 step_in_parent: bool = False, batch_size: int | None = None,
                 autoreset_mode: AutoresetMode | str = AutoresetMode.SAME_STEP) -> None:
        cls = type(self).__name__
        env_fns = check_env_fns(env_fns, cls, picklable=False)
        check_batch_size(batch_size, len(env_fns), cls)  # before any worker starts
        mode = resolve_autoreset_mode(autoreset_mode, cls)
        if on_error not in ON_ERROR:
            raise ValueError(f"on_error must be one of {ON_ERROR}, received {on_error!r}")
        self.on_error, self.max_restarts = on_error, check_int("max_restarts", max_restarts, minimum=0)
        self.restarts = 0  #: workers replaced so far
        self._env_fns, self.step_in_parent = list(env_fns), step_in_parent
        self.in_series = resolve_in_series(in_series, len(env_fns))
        self.copy, self.timeout = copy, check_timeout(timeout)
        self.close_timeout = CLOSE_TIMEOUT_S  #: seconds close() gives all workers together
        self._owner_pid = os.getpid()  # a forked child's copy leaves the workers alone
        self._deferred = mode is not AutoresetMode.SAME_STEP
        self._resetting: tuple[Any, Any] | None = None  # (seeds, options) of a reset() out
        self.workers: list[Worker] = []
        self._resources: list[Any] = []
        self._finalizer = weakref.finalize(self, _kill_all, self.workers, self._resources)
        with _live_lock:
            _live.add(self)
        try:
            slices = split_into_slices(len(env_fns), self.in_series)
            self.workers.extend(self._new_worker(w, a, b) for w, (a, b) in enumerate(slices))
            spaces = self._spaces(range(len(slices)))
            super().__init__(len(env_fns), spaces.observation_space, spaces.action_space, batch_size, mode)
            self.buffers = self._make_buffers()
            for w in range(len(self.workers)):
                self._prepare_worker(w)
            self.scheduler = self._make_scheduler()
        except BaseException:
            self._finalizer()
            raise

    def _new_worker(self, w: int, first: int, stop: int, pending: bool = False) -> Worker:
        if self.step_in_parent and first > 0 and stop == len(self._env_fns):
            return LocalWorker(w, self._env_fns[first:stop], first, stop, self._deferred, pending)
        return self._start_worker(w, first, stop, pending)

    def _start_worker(self, w: int, first: int, stop: int, pending: bool) -> Worker:
        raise NotImplementedError

    def _make_buffers(self) -> BatchBuffers:
        """The batch buffers (default: local arrays the replies are copied into)."""
        return BatchBuffers.allocate(self.observation_space, self.num_envs)

    def _make_scheduler(self) -> Scheduler:
        """How resets and steps reach the envs (default: requests)."""
        return CommandScheduler(type(self).__name__, self.workers, self.buffers, self.reset_infos, self._states,
                                self._deferred)

    def _prepare_worker(self, w: int) -> None:
        """Once per (re)started worker: the parent's own slice steps into the batch buffers."""
        worker = self.workers[w]
        if isinstance(worker, LocalWorker) and worker.envs is not None and is_fixed_size(self.observation_space):
            worker.envs.attach(self.buffers.view(worker.first_index, worker.stop))
            worker.shared = True

    def reset_async(self) -> None:
        """Start resetting every env (seeds from ``seed()``, options from ``set_options()``)."""
        self._check_idle("reset_async")
        seeds, options = self._take_reset_args()
        self._async_reset(seeds, options)
        self._resetting, self._pending = (seeds, options), "reset"

    def reset_wait(self, timeout: float | None = None) -> VecEnvObs:
        """Wait for the reset started by ``reset_async``; returns the batched observations."""
        self._check_pending("reset_wait", "reset")
        timeout = check_timeout(timeout, "reset_wait(): timeout")
        return self._finish_pending(self._wait_reset, timeout)

    def _reset(self, seeds: list[int | None] | None, options: list[dict[str, Any]] | None) -> VecEnvObs:
        self._async_reset(seeds, options)
        self._resetting = (seeds, options)
        return self._wait_reset(None)

    def _async_reset(self, seeds: list[int | None] | None, options: list[dict[str, Any]] | None) -> None:
        """Give up on calls left out, replace workers killed or cut off (no restart counted), reset every env."""
        self._resetting = None
        self.scheduler.abort()
        drain(self.workers, time.monotonic() + DRAIN_TIMEOUT_S)
        for worker in list(self.workers):
            if not worker.usable:
                self._replace_worker(worker.index)
        self.scheduler.submit_reset(seeds, options)

    def _wait_reset(self, timeout: float | None) -> VecEnvObs:
        try:
            failures = self.scheduler.collect(None, self.timeout if timeout is None else timeout)
            if failures:
                self._replace_failed(failures, None, None, "reset")
        except EnvTimeoutError:
            raise  # still out: a worker replaced while it is waited for again gets its reset too
        except BaseException:
            self._resetting = None
            raise
        self._resetting = None
        self.scheduler.take(None)
        return self._observations()

    def _replace_failed(self, failures: dict[int, Failure], count: int | None, timeout: float | None,
                        method: str) -> None:
        """Raise or replace the workers that failed; under recv, collect again until none did."""
        while failures:
            for w, failure in sorted(failures.items()):
                self._restart(w, failure, method)
            failures = self.scheduler.collect(count, timeout) if count is not None else {}

    def _step_async(self, actions: Any) -> None:
        self.scheduler.submit(None, actions)

    def _step_wait(self, timeout: float | None) -> VecEnvStepReturn:
        failures = self.scheduler.collect(None, self.timeout if timeout is None else timeout)
        if failures:
            self._replace_failed(failures, None, None, "step")
        infos = self.scheduler.take(None)
        return self._observations(), self.buffers.rewards.copy(), self.buffers.dones.copy(), infos

    def _send(self, actions: Any, env_ids: np.ndarray) -> None:
        if self.scheduler.owed:
            actions, env_ids = self.scheduler.settle_owed(actions, env_ids)
        if len(env_ids):
            self.scheduler.submit(env_ids, actions)

    def _recv(self, count: int, timeout: float | None) -> VecEnvRecvReturn:
        try:
            timeout = self.timeout if timeout is None else timeout
            failures = self.scheduler.collect(count, timeout)
            if failures:
                self._replace_failed(failures, count, timeout, "recv")
            env_ids = self._states.take_ready(count)
            infos = self.scheduler.take(env_ids)
        except EnvTimeoutError:
            raise  # still in flight: the caller may recv again
        except BaseException:
            self.scheduler.abort()
            raise
        obs, buffers = self.buffers.obs, self.buffers
        rows = obs[env_ids] if type(obs) is np.ndarray else take_rows(obs, env_ids)
        return rows, buffers.rewards[env_ids], buffers.dones[env_ids], infos, env_ids

    def _restart(self, w: int, failure: Failure, method: str) -> None:
        """Replace worker ``w`` if ``on_error`` allows, else raise its error."""
        error = worker_error(self.workers[w], failure, method)
        if self.on_error != "restart" or not isinstance(error, EnvWorkerError):
            raise error
        if self.restarts >= self.max_restarts:
            raise EnvWorkerError(f"{error} (max_restarts={self.max_restarts} reached)", env_index=error.env_index,
                                 worker_index=w, method=method, remote_traceback=error.remote_traceback) from error
        self.restarts += 1
        summary = str(error).split("\n\nRemote traceback:")[0]
        frame: Any = sys._getframe(0)  # the warning names the first caller outside vec_envs
        package, level = os.path.dirname(os.path.dirname(__file__)), 1
        while frame is not None and frame.f_code.co_filename.startswith(package):
            frame, level = frame.f_back, level + 1
        warnings.warn(RESTARTED.format(cls=type(self).__name__, envs=self.workers[w].env_indices, error=summary,
                                       n=self.restarts, max=self.max_restarts), RuntimeWarning, stacklevel=level)
        self._replace_worker(w)
        self.scheduler.restarted(w, summary)

    def _replace_worker(self, w: int) -> None:
        """Replace worker ``w`` by a fresh one and reset its envs (deferred, no reset() out: at their next step)."""
        old = self.workers[w]
        old.kill()
        pending = self._deferred and self._resetting is None
        self.workers[w] = self._new_worker(w, old.first_index, old.stop, pending)
        self._spaces([w])
        self._prepare_worker(w)
        if pending:
            return
        seeds, options = self._resetting or (None, None)
        a, b = old.first_index, old.stop
        request = Reset(list(range(b - a)), None if seeds is None else seeds[a:b],
                        None if options is None else options[a:b])
        answers = self._round_trips({w: (Command.RESET, request)}, "reset", self.timeout)[w]
        if answers.failures:
            raise worker_error(self.workers[w], answers.failures[min(answers.failures)], "reset")
        if answers.obs is not None:
            write_rows_of(self.buffers.obs, np.arange(a, b), answers.obs)
        self.reset_infos[a:b] = answers.infos

    def close_extras(self) -> None:
        """Close every worker's envs, end the workers and free the buffers within ``close_timeout``; a
        worker busy then is killed with a RuntimeWarning naming its envs, one a Ctrl-C cut off at once."""
        if os.getpid() != self._owner_pid:
            _release(self)
            return  # a forked copy: the workers are the parent's
        start = time.monotonic()
        deadline = start + self.close_timeout
        late: list[int] = []
        closed: dict[int, Reply | WorkerDied] = {}
        try:
            if "scheduler" in vars(self):
                late = self.scheduler.abort()  # envs still out: let them finish (else killed)
            late += drain(self.workers, min(deadline, start + DRAIN_TIMEOUT_S))
            open_ = [w for w in self.workers if w.index not in late and w.usable]
            for worker in open_:
                with suppress(WorkerDied):
                    worker.send(Command.CLOSE, None)
            closed = replies(open_, deadline)
            late += [w.index for w in open_ if w.index not in closed]
        finally:
            exit_by = min(deadline, time.monotonic() + EXIT_TIMEOUT_S)
            for worker in self.workers:
                if isinstance(closed.get(worker.index), Reply):
                    worker.shutdown(max(0.0, exit_by - time.monotonic()))
                else:
                    worker.kill()
            _release(self)
        if late:
            envs = [i for w in sorted(late) for i in self.workers[w].env_indices]
            warnings.warn(KILLED_AT_CLOSE.format(cls=type(self).__name__, envs=envs, workers=sorted(late),
                                                 seconds=time.monotonic() - start), RuntimeWarning, stacklevel=4)
        failed = [(w, r) for w, r in sorted(closed.items()) if isinstance(r, Reply) and not r.ok]
        if failed:
            raise worker_error(self.workers[failed[0][0]], failed[0][1].value, "close")

    def close_interrupted(self) -> None:
        """A close that a Ctrl-C stopped part-way: kill every worker and release the buffers now."""
        _release(self)


def _release(venv: WorkerVecEnv) -> None:
    """Kill what is left, drop every view of the batch buffers (shared memory is unmapped at once)."""
    vars(venv).pop("buffers", None)
    scheduler = vars(venv).pop("scheduler", None)
    if scheduler is not None:
        scheduler.release()
    venv._finalizer()


def _kill_all(workers: list[Worker], resources: list[Any]) -> None:
    for worker in workers:
        worker.kill()
    for resource in resources:
        resource.close()


# A forked child's exit would stop the parent's workers (via multiprocessing's exit handler and
# the finalizers): every live worker VecEnv is registered here, and a child's copy forgets them.
_live: weakref.WeakSet[WorkerVecEnv] = weakref.WeakSet()
_live_lock = threading.Lock()


def _forget_in_child() -> None:
    global _live_lock
    _live_lock = threading.Lock()  # the parent's may have been held by another thread at the fork
    for venv in list(_live):
        venv._finalizer.detach()
        for worker in venv.workers:
            worker.forget()
    _live.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)
