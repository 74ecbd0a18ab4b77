"""LaneLockStep: a lock-step ``step()`` of every worker at once through the env lanes.

The parent writes every action into shared memory and requests every env with one
number (``control.py``: each worker steps its whole slice in one loop, the envs with
something to say sharing one message), then waits on the whole batch at once: one bytes comparison of the answer
lanes says every env answered with nothing to say. That common case costs the parent the
same few NumPy calls whatever the number of workers; the envs whose episode ended get
their terminal rows with one fancy index. Anything else (an env with an info, a failure,
a dead or sleeping-too-long worker, a timeout) goes the per-worker way of
``WorkerVecEnv._step_wait``: each worker's handle is left as if it had been sent its own
STEP, so that path takes over from where this one stopped.

With ``step_in_parent`` the last slice is the parent's own (a ``LocalWorker``, no lanes):
the parent steps it into the shared rows while the workers step theirs, then waits for
their lanes; its outcome joins the per-worker path when it has something to say.

Example:
    >>> import gymnasium as gym
    >>> from vec_envs import SubprocVecEnv
    >>> with SubprocVecEnv([lambda: gym.make("CartPole-v1")] * 4, in_series=2, step_in_parent=False) as venv:
    ...     _ = venv.reset()
    ...     obs, rewards, dones, infos = venv.step([0, 1, 0, 1])
    ...     kind = type(venv._lock_step).__name__
    >>> kind, obs.shape, rewards.tolist(), infos
    ('LaneLockStep', (4, 4), [1.0, 1.0, 1.0, 1.0], [{}, {}, {}, {}])
"""
from __future__ import annotations

import time
from typing import Any

import numpy as np

from vec_envs.spaces.batching import BatchBuffers
from vec_envs.subproc import wake_up
from vec_envs.subproc.control import ParentLanes, answer_counts
from vec_envs.subproc.quiet_infos import quiet_infos
from vec_envs.subproc.spin_wait import Spin, spin_until
from vec_envs.subproc.wake_up import ParentSleep, WorkerBell
from vec_envs.subproc.worker_handle import SubprocWorker
from vec_envs.types import Info
from vec_envs.workers.local_worker import LocalWorker
from vec_envs.workers.messenger import Messenger
from vec_envs.workers.protocol import Command, Outcome
from vec_envs.workers.worker import Worker, WorkerDied

__all__ = ["LaneLockStep"]


class LaneLockStep:
    """Every env requested with one number, the batch awaited as a whole (see the module)."""

    def __init__(self, lanes: ParentLanes, workers: list[Worker], messenger: Messenger, actions: np.ndarray,
                 buffers: BatchBuffers, reset_infos: list[Info], spin: bool, bell: WorkerBell | None = None,
                 sleeper: ParentSleep | None = None) -> None:
        self.lanes, self.workers, self.messenger, self.bell, self.sleeper = lanes, workers, messenger, bell, sleeper
        self.actions, self.buffers, self.reset_infos = actions, buffers, reset_infos
        self.spin = Spin(spin)
        self.local = workers[-1] if isinstance(workers[-1], LocalWorker) else None  # the parent's own slice
        self._laned = lanes.block.n if self.local is None else self.local.first_index  # envs 0:_laned have lanes
        self._local_outcome: Outcome | None = None  # the parent's own slice, stepped for the batch out
        self._answers = answer_counts(lanes.block)
        self._answered = lanes.answered[:self._laned]
        self._quiet = b""  # the answer lanes' bytes once every env answered with nothing to say
        self._target = 0  # the answer count (all workers) that completes the batch
        self.out = False  # a batch was requested here and not collected yet
        self._start = self._answers.tolist()  # each worker's answers when the batch was requested
        self._seq = 0  # the batch's number
        self._polled: list[Worker] = []  # the workers whose sentinels ``_poller`` watches
        self._poller: Any = None
        self._fast = (buffers.terminal_obs is None or type(buffers.terminal_obs) is np.ndarray)

    def usable(self) -> bool:
        """Can the next step go this way (every worker a process with lanes, nothing due)?"""
        messenger = self.messenger
        return self._fast and messenger.idle()

    def send(self, actions: Any) -> None:
        """Write the actions, request every env, wake the workers asleep on their pipes."""
        self.actions[...] = actions
        lanes = self.lanes
        if not lanes.together:
            lanes.set_together(True)
        self._start = self._answers.tolist()
        self._target = sum(self._start) + self._laned
        self._seq = seq = lanes.request(slice(0, self._laned))
        self._quiet = (seq << 1).to_bytes(8, "little") * self._laned
        self.out = True
        if lanes.any_sleeping():
            self._wake_sleepers()

    def give_up(self) -> None:
        """A batch still out goes to the per-worker path (``close()`` before ``step_wait``):
        every worker owes its STEP there, drained or killed as any late reply."""
        if self.out:
            self.out = False
            self._hand_over()

    def _hand_over(self) -> None:
        """Leave each worker's handle (and the messenger) as if it had been sent its own
        STEP, the parent's own slice with its outcome if it was stepped."""
        awaiting, seq = self.messenger.awaiting, self._seq
        if self.local is not None and self._local_outcome is not None:
            self.messenger.deliver(self.local.index, self._local_outcome)
            self._local_outcome = None
        for worker, count in zip(self.workers, self._start):
            if worker.is_local:
                continue
            handle: Any = worker
            handle._lane_target, handle._lane_seq, handle._quiet = count + worker.stop - worker.first_index, seq, False
            awaiting[worker.index] = Command.STEP

    def _wake_sleepers(self, ring: bool = True) -> None:
        """One ring of the bell for them all; without one (or ``ring`` False), a WAKE message each."""
        if ring and self.bell is not None:
            self.bell.ring()
            return
        for worker in self.workers:
            handle: Any = worker
            if self.lanes.sleeping(worker.index):
                try:
                    handle.wake()
                except WorkerDied:
                    pass  # its sentinel says so: the per-worker path reports it

    def _state(self) -> int:
        """1: every env answered, nothing to say; 2: every worker answered; 0: not yet."""
        if self._answered.tobytes() == self._quiet:
            return 1
        return 2 if sum(self._answers) >= self._target else 0

    def wait(self, timeout: float | None) -> list[Info] | None:
        """The infos once the batch answered with nothing to say (the rows are in the
        buffers); None: the per-worker path collects it (messages, failures, a timeout)."""
        self.out = False
        if self.local is not None and not self._step_local():
            self._hand_over()
            return None
        start = time.perf_counter()
        try:
            state = spin_until(self._state, self.spin.budget())
            if not state and timeout is None and self.sleeper is not None:
                state = self._sleep(self.sleeper)
        except BaseException:  # a Ctrl-C: the per-worker path drains the batch later
            self._hand_over()
            raise
        if state != 1:
            self._hand_over()
            return None
        self.spin.record(time.perf_counter() - start)
        self._local_outcome = None
        if self.buffers.terminal_obs is None:
            return [{} for _ in range(self.lanes.block.n)]
        return quiet_infos(self.buffers, self.buffers.dones, None, self.reset_infos)

    def _step_local(self) -> bool:
        """Step the parent's own slice into its rows: True if it had nothing to say (else the
        per-worker path reads its outcome)."""
        assert self.local is not None
        server = self.local.server
        try:
            outcome = server.handle(Command.STEP, self.actions[self._laned:].copy())
        except BaseException:  # a Ctrl-C: the per-worker path drains the workers' batch later
            self._hand_over()
            raise
        self._local_outcome = outcome
        return outcome.ok and outcome.value.is_empty

    def _sleep(self, sleeper: ParentSleep) -> int:
        """Sleep until every worker answered (``_state``) or one ended (0: the per-worker
        path reports it); after a nap with no answer, WAKE those asleep (a wake-up lost)."""
        if self._polled != self.workers:  # a worker was replaced: watch the new one
            self._polled = list(self.workers)
            self._poller = sleeper.poller([w.process.sentinel for w in self.workers if isinstance(w, SubprocWorker)])
        while True:
            answers = sum(self._answers)
            if sleeper.sleep_polled(self._state, self._poller, wake_up.FALLBACK_S, self._target):
                return 0
            state = self._state()
            if state:
                return state
            if sum(self._answers) == answers and self.lanes.any_sleeping():
                self._wake_sleepers(ring=False)

    @staticmethod
    def fits(workers: list[Worker]) -> bool:
        """Are all ``workers`` processes that answer through lanes (the last may be the
        parent's own slice)?"""
        remote = workers[:-1] if workers and workers[-1].is_local else workers
        return bool(remote) and all(isinstance(w, SubprocWorker) and w.lanes is not None for w in remote)
