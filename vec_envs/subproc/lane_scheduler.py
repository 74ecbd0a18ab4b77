"""LaneScheduler: the parent's side of the steps and resets through the lanes (``lanes.py``);
the workers' side is ``child.serve_lanes`` and ``child.serve_reset``.

Lock-step, ``submit(None, actions)`` asks every env with one number and ``collect(None)`` waits
(``doorbell.py``) for all; recv/send, ``submit(env_ids, actions)`` asks those envs and
``collect(count)`` waits for ``count``. A message is read once its env's answer is seen. A
reset is one RESET through each worker's pipe, answered in the lanes. The parent serves its
own slice (``step_in_parent``) before it waits; a worker that ends is returned as failed.
"""
from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Callable
from typing import Any, cast

import numpy as np

from vec_envs.env_states import IN_FLIGHT
from vec_envs.subproc.child import serve_lanes, serve_reset
from vec_envs.subproc.doorbell import Doorbell, Spin, poller
from vec_envs.subproc.lanes import ParentLanes
from vec_envs.subproc.process import WorkerProcess, describe_exit
from vec_envs.workers.scheduler import Failure, Scheduler
from vec_envs.workers.wire import Answers, Command, Reset
from vec_envs.workers.worker import DRAIN_TIMEOUT_S, LocalWorker, WorkerDied

__all__ = ["LaneScheduler"]

DEATH_CHECK_S = 0.01  # while other envs keep answering, how often recv looks for dead workers


class LaneScheduler(Scheduler):
    """Resets and steps through the ``lanes`` (see the module), the ``actions`` a row per env in shared
    memory; ``wake_by_pipe(ws)`` wakes workers through their pipes (a wake-up may have been lost)."""

    def __init__(self, *args: Any, lanes: ParentLanes, actions: np.ndarray, doorbell: Doorbell, spin: Spin,
                 wake_by_pipe: Callable[[list[int]], None]) -> None:
        super().__init__(*args)
        self.lanes, self.actions, self.doorbell, self.spin = lanes, actions, doorbell, spin
        self._wake_by_pipe = wake_by_pipe
        self._local_said: list[Answers] = []  # the parent's own slice's messages
        self._local_reset: Reset | None = None  # a reset of the parent's own slice, served in collect
        self._round: tuple[int, bytes] | None = None  # a lock-step request out: (its number, the quiet lanes)
        self._target = 0  # the answers (all workers) that end the round
        self._excused = np.zeros(len(self.worker_of), np.bool_)  # envs of workers that failed in the round
        self._any_excused = False
        self._sentinels = self._watched()
        self._checked = time.monotonic()
        self.columns = lanes  # infos may come in its info columns

    def submit(self, env_ids: np.ndarray | None, actions: Any) -> None:
        if env_ids is None:  # lock-step: every env, with one number
            self.actions[...] = actions
            self._target = sum(self.lanes.counts) + len(self.worker_of)  # before the request: answers come at once
            seq = self.lanes.request(slice(None))
            self._round = (seq, (seq << 1).to_bytes(8, "little") * len(self.worker_of))
            return
        self.actions[env_ids] = actions
        self.lanes.request(env_ids, self.worker_of[env_ids])  # after the actions: a worker that sees it finds them

    def submit_reset(self, seeds: list[int | None] | None, options: list[dict[str, Any]] | None) -> None:
        self.states.resetting[:] = self.resets_out = True
        self._sentinels = self._watched()  # the workers a reset replaced
        seq = self.lanes.reserve(slice(None))
        self._round = (seq, (seq << 1).to_bytes(8, "little") * len(self.worker_of))
        self._target = sum(self.lanes.counts) + len(self.worker_of)
        for worker in self.workers:
            a, b = worker.first_index, worker.stop
            request = Reset(list(range(b - a)), None if seeds is None else seeds[a:b],
                            None if options is None else options[a:b], [seq] * (b - a))
            if worker.is_local:
                self._local_reset = request
            else:
                with contextlib.suppress(WorkerDied):  # found by the wait
                    worker.send(Command.RESET, request)

    def collect(self, count: int | None, timeout: float | None) -> dict[int, Failure]:
        deadline = None if timeout is None else time.monotonic() + timeout
        if count is not None:
            self._round = None  # the answers of a reset go to recv
            return self._collect_some(count, deadline, timeout)
        failures: dict[int, Failure] = {}
        self._serve_local(deadline)
        while not self._round_done():
            ended = self.doorbell.wait(self._round_done, self._target, self.lanes.counts, self.lanes.parent_row,
                                       self.spin, self._sentinels, self._wake_owing, deadline)
            if ended:
                for w, died in self._ended(ended).items():
                    failures[w] = died
                    self._excuse(w, True)
            elif not self._round_done():
                raise self.timeout_error("reset" if self.resets_out else "step", timeout)
        if self.lanes.answered.tobytes() != cast(tuple, self._round)[1]:  # some env talked (or a worker died)
            self._read(np.flatnonzero((self.lanes.answered & 1).astype(np.bool_) & ~self._excused), failures)
        self._round = None
        if self._any_excused:  # the round is over: its dead workers' envs are waited for again
            self._excused[:] = self._any_excused = False
        return failures

    def in_flight(self) -> list[int]:
        if self._round is not None:
            return np.flatnonzero(((self.lanes.answered >> 1) != self._round[0]) & ~self._excused).tolist()
        return np.flatnonzero(self.states.status == IN_FLIGHT).tolist()

    def abort(self) -> list[int]:
        """Give up on every request out: envs still stepping get ``DRAIN_TIMEOUT_S`` to finish
        (sleepers woken, messages dropped), then busy workers are killed; the workers killed."""
        deadline = time.monotonic() + DRAIN_TIMEOUT_S
        self._wake_owing()
        while True:
            for worker in self.workers:
                if isinstance(worker, WorkerProcess):
                    worker.drop_messages()
            unanswered = np.flatnonzero((self.lanes.answered >> 1) != self.lanes.expected)
            owing = [self.workers[w] for w in np.unique(self.worker_of[unanswered]).tolist()]
            killed = [w.index for w in owing if isinstance(w, WorkerProcess) and w.usable and w.process.is_alive()]
            if not killed or time.monotonic() >= deadline:
                break
            time.sleep(100e-6)
        for w in killed:
            self.workers[w].kill()
        self._round, self._local_reset = None, None
        self._local_said.clear()
        self._excused[:] = self._any_excused = False
        return super().abort() + killed

    def restarted(self, w: int, error: str) -> None:
        super().restarted(w, error)
        self._sentinels = self._watched()
        self._excuse(w, False)  # in a round: the new worker's envs count as answered (``ParentLanes.restart``)

    def release(self) -> None:
        vars(self.lanes).clear()  # its views of the control block
        super().release()

    def _round_done(self) -> bool:
        """Has every env answered the round (one bytes comparison when none talked)?"""
        seq, quiet = self._round  # type: ignore[misc]
        answered = self.lanes.answered
        if answered.tobytes() == quiet:
            return True
        if sum(self.lanes.counts) < self._target:  # a cheap look first: not enough answers yet
            return False
        return bool((((answered >> 1) == seq) | self._excused).all())

    def _excuse(self, w: int, excused: bool) -> None:
        """Worker ``w``'s envs are (not) waited for in the round: it died (was replaced)."""
        worker = self.workers[w]
        self._excused[worker.first_index:worker.stop] = excused
        self._any_excused |= excused
        if self._round is not None:
            self._target = sum(self.lanes.counts) + len(self.in_flight())

    def _collect_some(self, count: int, deadline: float | None, timeout: float | None) -> dict[int, Failure]:
        """Until ``count`` envs are ready (the parent's own served first); a dead worker at once."""
        states, lanes = self.states, self.lanes
        failures: dict[int, Failure] = {}
        now = time.monotonic()
        if now - self._checked > DEATH_CHECK_S:  # a dead worker's envs never come back
            self._checked = now
            dead = self._deaths.poll(0)
            if dead:
                failures = self._ended([fd for fd, _ in dead])
        while not failures:
            self._serve_local(deadline)
            talking: list[int] = []
            answers = sum(lanes.counts)  # before the scan: every answer it counts, the scan sees
            if lanes.scan(states.status, states.ready, talking) and talking:
                self._read(np.array(talking, np.int64), failures)  # at once: a message is read as it is written
            if failures or len(states.ready) >= count:
                break
            if deadline is not None and time.monotonic() >= deadline:
                raise self.timeout_error("recv", timeout)
            wanted = count - len(states.ready)  # (answers the scan did not count wake the parent early: no harm)
            enough: Callable[[], bool] = functools.partial(lanes.finished, states.status, wanted)
            ended = self.doorbell.wait(enough, answers + wanted, lanes.counts,
                                       lanes.parent_row, self.spin, self._sentinels, self._wake_owing, deadline)
            if ended:
                failures.update(self._ended(ended))
        return failures

    def _serve_local(self, deadline: float | None) -> None:
        """The parent's own slice, if it steps one: its reset or its steps asked (while the workers work)."""
        worker = self.workers[-1]
        if not isinstance(worker, LocalWorker) or worker.envs is None or worker.lanes is None:
            return
        lanes, actions = worker.lanes
        if self._local_reset is not None:
            self._local_reset = serve_reset(worker.envs, lanes, self._local_reset, self._local_said.append, deadline)
        if lanes.requested.tobytes() != lanes.seen.tobytes():  # (``has_requests``, one call less)
            serve_lanes(worker.envs, lanes, actions, self._local_said.append, deadline)

    def _read(self, talking: np.ndarray, failures: dict[int, Failure]) -> None:
        """Read what the envs ``talking`` said from their workers' messages, as far as needed."""
        owners = self.worker_of[talking]
        for w in np.unique(owners).tolist():
            wanted = set(talking[owners == w].tolist()) - self.said.keys()
            try:
                while wanted:
                    worker = self.workers[w]
                    message = worker.read_answers() if isinstance(worker, WorkerProcess) else self._local_said.pop(0)
                    wanted -= self._store(message, w, failures)
            except WorkerDied as died:
                failures[w] = died

    def _store(self, message: Answers, w: int, failures: dict[int, Failure]) -> set[int]:
        """Store the entries of ``message`` that answer the requests out; their envs."""
        stored = set()
        if message.schema is not None:
            self.lanes.learn(w, message.schema)
        for i, seq, info, reset_info in zip(message.envs, message.seqs or (), message.infos, message.reset_infos):
            if seq != self.lanes.expected[i]:
                continue  # of a request given up on
            failure = (message.failures or {}).get(i)
            if failure is not None and w not in failures:
                failures[w] = failure
            self.said[i] = (info, reset_info)
            stored.add(i)
        return stored

    def _wake_owing(self) -> None:
        """Wake through their pipes the sleeping workers that owe answers (a wake-up lost)."""
        asleep = [w for w in np.unique(self.worker_of[self.in_flight()]).tolist() if self.lanes.sleeping(w)]
        if asleep:
            self._wake_by_pipe(asleep)

    def _watched(self) -> tuple[int, ...]:
        """The sentinels of the workers' processes (``_deaths`` polls them)."""
        sentinels = tuple(w.process.sentinel for w in self.workers if isinstance(w, WorkerProcess) and w.usable)
        self._deaths = poller(*sentinels)
        return sentinels

    def _ended(self, fds: list[int]) -> dict[int, Failure]:
        """The workers whose processes ended (``fds``: their sentinels), and how."""
        ended = [w for w in self.workers if isinstance(w, WorkerProcess) and w.usable and w.process.sentinel in fds]
        for w in ended:
            w.process.join(1.0)
        return {w.index: WorkerDied(describe_exit(w.process.exitcode)) for w in ended}
