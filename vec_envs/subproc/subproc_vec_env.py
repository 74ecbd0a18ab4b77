"""SubprocVecEnv: envs in worker processes, several in series per process."""
from __future__ import annotations

import multiprocessing as mp
import platform
from collections.abc import Sequence

from vec_envs.arguments import check_env_fns, check_timeout
from vec_envs.autoreset import AutoresetMode
from vec_envs.cpus import available_cpus
from vec_envs.spaces.batching import BatchBuffers, is_fixed_size
from vec_envs.spaces.shared_memory import SharedBuffers
from vec_envs.subproc.mpi_env_vars import clear_mpi_env_vars
from vec_envs.subproc.parent.lane_requests import LaneRequests
from vec_envs.subproc.parent.lanes import ParentLanes, WorkerBell
from vec_envs.subproc.parent.main_guard import check_main_guard, check_may_have_children
from vec_envs.subproc.parent.waiting import ParentSleep, Waiting, WakeFd
from vec_envs.subproc.parent.worker_process import WorkerProcess
from vec_envs.subproc.shared import control_block, wake
from vec_envs.subproc.shared.control_block import ControlBlock
from vec_envs.subproc.shared.messages import AttachSharedRequest, PipeCommand
from vec_envs.subproc.shared.spin import Spin
from vec_envs.types import EnvFn
from vec_envs.workers.requests import RequestHost, Requests
from vec_envs.workers.worker import WorkerDied
from vec_envs.workers.worker_vec_env import WorkerVecEnv, resolve_in_series

__all__ = ["SubprocVecEnv", "default_start_method", "describe_transport"]

STEP_IN_PARENT_WITH_TIMEOUT = (
    "SubprocVecEnv: step_in_parent=True cannot be combined with timeout={timeout!r}: an env stepped in the "
    "parent cannot be interrupted, so a wait could run past its timeout. Pass step_in_parent=False (every env "
    "in a worker) to keep the timeout, or timeout=None")


def describe_transport() -> str:
    """How SubprocVecEnv's workers share the steps on this machine, in one line.

    Example:
        >>> describe_transport().startswith("SubprocVecEnv steps through")
        True
    """
    if not control_block.supported():
        return f"SubprocVecEnv steps through the pipes ({platform.machine()} has no env lanes)"
    return ("SubprocVecEnv steps through the env lanes in shared memory "
            f"(wake fd: {'yes' if wake.supported() else 'no'}, workers' bell: "
            f"{'yes' if wake.bells_supported() else 'no, a message each'})")


def default_start_method() -> str:
    """``forkserver`` where the platform has it, else ``spawn``."""
    return "forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn"


class SubprocVecEnv(WorkerVecEnv):
    """Envs in worker processes; worker k steps a contiguous slice of envs in series.

    Observations (every leaf), rewards and dones are written by the workers straight into
    shared memory, and on x86-64 the actions and every step's request and answer too (the
    env lanes, ``shared/control_block.py``); only what envs have to say (non-empty infos,
    errors) crosses the pipes, in one message per worker per step at most. An env's
    exception, a dead worker or a timeout raises ``EnvWorkerError`` / ``EnvTimeoutError``:
    no call blocks forever.

    Args:
        env_fns: one zero-argument factory per env (lambdas and closures work).
        in_series: envs per worker: an int, or "auto" for about one worker per CPU.
        context: a multiprocessing start method ("forkserver" by default where
            available, else "spawn"; "fork" is allowed).
        shared_memory: batch buffers in shared memory (spaces with no fixed size
            always go through the pipes).
        copy: return fresh arrays (True) or views valid until the next step (False).
        timeout: default seconds a wait may take (None: no limit).
        on_error: "raise", or "restart" to replace a failed worker and go on; its envs
            then report ``done=True`` and ``infos[i]["env_restarted"] = True``.
        max_restarts: restarts allowed over the life of the VecEnv before raising.
        step_in_parent: the parent steps the last slice itself while the workers step
            theirs (one process per core, none idle); refused with a ``timeout`` (an env
            stepped in the parent cannot be interrupted by one). Default: on for
            ``in_series="auto"`` without a timeout (an env stepped in the parent cannot be
            interrupted by one) and without a ``batch_size`` below ``num_envs`` (the parent's
            time then goes to the agent).
        batch_size: envs per ``recv`` (None: all). Each worker steps an env as soon as its
            action arrives and reports it as soon as it is done, so ``recv`` returns the
            first ``batch_size`` envs to finish while the others keep stepping.
        autoreset_mode: ``"same_step"`` (default), ``"next_step"`` or ``"disabled"`` (or
            gymnasium's ``AutoresetMode``): what an env's rows are after its episode ends
            (``vec_envs.autoreset``); the workers' step loops reset the envs that way.

    While there are no more processes than CPUs, parent and workers wait for each other
    by polling for a fraction of a millisecond before they sleep; otherwise they sleep at
    once, and wake as soon as there is work.

    The spawn and forkserver workers import the main script again: a script builds its
    SubprocVecEnv under ``if __name__ == "__main__":``, as the example does.

    Example:
        >>> import gymnasium as gym
        >>> from vec_envs import SubprocVecEnv
        >>> if __name__ == "__main__":
        ...     with SubprocVecEnv([lambda: gym.make("CartPole-v1")] * 8, in_series=4) as venv:
        ...         print(venv.reset().shape)
        (8, 4)
    """

    _worker_class = WorkerProcess

    def __init__(self, env_fns: Sequence[EnvFn], in_series: int | str = "auto", context: str | None = None,
                 shared_memory: bool = True, copy: bool = True, timeout: float | None = None,
                 on_error: str = "raise", max_restarts: int = 10, step_in_parent: bool | None = None,
                 batch_size: int | None = None, autoreset_mode: AutoresetMode | str = AutoresetMode.SAME_STEP) -> None:
        env_fns = check_env_fns(env_fns, "SubprocVecEnv", picklable=True)
        timeout = check_timeout(timeout)  # read below, before WorkerVecEnv checks the rest
        if step_in_parent and timeout is not None:
            raise ValueError(STEP_IN_PARENT_WITH_TIMEOUT.format(timeout=timeout))
        method = context or default_start_method()
        if method not in mp.get_all_start_methods():
            raise ValueError(f"context must be one of {mp.get_all_start_methods()}, received {context!r}")
        check_may_have_children()
        check_main_guard(method)
        self._ctx = mp.get_context(method)
        if method == "forkserver":
            self._ctx.set_forkserver_preload(["vec_envs.subproc.worker.main"])
        self.shared_memory = shared_memory
        self._shared: SharedBuffers | None = None
        self._lanes: ParentLanes | None = None  # the env lanes, with actions and results all shared
        self._wake: WakeFd | None = None  # workers wake the parent sleeping on their answers
        self._bell: WorkerBell | None = None  # the parent wakes sleeping workers with one ring
        if step_in_parent is None:
            step_in_parent = (in_series == "auto" and timeout is None and batch_size in (None, len(env_fns))
                              and resolve_in_series("auto", len(env_fns)) < len(env_fns))
        workers = -(-len(env_fns) // resolve_in_series(in_series, len(env_fns))) - step_in_parent
        self._spin = workers + 1 <= available_cpus()  # the parent too: lock-step, it waits little
        # recv/send: the parent mostly waits for envs; both sides spin only while waits are short
        self._thrifty = (not self._spin and batch_size not in (None, len(env_fns))
                         and workers <= available_cpus())
        super().__init__(env_fns, in_series=in_series, copy=copy, timeout=timeout, on_error=on_error,
                         max_restarts=max_restarts, step_in_parent=step_in_parent, batch_size=batch_size,
                         autoreset_mode=autoreset_mode)

    def _start_worker(self, index: int, first: int, stop: int) -> WorkerProcess:
        with clear_mpi_env_vars():
            return WorkerProcess(self._ctx, index, self._env_fns[first:stop], first, stop,
                                 self._spin or self._thrifty, self._thrifty)

    def _make_buffers(self) -> BatchBuffers:
        if not (self.shared_memory and is_fixed_size(self.observation_space)):
            return super()._make_buffers()
        lanes = control_block.supported() and is_fixed_size(self.action_space)  # actions in shared memory too
        words = ControlBlock.words(self.num_envs, len(self.workers)) if lanes else 0
        self._shared = SharedBuffers(self.observation_space, self.action_space, self.num_envs, words)
        self._resources.append(self._shared)
        if self._shared.control is not None and self._shared.actions is not None:
            block = ControlBlock(self._shared.control, self.num_envs, len(self.workers))
            if wake.supported():
                self._wake = WakeFd()
                self._resources.append(self._wake)
            if wake.bells_supported():
                self._bell = WorkerBell(block.parent_row)
                self._resources.insert(0, self._bell)  # it holds a view: closed before the shared memory
            last = self.workers[-1]
            laned = last.first_index if last.is_local else self.num_envs  # the parent's own slice has no lanes
            self._lanes = ParentLanes(block, laned, self._bell, self._wake_by_pipe)
        return self._shared.buffers

    def _make_requests(self, host: RequestHost) -> Requests:
        lanes, shared = self._lanes, self._shared
        if lanes is None or shared is None or shared.actions is None:
            return super()._make_requests(host)
        sleep = None if self._wake is None else ParentSleep(lanes.block, self._wake)
        waiting = Waiting(lanes.block, Spin(self._spin or self._thrifty, self._thrifty), sleep)
        return LaneRequests(host, lanes, shared.actions, waiting)

    def _wake_by_pipe(self, workers: list[int]) -> None:
        """Without the bell: a WAKE message to each worker asleep (a dead one is found by the wait)."""
        for w in workers:
            try:
                self.workers[w].send(PipeCommand.WAKE, None)
            except WorkerDied:
                pass

    def _drop_views(self) -> None:
        super()._drop_views()
        self._lanes = self._bell = None

    def _prepare_worker(self, w: int) -> None:
        super()._prepare_worker(w)
        worker, shared = self.workers[w], self._shared
        if shared is None or not isinstance(worker, WorkerProcess):  # the parent's own slice
            return
        if self._lanes is not None:
            self._lanes.restart(w, worker.first_index, worker.stop)  # a new worker starts from the numbers now
        request = AttachSharedRequest(shared.space, shared.action_space, shared.n, worker.first_index, shared.size,
                                      w, shared.fd, len(self.workers) if self._lanes is not None else 0,
                                      None if self._wake is None else self._wake.write_fd,
                                      None if self._bell is None else self._bell.fds)
        self.messenger.round_trip(w, PipeCommand.ATTACH_SHARED, request, self.timeout, "__init__", type(None))
