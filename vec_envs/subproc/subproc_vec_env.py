"""SubprocVecEnv: envs in worker processes, several in series per process."""
from __future__ import annotations

import contextlib
import multiprocessing as mp
import platform
from collections.abc import Sequence

from vec_envs.arguments import check_env_fns, check_timeout
from vec_envs.autoreset import AutoresetMode
from vec_envs.cpus import available_cpus
from vec_envs.spaces.batching import BatchBuffers, is_fixed_size
from vec_envs.spaces.shared_memory import SharedBuffers
from vec_envs.subproc import lanes
from vec_envs.subproc.child import Attach
from vec_envs.subproc.doorbell import Doorbell, Spin
from vec_envs.subproc.lane_scheduler import LaneScheduler
from vec_envs.subproc.main_guard import check_main_guard, check_may_have_children
from vec_envs.subproc.mpi_env_vars import clear_mpi_env_vars
from vec_envs.subproc.process import WorkerProcess
from vec_envs.types import EnvFn
from vec_envs.worker_plan import WorkerPlan, plan_workers, probe_step_cost
from vec_envs.workers.scheduler import Scheduler
from vec_envs.workers.wire import Command
from vec_envs.workers.worker import LocalWorker, Worker, WorkerDied
from vec_envs.workers.worker_vec_env import WorkerVecEnv, resolve_in_series

__all__ = ["SubprocVecEnv", "describe_transport"]

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
    if not lanes.supported():
        return f"SubprocVecEnv steps through the pipes ({platform.machine()} has no env lanes)"
    bell = Doorbell(1)
    try:
        return ("SubprocVecEnv steps through the env lanes in shared memory "
                f"(wake fd: {'yes' if bell.wake_fd >= 0 else 'no'}, workers' bell: "
                f"{'yes' if bell.bells else 'no, a message each'})")
    finally:
        bell.close()


class SubprocVecEnv(WorkerVecEnv):
    """Envs in worker processes; worker k steps a contiguous slice of envs in series.

    Workers write observations, rewards and dones (on x86-64 also the actions, requests and
    answers: ``lanes.py``) straight into shared memory; only non-empty infos and errors cross
    the pipes, one message per worker per step at most. An env's exception, a dead worker or a
    timeout raises ``EnvWorkerError`` / ``EnvTimeoutError``: no call blocks forever.

    Args:
        env_fns: one zero-argument factory per env (lambdas and closures work).
        in_series: envs per worker: an int, or "auto": one env's step is timed in a
            throw-away child process; envs that compute get about one worker per CPU, envs
            that mostly wait (a step's CPU under half its wall time) one worker each, up to
            8 per CPU, and the parent drives. ``worker_plan`` holds the plan (None for an int).
        context: a multiprocessing start method ("forkserver" by default where available,
            else "spawn"; "fork" is allowed).
        shared_memory: batch buffers in shared memory (spaces of no fixed size use the pipes).
        copy: return fresh arrays (True) or views valid until the next step (False).
        timeout: default seconds a wait may take (None: no limit).
        on_error: "raise", or "restart" to replace a failed worker and go on; its envs then
            report ``done=True`` and ``infos[i]["env_restarted"] = True``.
        max_restarts: restarts allowed over the life of the VecEnv before raising.
        step_in_parent: the parent steps the last slice itself while the workers step theirs.
            Refused with a constructor ``timeout`` (an env in the parent cannot be
            interrupted); a per-call timeout stops the parent's slice between two envs (with
            ``shared_memory=False``, the slice's request runs whole). Default: on for
            ``in_series="auto"`` with shared memory, no ``timeout`` and no ``batch_size``
            below ``num_envs`` (the parent's time then goes to the agent).
        batch_size: envs per ``recv`` (None: all). Workers step the envs asked in the order
            their actions came and report each once done, so ``recv`` returns the first
            ``batch_size`` envs to finish while the others keep stepping.
        autoreset_mode: ``"same_step"`` (default), ``"next_step"`` or ``"disabled"`` (or
            gymnasium's ``AutoresetMode``): what an env's rows are after its episode ends
            (``vec_envs.autoreset``).

    With no more processes than CPUs, parent and workers poll briefly before they sleep;
    otherwise they sleep at once, and wake as soon as there is work.

    Spawn and forkserver workers import the main script again: build the SubprocVecEnv
    under ``if __name__ == "__main__":``, as the example does.

    Example:
        >>> import gymnasium as gym
        >>> from vec_envs import SubprocVecEnv
        >>> if __name__ == "__main__":
        ...     with SubprocVecEnv([lambda: gym.make("CartPole-v1")] * 8, in_series=4) as venv:
        ...         print(venv.reset().shape)
        (8, 4)
    """

    def __init__(self, env_fns: Sequence[EnvFn], in_series: int | str = "auto", context: str | None = None,
                 shared_memory: bool = True, copy: bool = True, timeout: float | None = None,
                 on_error: str = "raise", max_restarts: int = 10, step_in_parent: bool | None = None,
                 batch_size: int | None = None, autoreset_mode: AutoresetMode | str = AutoresetMode.SAME_STEP) -> None:
        env_fns = check_env_fns(env_fns, "SubprocVecEnv", picklable=True)
        timeout = check_timeout(timeout)  # read below, before WorkerVecEnv checks the rest
        if step_in_parent and timeout is not None:
            raise ValueError(STEP_IN_PARENT_WITH_TIMEOUT.format(timeout=timeout))
        method = context or ("forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn")
        if method not in mp.get_all_start_methods():
            raise ValueError(f"context must be one of {mp.get_all_start_methods()}, received {context!r}")
        check_may_have_children()
        check_main_guard(method)
        self._ctx = mp.get_context(method)
        if method == "forkserver":
            self._ctx.set_forkserver_preload(["vec_envs.subproc.child"])
        self.shared_memory = shared_memory
        self._shared: SharedBuffers | None = None
        self._lanes: lanes.ParentLanes | None = None
        self._doorbell: Doorbell | None = None
        self.worker_plan: WorkerPlan | None = None if in_series != "auto" else self._plan(env_fns)
        if self.worker_plan is not None:
            in_series = self.worker_plan.in_series
            if step_in_parent is None:  # (through the lanes, where a per-call timeout stops the parent's slice)
                step_in_parent = (self.worker_plan.step_in_parent and timeout is None
                                  and batch_size in (None, len(env_fns)) and shared_memory and lanes.supported())
        step_in_parent = bool(step_in_parent)
        processes = -(-len(env_fns) // resolve_in_series(in_series, len(env_fns))) - step_in_parent
        self._spin = processes + 1 <= available_cpus()  # the parent too: lock-step, it waits little
        # recv/send: the parent mostly waits for envs; both sides spin only while waits are short
        self._thrifty = not self._spin and batch_size not in (None, len(env_fns)) and processes <= available_cpus()
        super().__init__(env_fns, in_series=in_series, copy=copy, timeout=timeout, on_error=on_error,
                         max_restarts=max_restarts, step_in_parent=step_in_parent, batch_size=batch_size,
                         autoreset_mode=autoreset_mode)

    def _plan(self, env_fns: Sequence[EnvFn]) -> WorkerPlan:
        """The layout for ``in_series="auto"``: one env's step timed in a throw-away child process."""
        cost = probe_step_cost(env_fns[0], self._ctx)  # None: not timed (the workers report an env that fails)
        own_s, cpu_s = (1.0, 1.0) if cost is None else (cost.own_s, cost.cpu_s)
        return plan_workers(len(env_fns), available_cpus(), own_s, cpu_s)

    def _start_worker(self, w: int, first: int, stop: int, pending: bool) -> Worker:
        with clear_mpi_env_vars():
            return WorkerProcess(self._ctx, w, self._env_fns[first:stop], first, stop, self._deferred, pending,
                                 self._spin or self._thrifty, self._thrifty)

    def _make_buffers(self) -> BatchBuffers:
        if not (self.shared_memory and is_fixed_size(self.observation_space)):
            return super()._make_buffers()
        use_lanes = lanes.supported() and is_fixed_size(self.action_space)  # actions in shared memory too
        words = lanes.words(self.num_envs, len(self.workers)) if use_lanes else 0
        self._shared = SharedBuffers(self.observation_space, self.action_space, self.num_envs, words)
        self._resources.append(self._shared)
        if self._shared.control is not None and self._shared.actions is not None:
            self._doorbell = Doorbell(len(self.workers))
            self._resources.insert(0, self._doorbell)
            bells = self._doorbell.bells
            self._lanes = lanes.ParentLanes(self._shared.control, self.num_envs, len(self.workers),
                                            self._doorbell.ring if bells else self._wake_by_pipe,
                                            self._doorbell.ring_all if bells else None)
        return self._shared.buffers

    def _make_scheduler(self) -> Scheduler:
        shared = self._shared
        if self._lanes is None or shared is None or shared.actions is None or self._doorbell is None:
            return super()._make_scheduler()
        return LaneScheduler(type(self).__name__, self.workers, self.buffers, self.reset_infos, self._states,
                             self._deferred, lanes=self._lanes, actions=shared.actions, doorbell=self._doorbell,
                             spin=Spin(self._spin or self._thrifty, self._thrifty), wake_by_pipe=self._wake_by_pipe)

    def _wake_by_pipe(self, ws: list[int]) -> None:
        """A WAKE to each worker asleep (without the bell, or a wake-up lost)."""
        for w in ws:
            with contextlib.suppress(WorkerDied):  # found by the wait
                self.workers[w].send(Command.WAKE, None)

    def _prepare_worker(self, w: int) -> None:
        super()._prepare_worker(w)
        worker, shared = self.workers[w], self._shared
        if shared is None:
            return
        if self._lanes is not None:
            self._lanes.restart(w, worker.first_index, worker.stop)  # a new worker starts from the numbers as they are
        if isinstance(worker, LocalWorker):
            if self._lanes is not None and shared.actions is not None:
                worker.lanes = (self._lanes.local(w, worker.first_index, worker.stop),
                                shared.actions[worker.first_index:worker.stop])
            return
        bell = self._doorbell
        attach = Attach(shared.space, shared.action_space, shared.n, worker.first_index, shared.size, w, shared.fd,
                        len(self.workers) if self._lanes is not None else 0,
                        None if bell is None or bell.wake_write < 0 else bell.wake_write,
                        (bell.bells[w], *bell.rings) if bell is not None and bell.bells else ())
        self._round_trips({w: (Command.ATTACH, attach)}, "__init__", self.timeout)
