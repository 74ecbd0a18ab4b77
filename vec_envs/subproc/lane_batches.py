"""LaneBatches: ``recv``/``send`` for worker processes that share memory with the parent.

Each env is its own lane (``control.py``): ``send`` writes the actions into shared memory
and bumps the envs' request numbers; a worker steps each env as soon as its request is there
and answers each env as soon as it is done, so ``recv`` returns the first envs to finish
while the others keep stepping, with no pipe message at all unless an env has something
to say (infos, an error). The parent finds finished envs with one vectorized comparison
over the envs in flight: it spins on that a little longer than it usually waits (while
waits are short, ``spin_wait.py``), then sleeps until a worker's answer wakes it
(``wake_up.py``) or a worker process ends, so a dead worker is reported at once. A
sleeping worker is woken by one ring of the workers' bell for all of them (``wake_up.py``;
without one, a pipe message, WAKE, each); after a nap with no answer, the
parent wakes again those that owe answers and sleep (a wake-up lost).

The parent's own slice (``step_in_parent``) goes the transport-free way of
``AsyncBatches``: the parent steps it in ``recv`` when nothing else is ready.
"""
from __future__ import annotations

import select
import time
from collections.abc import Callable
from multiprocessing.connection import wait
from typing import Any, cast

import numpy as np

from vec_envs.errors import EnvTimeoutError
from vec_envs.spaces.batching import take_rows
from vec_envs.subproc.control import ParentLanes
from vec_envs.subproc.lane_serving import AsyncResetRequest, EnvMessage
from vec_envs.subproc.quiet_infos import quiet_infos, terminal_infos
from vec_envs.subproc.spin_wait import Spin, spin_until
from vec_envs.subproc.wake_up import FALLBACK_S, ParentSleep, WorkerBell
from vec_envs.subproc.worker_handle import NAP_MIN_S, PARENT_NAP_MAX_S, SubprocWorker, describe_exit
from vec_envs.types import VecEnvRecvReturn
from vec_envs.workers.async_batches import AsyncBatches, BatchHost, split_actions
from vec_envs.workers.messenger import DRAIN_TIMEOUT_S
from vec_envs.workers.protocol import Command, ResetRequest, WorkerFailure
from vec_envs.workers.worker import WorkerDied

__all__ = ["LaneBatches"]

DEATH_CHECK_S = 0.01  # while other envs keep coming back, how often recv looks for dead workers


class LaneBatches(AsyncBatches):
    """``AsyncBatches`` where the worker processes answer per env in shared memory.

    Example:
        >>> import gymnasium as gym
        >>> from vec_envs import SubprocVecEnv
        >>> with SubprocVecEnv([lambda: gym.make("CartPole-v1")] * 4, in_series=2, batch_size=2) as venv:
        ...     venv.async_reset()
        ...     obs, rewards, dones, infos, env_ids = venv.recv()   # the first 2 envs reset
        ...     venv.send([0, 1], env_ids)                          # step them; the others wait
        ...     kind = type(venv._async_batches).__name__
        >>> kind, obs.shape, rewards.tolist()
        ('LaneBatches', (2, 4), [0.0, 0.0])
    """

    def __init__(self, host: BatchHost, lanes: ParentLanes, actions: np.ndarray, spin: Spin,
                 sleeper: ParentSleep | None = None, bell: WorkerBell | None = None) -> None:
        super().__init__(host)
        self.bell = bell  # one ring wakes every sleeping worker (None: a WAKE message each)
        self.sleeper = sleeper  # woken by the workers' answers (None: naps only)
        self.lanes, self.actions = lanes, actions
        self.laned = np.array([not worker.is_local for worker in host.workers])
        self.env_laned = self.laned[self.worker_of]
        self._laned_workers = np.flatnonzero(self.laned).tolist()
        self.all_laned = bool(self.laned.all())  # no parent's own slice: send and take skip the masks
        self.flying = np.zeros(len(host.worker_of), np.bool_)  # requested, not seen finished yet
        self.resetting = np.zeros(len(host.worker_of), np.bool_)  # the row due is a reset row
        self.any_resetting = False  # False: no env of ``resetting`` is (take skips it)
        self.unread = np.zeros(len(host.worker_of), np.bool_)  # finished, its message still in the pipe
        self.messages: dict[int, EnvMessage] = {}  # read ahead of their env's turn
        self.spin = spin
        terminal = host.buffers.terminal_obs
        self.bulk_ends = type(terminal) is np.ndarray and host.buffers.time_limit_truncated is not None
        self._checked = time.monotonic()  # when recv last looked for dead workers
        self._sentinels: tuple[int, ...] = ()  # the processes ``_exits`` polls
        self._exits: Any = None

    # ---------------------------------------------------------------- the hooks
    def reset(self, seeds: list[int | None] | None, options: list[dict[str, Any]] | None,
              workers: list[int] | None = None) -> None:
        super().reset(seeds, options, np.flatnonzero(~self.laned).tolist())
        self.flying[:] = self.resetting[:] = self.unread[:] = False
        self.messages.clear()
        for w in np.flatnonzero(self.laned).tolist():
            worker = self.host.workers[w]
            env_ids = np.arange(worker.first_index, worker.stop)
            seqs = self.lanes.reset_seqs(env_ids)
            self.flying[env_ids] = self.resetting[env_ids] = self.any_resetting = True
            own = ResetRequest.of_slice(seeds, options, worker.first_index, worker.stop)
            self._post(w, Command.ASYNC_RESET, AsyncResetRequest(own.seeds, seqs, own.options))

    def send(self, actions: Any, env_ids: np.ndarray) -> None:
        if not self.all_laned:
            mask = self.env_laned[env_ids]
            if not mask.all():
                super().send(split_actions(actions, np.flatnonzero(~mask)), env_ids[~mask])
                actions, env_ids = actions[mask], env_ids[mask]
        if len(env_ids) == 0:
            return
        self.actions[env_ids] = actions
        if self.lanes.together:
            self.lanes.set_together(False)  # each env answered as soon as it is done
        self.lanes.request(env_ids)  # after the actions: a worker that sees it finds them
        self.flying[env_ids] = True
        self._wake_sleepers(env_ids)

    def _wake_sleepers(self, env_ids: np.ndarray, ring: bool = True) -> None:
        """Wake the workers of ``env_ids`` asleep on their pipes (spinning ones see the requests):
        one ring of the bell, or (no bell, or ``ring`` False: a wake-up lost) a WAKE message each."""
        if ring and self.bell is not None:
            if self.lanes.any_sleeping(self.worker_of[env_ids]):  # a wake-up for nobody costs ~1 us a sleeper
                self.bell.ring()
        elif self.lanes.any_sleeping():
            for w in self._owners(env_ids):
                if self.lanes.sleeping(w):
                    self._post(w, Command.WAKE, None)

    def recv(self, count: int, timeout: float | None) -> VecEnvRecvReturn:
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            if time.monotonic() - self._checked > DEATH_CHECK_S:  # a dead worker's envs never come back
                self._checked = time.monotonic()
                if self._any_exited():
                    self._watch_workers(0.0)
            while self._scan() < count:
                if self.busy:  # the parent's own slice: step it now
                    self.collect(deadline, timeout)
                elif not self._wait(deadline, count - len(self.ready)):
                    raise self.timeout_error(timeout)
            return self.take(count)
        except EnvTimeoutError:
            raise  # still in flight: the caller may recv again
        except BaseException:
            self.abort()
            raise

    def _any_exited(self) -> bool:
        """Has any worker process ended? One poll of every sentinel (~2 us), with a poller
        built again only when a restart brings new processes."""
        if not hasattr(select, "poll"):
            return True
        workers = self.host.workers
        sentinels = tuple(workers[w].process.sentinel for w in self._laned_workers)
        if sentinels != self._sentinels:
            self._sentinels, self._exits = sentinels, select.poll()
            for fd in sentinels:
                self._exits.register(fd, select.POLLIN)
        return bool(self._exits.poll(0))

    def _owners(self, env_ids: np.ndarray) -> list[int]:
        """The workers of ``env_ids``, once each."""
        owners = np.zeros(len(self.laned), np.bool_)
        owners[self.worker_of[env_ids]] = True
        return np.flatnonzero(owners).tolist()

    def in_flight(self) -> list[int]:
        return sorted(super().in_flight() + np.flatnonzero(self.flying).tolist())

    # ------------------------------------------------------------------ the work
    def _scan(self) -> int:
        """Move the envs that finished into ``ready``; how many are ready now."""
        self.lanes.scan(self.flying, self.unread, self.ready)
        return len(self.ready)

    def _any_finished(self) -> bool:
        return self.lanes.count_finished(self.flying) > 0

    def _finished(self, wanted: int) -> Callable[[], bool]:
        """A test that ``wanted`` envs in flight have finished (a spin waits for them all: one
        scan then takes them, not one scan per env)."""
        return lambda: self.lanes.count_finished(self.flying) >= wanted

    def _wait(self, deadline: float | None, wanted: int) -> bool:
        """Until an env finishes (True) or ``deadline`` passes (False), ``wanted`` envs
        being what ``recv`` still waits for; a dead worker is handled (restarted: its envs
        are ready) or raised as soon as it is seen."""
        start = time.perf_counter()
        remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
        budget = self.spin.budget() if remaining is None else min(self.spin.budget(), remaining)
        if spin_until(self._finished(max(1, wanted)), budget):
            self.spin.record(time.perf_counter() - start)
            return True
        nap = NAP_MIN_S if self.sleeper is None else FALLBACK_S
        while not self._any_finished():
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                return False
            if self._watch_workers(nap if remaining is None else min(nap, remaining), wanted):
                return True
            if not self._any_finished():
                self._wake_sleepers(np.flatnonzero(self.flying), ring=False)
            nap = nap if self.sleeper is not None else min(2 * nap, PARENT_NAP_MAX_S)
        self.spin.record(time.perf_counter() - start)
        return True

    def _watch_workers(self, seconds: float, wanted: int = 0) -> bool:
        """Sleep up to ``seconds`` on the processes with envs in flight (and, for ``wanted``
        envs, on the wake fd the workers answer on); True if one died."""
        by_sentinel = {self._process(w).sentinel: w for w in self._owners(np.flatnonzero(self.flying))}
        if wanted and self.sleeper is not None:
            # answers counted but not scanned yet end the sleep through _any_finished
            total = sum(self.sleeper.answers()) + max(1, wanted)
            dead = self.sleeper.sleep(self._any_finished, list(by_sentinel), seconds, total)
        else:
            dead = wait(list(by_sentinel), seconds) if by_sentinel else []
        for sentinel in dead:
            self._died(by_sentinel[sentinel])
        return bool(dead)

    def take(self, count: int) -> VecEnvRecvReturn:
        """Read what the envs about to be returned have to say (vectorized: only the envs
        with a message, a reset or an episode's end cost Python work), then return them."""
        env_ids, dones, any_talking = self.lanes.first_ready(self.ready, count, self.host.buffers.dones)
        if self.quiet_round and not any_talking:
            return self._take_quiet(env_ids, dones)
        talking = self.lanes.answered[env_ids] & 1
        due = talking | dones
        if self.any_resetting:
            due |= self.resetting[env_ids]
        if not self.all_laned:  # the parent's own slice stored its infos already
            due &= self.env_laned[env_ids]
        due = due.nonzero()[0]
        if len(due):
            self._read_infos(env_ids[due], talking[due])
            dones = self.host.buffers.dones[env_ids]  # a worker that failed meanwhile flagged its envs
        if self.any_resetting:
            self.resetting[env_ids] = False
            self.any_resetting = bool(np.count_nonzero(self.resetting))
        return self.pop_ready(env_ids, dones)

    @property
    def quiet_round(self) -> bool:
        """Can a batch with no message go ``_take_quiet``'s way: ends in terminal rows, no
        reset rows due, no info stored ahead? (The parent's own slice stores an info ahead
        for each of its envs with one, an episode's end included.)"""
        return self.bulk_ends and not self.any_resetting and not self.infos

    def _take_quiet(self, env_ids: np.ndarray, dones: np.ndarray) -> VecEnvRecvReturn:
        """Return ``env_ids`` when none of them has a message: empty infos, and the terminal
        observation for the envs whose episode ended, placed by their position."""
        del self.ready[:len(env_ids)]
        buffers = self.host.buffers
        infos = quiet_infos(buffers, dones, env_ids, self.host.reset_infos)
        return take_rows(buffers.obs, env_ids), buffers.rewards[env_ids], dones, infos, env_ids

    def _read_infos(self, env_ids: np.ndarray, talking: np.ndarray) -> None:
        """Store the infos of ``env_ids``, reading the messages of those ``talking``; the
        episode ends with nothing to say are stored together."""
        quiet = talking == 0
        if self.bulk_ends:
            quiet &= ~self.resetting[env_ids]
            if quiet.any():
                self._store_ended(env_ids[quiet])
                env_ids, talking = env_ids[~quiet], talking[~quiet]
        for i, talks in zip(env_ids.tolist(), talking.tolist()):
            if i in self.infos:  # restarted (its worker failed, maybe just now): flagged already
                continue
            if not talks:
                self._store_info(i, {}, None)
                continue
            message = self._message(i)
            if message is not None:
                self._store_info(i, *message.outcome.value)

    def _store_ended(self, env_ids: np.ndarray) -> None:
        """Envs whose episode ended, no message with them: infos from the terminal rows."""
        for i, info in zip(env_ids.tolist(), terminal_infos(self.host.buffers, env_ids)):
            if i not in self.infos:  # else restarted: flagged already
                self.infos[i] = info
                self.host.reset_infos[i] = {}

    def _store_info(self, i: int, info: dict[str, Any], reset_info: dict[str, Any] | None) -> None:
        """Env ``i``'s info, and its reset info after a reset or an episode's end."""
        if self.resetting[i]:
            self.host.reset_infos[i] = info
            self.infos[i] = dict(info)
            return
        if self.host.buffers.dones[i]:
            info = self.host.ended_info(i, info)
            self.host.reset_infos[i] = reset_info or {}
        self.infos[i] = info

    def _message(self, i: int) -> EnvMessage | None:
        """Env ``i``'s message (None if it reported a failure, handled by now)."""
        w = int(self.worker_of[i])
        while i not in self.messages:
            try:
                self._read_one(w)
            except WorkerDied:
                self._died(w)
                return None
        message = self.messages.pop(i)
        if not message.outcome.ok:
            self._failed(w, message.outcome.value)
            return None
        return message

    # ---------------------------------------------------------------- failures
    def _died(self, w: int) -> None:
        process = self._process(w)
        process.join(1.0)
        worker = self.host.workers[w]
        i = worker.running_env()
        i = worker.first_index if i is None else i
        self._failed(w, WorkerFailure(i, "step", f"worker {w} {describe_exit(process.exitcode)} while "
                                                 f"stepping env {i}", ""))

    def _failed(self, w: int, failure: WorkerFailure) -> None:
        """Raise the failure, or (``on_error="restart"``) replace the worker and flag its envs."""
        worker = self.host.workers[w]
        envs = np.arange(worker.first_index, worker.stop)
        error = self.host.restart(w, failure, "recv")  # raises unless restarting
        for i in envs.tolist():
            self.messages.pop(i, None)
        self.unread[envs] = False  # the old worker's pipe is gone
        in_flight = envs[self.flying[envs]]
        self.flying[envs] = self.resetting[envs] = False
        waiting = envs[np.isin(envs, np.array(self.ready, np.int64))]
        self.owe(envs[np.isin(envs, self.host.returned_envs())], error)  # flagged at their send
        self.flag_restarted(np.concatenate([in_flight, waiting]), error)
        self.ready.extend(in_flight.tolist())

    def abort(self) -> list[int]:
        """After a failed recv, or before close: let the envs still stepping finish (or kill
        their worker) and read every message still due, so the pipes carry replies only
        again; returns the workers killed."""
        deadline = time.monotonic() + DRAIN_TIMEOUT_S
        self._wake_sleepers(np.flatnonzero(self.flying), ring=False)  # one that missed its ring sleeps on
        while self._busy_workers() and time.monotonic() < deadline:
            self._scan()
            time.sleep(NAP_MIN_S)
        killed = self._busy_workers()  # a dead worker's envs never finish: not killed by us
        for w in np.unique(self.worker_of[self.flying]).tolist():
            self.host.workers[w].kill()
        for w in np.unique(self.worker_of[self.unread]).tolist():
            try:
                while self.unread[self.worker_of == w].any():
                    self._read_one(w)
            except WorkerDied:
                pass
        self.flying[:] = self.resetting[:] = self.unread[:] = self.any_resetting = False
        self._forget()
        self.messages.clear()
        return killed

    def _busy_workers(self) -> list[int]:
        """The workers with envs in flight whose process still runs."""
        if not self.flying.any():
            return []
        owners = np.unique(self.worker_of[self.flying]).tolist()
        return [w for w in owners if not self._worker(w).conn.closed and self._process(w).is_alive()]

    def _read_one(self, w: int) -> None:
        """Read the next message of worker ``w`` into ``messages`` (a stale one is dropped)."""
        for message in self._worker(w).recv_message():
            self.unread[message.env] = False
            if message.seq == self.lanes.expected[message.env]:
                self.messages[message.env] = message  # else from a round given up

    def _post(self, w: int, command: Command, request: Any) -> None:
        """A command answered per env in the lanes (or no reply: WAKE); a dead worker is found by ``_wait``."""
        try:
            self.host.workers[w].send(command, request)
        except WorkerDied:
            pass

    def _worker(self, w: int) -> SubprocWorker:
        """Worker ``w``, a process (those with lanes are)."""
        return cast(SubprocWorker, self.host.workers[w])

    def _process(self, w: int) -> Any:
        return self._worker(w).process
