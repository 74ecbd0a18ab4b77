"""LaneRequests: the requests of a SubprocVecEnv whose workers share memory with it.

One object serves both ways of stepping, over the lanes of the control block
(``shared/control_block.py``):

- lock-step: ``send(actions)`` writes every action into shared memory and requests
  every env with one number; ``collect()`` waits (``waiting.py``) until every env has
  answered, which one bytes comparison of the answer lanes says when no env had
  anything to say. Usually none had: the rows are in the buffers and the infos are made
  in one pass (``ended_infos``). Otherwise the envs that talked are read from their
  workers' messages, one message per worker at most.
- recv/send: ``send(actions, env_ids)`` requests those envs; ``recv(count)`` finds the
  envs that answered (one pass over the lanes of the envs in flight) and returns the
  first ``count``, waiting the same way until there are enough.

A reset is one ASYNC_RESET through each worker's pipe, each env answered in its lane.
With ``step_in_parent`` the last slice is the parent's own: the parent steps it itself,
while the workers step theirs. A worker process that ends wakes the waiting parent (its
sentinel is watched) and is reported at once, or replaced.

Example:
    >>> import gymnasium as gym
    >>> from vec_envs import SubprocVecEnv
    >>> with SubprocVecEnv([lambda: gym.make("CartPole-v1")] * 4, in_series=2, batch_size=2) as venv:
    ...     venv.async_reset()
    ...     obs, rewards, dones, infos, env_ids = venv.recv()   # the first 2 envs reset
    ...     venv.send([0, 1], env_ids)                          # step them; the others wait
    ...     kind = type(venv.requests).__name__
    >>> kind, obs.shape, rewards.tolist()
    ('LaneRequests', (2, 4), [0.0, 0.0])
"""
from __future__ import annotations

import select
import time
from collections import deque
from typing import Any, cast

import numpy as np

from vec_envs.async_envs import EnvStatus
from vec_envs.errors import EnvCallFailed, EnvTimeoutError
from vec_envs.spaces.batching import take_rows
from vec_envs.stepping.ended_infos import ended_infos
from vec_envs.stepping.env_slice import EnvSlice
from vec_envs.subproc.parent.lanes import ParentLanes
from vec_envs.subproc.parent.waiting import NAP_MIN_S, Waiting
from vec_envs.subproc.parent.worker_process import WorkerProcess, describe_exit
from vec_envs.subproc.shared.control_block import int_words
from vec_envs.subproc.shared.messages import AsyncResetRequest, EnvMessages, PipeCommand
from vec_envs.types import Info, VecEnvRecvReturn
from vec_envs.workers.local_worker import LocalWorker
from vec_envs.workers.messenger import DRAIN_TIMEOUT_S
from vec_envs.workers.protocol import ResetRequest, WorkerFailure
from vec_envs.workers.requests import RequestHost, Requests
from vec_envs.workers.worker import WorkerDied

__all__ = ["LaneRequests"]

DEATH_CHECK_S = 0.01  # while other envs keep coming back, how often recv looks for dead workers
#: what an env said with its answer: (info, reset info or None, failure or None)
Said = tuple[Info, "Info | None", "WorkerFailure | None"]
_IN_FLIGHT = int(EnvStatus.IN_FLIGHT)


class LaneRequests(Requests):
    """Requests through the lanes of shared memory (see the module).

    Args:
        host: what it may use of its VecEnv.
        lanes: the parent's side of the control block.
        actions: the actions in shared memory, a row per env.
        waiting: the wait for answers.

    With ``step_in_parent`` the last worker is the parent's own slice (a ``LocalWorker``).
    """

    def __init__(self, host: RequestHost, lanes: ParentLanes, actions: np.ndarray, waiting: Waiting) -> None:
        super().__init__(host)
        self.lanes, self.actions, self.waiting = lanes, actions, waiting
        last = host.workers[-1]
        self._local_w = last.index if last.is_local else None  # the parent's own slice, if any
        self.laned = lanes.laned  # envs 0:laned have workers with lanes, the rest are the parent's
        self._laned_workers = [w.index for w in host.workers if not w.is_local]
        self._answered = lanes.answered[:self.laned]
        self._expected = int_words(lanes.expected)  # each env's number, as plain ints
        self._sentinels = self._watched()  # the worker processes (made again after a restart)
        self.said: dict[int, Said] = {}  # what envs said, read ahead of their turn
        terminal = host.buffers.terminal_obs
        self.bulk_ends = type(terminal) is np.ndarray and host.buffers.time_limit_truncated is not None
        self._resets_out = False  # some env's request out is a reset (recv reads its reset info)
        # a lock-step round (every env requested with one number): collect() waits for all
        self._whole: str | None = None  # "step" or "reset" while one is out
        self._seq = 0  # its number
        self._target = 0  # the answer count (all workers) that completes it
        self._quiet = b""  # the answer lanes' bytes once every env answered with nothing to say
        self._flagged: dict[int, str] = {}  # envs of a worker replaced during the round, and why
        self._local_queue: deque[tuple[int, str, Any]] = deque()  # the parent's own envs requested, in order
        self._local_infos: list[Info] | None = None  # a lock-step round's infos of the parent's own slice
        self._checked = time.monotonic()  # when recv last looked for dead workers
        self._exits: Any = None  # a poller over the sentinels, for recv's look for dead workers
        self._exit_fds: tuple[int, ...] = ()

    @property
    def local(self) -> EnvSlice:
        """The parent's own slice (the current one: a restart replaces it)."""
        return cast(LocalWorker, self.host.workers[cast(int, self._local_w)]).server.envs

    # ---------------------------------------------------------------- the calls
    def reset(self, seeds: list[int | None] | None, options: list[dict[str, Any]] | None) -> None:
        self._sentinels = self._watched()  # the workers a reset after a failure or a Ctrl-C replaced
        self.forget()
        self.said.clear()
        self.envs.resetting[:] = self._resets_out = True
        target = sum(self.lanes.counts) + self.laned
        seqs = self.lanes.reset_seqs(np.arange(self.laned))
        self._begin_whole("reset", seqs[0] if seqs else 0, target)
        for w in self._laned_workers:
            worker = self.host.workers[w]
            own = ResetRequest.of_slice(seeds, options, worker.first_index, worker.stop)
            self._post(w, PipeCommand.ASYNC_RESET, AsyncResetRequest(own.seeds, seqs[worker.first_index:worker.stop],
                                                                     own.options))
        for i in range(self.laned, len(self.worker_of)):
            self._local_queue.append((i, "reset", (None if seeds is None else seeds[i],
                                                   None if options is None else options[i])))

    def send(self, actions: Any, env_ids: np.ndarray | None = None) -> None:
        if env_ids is None:  # lock-step: every env, with one number
            if self._local_w is None:
                self.actions[...] = actions
            else:
                self.actions[:self.laned] = actions[:self.laned]
                self._local_queue.extend((i, "step", actions[i]) for i in range(self.laned, len(self.worker_of)))
            target = sum(self.lanes.counts) + self.laned
            self._begin_whole("step", self.lanes.request(slice(0, self.laned)), target)
            return
        if self._local_w is not None and env_ids.max(initial=-1) >= self.laned:
            actions, env_ids = self._queue_local(actions, env_ids)
            if not len(env_ids):
                return
        self.actions[env_ids] = actions
        self.lanes.request(env_ids, self.worker_of[env_ids])  # after the actions: a worker that sees it finds them

    def collect(self, timeout: float | None) -> list[Info]:
        method = self._whole or "step"
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            if self._local_queue and self._local_infos is None:  # the parent's own slice, while the workers step
                self._local_infos = self._run_local_whole(method)
            while not self._all_answered():  # a dead worker is raised or replaced; EnvTimeoutError past timeout
                ended = self.waiting.until(self._all_answered, self._target, self._sentinels, self._wake_owing,
                                           deadline)
                for fd in ended:
                    self._died(self._worker_of_sentinel(fd), method)
                if not ended and not self._all_answered():
                    owing = self._owners(np.flatnonzero((self._answered >> 1) != self._seq))
                    raise self.host.messenger.timeout_error(owing, method, cast(float, timeout))
            infos = self._take_reset() if method == "reset" else self._take_step()
        except EnvTimeoutError:
            raise  # still out: the caller may wait again
        except BaseException:
            self.abort()
            raise
        self._whole = None
        return infos

    def recv(self, count: int, timeout: float | None) -> VecEnvRecvReturn:
        self._whole = None  # a reset's answers go to recv
        envs = self.envs
        try:
            if time.monotonic() - self._checked > DEATH_CHECK_S:  # a dead worker's envs never come back
                self._look_for_deaths()
            self.lanes.scan(envs.status, envs.ready)
            if len(envs.ready) < count:
                self._wait_some(count, timeout)
            return self._take(count)
        except EnvTimeoutError:
            raise  # still in flight: the caller may recv again
        except BaseException:
            self.abort()
            raise

    def in_flight(self) -> list[int]:
        local = [i for i, _, _ in self._local_queue]
        if self._whole is not None:
            return np.flatnonzero((self._answered >> 1) != self._seq).tolist() + local
        return sorted(np.flatnonzero(self.envs.status[:self.laned] == _IN_FLIGHT).tolist() + local)

    def abort(self) -> list[int]:
        """Give up on every request out: let the envs still stepping finish within
        ``DRAIN_TIMEOUT_S`` (waking the workers that missed their ring), then kill the
        workers still busy; the messages still due are dropped as they come (their
        numbers are of a round given up on). Returns the workers killed."""
        deadline = time.monotonic() + DRAIN_TIMEOUT_S
        self._wake_owing()
        while self._busy_workers() and time.monotonic() < deadline:
            time.sleep(NAP_MIN_S)
        killed = self._busy_workers()
        for w in killed:
            self.host.workers[w].kill()
        self._whole = None
        self._local_queue.clear()
        self._local_infos = None
        self.envs.resetting[:] = self._resets_out = False
        self.said.clear()
        self.forget()
        return killed

    def release(self) -> None:
        for holder in (self.waiting.sleep, self.waiting, self.lanes):
            if holder is not None:
                vars(holder).clear()  # their views of the control block
        super().release()

    # --------------------------------------------------------------- lock-step
    def _begin_whole(self, kind: str, seq: int, target: int) -> None:
        """Every laned env was requested with number ``seq``: collect() waits for all, that
        is for ``target`` answers (counted before the request: an answer may come at once)."""
        self._whole, self._seq, self._target = kind, seq, target
        self._quiet = (seq << 1).to_bytes(8, "little") * self.laned
        if self._flagged:
            self._flagged.clear()
        self._local_infos = None

    def _all_answered(self) -> bool:
        """Has every laned env answered the round (one bytes comparison when none talked)?"""
        answered = self._answered
        if answered.tobytes() == self._quiet:
            return True
        if sum(self.lanes.counts) < self._target:  # a cheap look first: not enough answers yet
            return False
        return bool(((answered >> 1) == self._seq).all())

    def _take_step(self) -> list[Info]:
        """Every env answered a step: the infos (the rows are in the buffers)."""
        buffers, reset_infos = self.host.buffers, self.host.reset_infos
        if self.bulk_ends:  # an episode's end says nothing here
            infos = ended_infos(buffers, buffers.dones, None, reset_infos, self.host.deferred)
        else:
            infos = [{} for _ in range(len(self.worker_of))]
            for i in np.flatnonzero(buffers.dones).tolist():
                infos[i] = self.ended_info(i, {})
                self.ended_reset_info(i, None)
        if self._answered.tobytes() != self._quiet:  # some envs talked, or a worker was replaced
            self._read_talking(infos, "step")
        if self._local_infos is not None:
            self._merge_local(infos)
        for i, error in self._flagged.items():
            buffers.rewards[i], buffers.dones[i] = 0.0, True
            infos[i] = {"env_restarted": True, "error": error}
        if self.owed:
            self.flag_owed_rows(infos)
        return infos

    def _take_reset(self) -> list[Info]:
        """Every env answered a reset: reset infos stored (``{}`` for those that said nothing)."""
        reset_infos = self.host.reset_infos
        for i in np.flatnonzero((self._answered & 1) == 0).tolist():
            reset_infos[i] = {}
        infos: list[Info] = [{} for _ in range(len(self.worker_of))]
        self._read_talking(infos, "reset")
        if self._local_infos is not None:
            reset_infos[self.laned:] = self._local_infos
            self._local_infos = None
        self.envs.resetting[:] = self._resets_out = False
        return infos

    def _read_talking(self, infos: list[Info], method: str) -> None:
        """Read what the envs that answered with a message said into ``infos``; a failure is
        raised, or its worker replaced and its envs flagged."""
        buffers, reset_infos = self.host.buffers, self.host.reset_infos
        talking = np.flatnonzero(self._answered & 1)
        owners = self.worker_of[talking]
        for w in np.unique(owners).tolist():
            try:
                said = self._said_by(w, set(talking[owners == w].tolist()))
            except WorkerDied as died:
                self._replace(w, died, method)
                continue
            for i, (info, reset_info, failure) in said.items():
                if failure is not None:
                    self._replace(w, failure, method)
                    break
                if method == "reset":
                    reset_infos[i], infos[i] = info, dict(info)
                elif buffers.dones[i]:
                    infos[i] = self._ended(i, info, infos[i])
                    self.ended_reset_info(i, reset_info)
                else:
                    infos[i] = info

    def _ended(self, i: int, info: Info, terminal: Info) -> Info:
        """Env ``i`` ended, its worker said ``info``: that, then its ``terminal_observation`` and
        ``TimeLimit.truncated`` (``terminal``: the info ``ended_infos`` made of them)."""
        return {**info, **terminal} if self.bulk_ends else self.ended_info(i, info)

    def _replace(self, w: int, failure: WorkerFailure | WorkerDied, method: str) -> None:
        """Worker ``w`` failed in a lock-step round: raise, or replace it and flag its envs."""
        error = self.host.restart(w, failure, method)  # raises unless restarting
        worker = self.host.workers[w]
        for i in range(worker.first_index, worker.stop):  # the new worker's envs count as answered
            self._flagged[i] = error
            self.said.pop(i, None)
        self._sentinels = self._watched()
        unanswered = np.count_nonzero((self._answered >> 1) != self._seq)
        self._target = sum(self.lanes.counts) + int(unanswered)

    def _run_local_whole(self, method: str) -> list[Info]:
        """Step (or reset) the parent's own slice into its rows: its infos (reset infos after a
        reset). A failure is raised, or the slice replaced and its envs flagged."""
        local, w = self.local, cast(int, self._local_w)
        requests = [self._local_queue.popleft() for _ in range(len(self._local_queue))]
        try:
            if method == "reset":
                return [dict(local.reset_env(i - self.laned, *value)) for i, _, value in requests]
            return local.step([action for _, _, action in requests])
        except EnvCallFailed as exc:
            self._replace(w, WorkerFailure.from_exception(exc, method), method)
            return [{} for _ in requests]

    def _merge_local(self, infos: list[Info]) -> None:
        """The parent's own slice's infos into ``infos``, its ended envs' with their terminal rows."""
        local, first = self.local, self.laned
        for k, info in enumerate(cast(list, self._local_infos)):
            i = first + k
            if self.host.buffers.dones[i]:
                infos[i] = self.ended_info(i, info)
                self.ended_reset_info(i, local.reset_infos[k])
            else:
                infos[i] = info
        self._local_infos = None

    # ---------------------------------------------------------------- recv/send
    def _wait_some(self, count: int, timeout: float | None) -> None:
        """Until ``count`` envs are ready: the parent's own envs stepped first, then the
        answers waited for; a dead worker is handled (restarted: its envs are ready) or
        raised as soon as it is seen; EnvTimeoutError past ``timeout``."""
        envs, lanes = self.envs, self.lanes
        deadline = None if timeout is None else time.monotonic() + timeout
        while len(envs.ready) < count:
            if self._local_queue:  # the parent's own slice: step it now
                self._run_local_queue()
                lanes.scan(envs.status, envs.ready)
                continue
            wanted = count - len(envs.ready)

            def enough(wanted: int = wanted) -> bool:
                return lanes.count_finished(envs.status) >= wanted

            total = sum(lanes.counts) + max(1, wanted - lanes.count_finished(envs.status))
            ended = self.waiting.until(enough, total, self._sentinels, self._wake_owing, deadline)
            for fd in ended:
                self._died(self._worker_of_sentinel(fd), "recv")
            lanes.scan(envs.status, envs.ready)
            if not ended and len(envs.ready) < count and deadline is not None and time.monotonic() >= deadline:
                raise self.timeout_error("recv", timeout)

    def _take(self, count: int) -> VecEnvRecvReturn:
        """Return the first ``count`` ready envs: what they had to say is read (only the envs
        with a message, a reset, a restart or the parent's own cost Python work)."""
        buffers = self.host.buffers
        ready = self.envs.ready
        env_ids, dones, talking = self.lanes.first_ready(ready, count, buffers.dones)
        del ready[:count]
        if talking or self.infos or self._resets_out or not self.bulk_ends:
            infos = self._infos_of(env_ids)
            dones = buffers.dones[env_ids]  # a worker that failed meanwhile flagged its envs
        else:  # nothing said: empty infos, the ended envs' from the terminal rows
            infos = ended_infos(buffers, dones, env_ids, self.host.reset_infos, self.host.deferred)
        obs = buffers.obs
        rows = obs[env_ids] if type(obs) is np.ndarray else take_rows(obs, env_ids)
        return rows, buffers.rewards[env_ids], dones, infos, env_ids

    def _infos_of(self, env_ids: np.ndarray) -> list[Info]:
        """The infos of ``env_ids`` (ready) when some had something to say, a reset info to
        store, a flagged restart or a step in the parent."""
        buffers, reset_infos, resetting = self.host.buffers, self.host.reset_infos, self.envs.resetting
        if self.bulk_ends:
            infos = ended_infos(buffers, buffers.dones[env_ids], env_ids, reset_infos, self.host.deferred)
        else:
            infos = [self.ended_info(i, {}) if buffers.dones[i] else {} for i in env_ids.tolist()]
        talking = np.flatnonzero(self.lanes.answered[env_ids] & 1)  # (the parent's own envs never have a message)
        if len(talking):
            self._read_messages(env_ids, talking, infos)
        for j, i in enumerate(env_ids.tolist()):
            if i in self.infos:  # said already: a restart, the parent's own slice
                infos[j] = self.infos.pop(i)
            elif resetting[i] and not self.lanes.answered[i] & 1:
                reset_infos[i] = infos[j] = {}
            elif not self.bulk_ends and buffers.dones[i]:
                self.ended_reset_info(i, None)
        resetting[env_ids] = False
        if self._resets_out:
            self._resets_out = bool(resetting.any())
        return infos

    def _read_messages(self, env_ids: np.ndarray, talking: np.ndarray, infos: list[Info]) -> None:
        """What ``env_ids[talking]`` said into ``infos`` (and their reset infos); a failure is
        raised, or its worker replaced and its envs flagged."""
        buffers, reset_infos, resetting = self.host.buffers, self.host.reset_infos, self.envs.resetting
        talkers = env_ids[talking]
        places = dict(zip(talkers.tolist(), talking.tolist()))  # env -> its place in the batch
        owners = self.worker_of[talkers]
        for w in np.unique(owners).tolist():
            try:
                said = self._said_by(w, set(talkers[owners == w].tolist()))
            except WorkerDied:
                self._died(w, "recv")
                continue
            for i, (info, reset_info, failure) in said.items():
                if failure is not None:
                    self._failed(w, failure)
                    break
                j = places[i]
                if resetting[i]:
                    reset_infos[i], infos[j] = info, dict(info)
                elif buffers.dones[i]:
                    infos[j] = self._ended(i, info, infos[j])
                    self.ended_reset_info(i, reset_info)
                else:
                    infos[j] = info

    def _said_by(self, w: int, envs: set[int]) -> dict[int, Said]:
        """What worker ``w``'s ``envs`` said with their current answers, reading its pipe as
        far as needed; what its other envs said is kept for their turn, entries of a round
        given up on are dropped."""
        said, expected = self.said, self._expected
        found: dict[int, Said] = {}
        if said:
            for i in envs.intersection(said):
                found[i] = said.pop(i)
            envs = envs.difference(found)
        worker = cast(WorkerProcess, self.host.workers[w])
        while envs:
            message = worker.read(EnvMessages)
            failures = message.failures or {}
            for i, seq, info, reset_info in zip(message.envs, message.seqs, message.infos, message.reset_infos):
                if seq != expected[i]:
                    continue  # of a round given up on
                if i in envs:
                    found[i] = (info, reset_info, failures.get(i))
                    envs.discard(i)
                else:
                    said[i] = (info, reset_info, failures.get(i))
        return found

    def _queue_local(self, actions: Any, env_ids: np.ndarray) -> tuple[Any, np.ndarray]:
        """Queue the parent's own envs of a ``send`` (stepped by ``recv``); the others."""
        local = env_ids >= self.laned
        for i, action in zip(env_ids[local].tolist(), np.asarray(actions)[local]):
            self._local_queue.append((i, "step", action))
        return np.asarray(actions)[~local], env_ids[~local]

    def _run_local_queue(self) -> None:
        """Step (or reset) the parent's own envs requested, into their rows: they are answered."""
        local, buffers = self.local, self.host.buffers
        while self._local_queue:
            i, kind, value = self._local_queue.popleft()
            k = i - self.laned
            try:
                if kind == "reset":
                    self.infos[i] = dict(local.reset_env(k, *value))
                    self.host.reset_infos[i] = local.reset_infos[k]
                else:
                    info = local.step_env(k, value)
                    if buffers.dones[i]:
                        info = self.ended_info(i, info)
                        self.ended_reset_info(i, local.reset_infos[k])
                    self.infos[i] = info
            except EnvCallFailed as exc:
                self._local_queue.clear()
                self._failed(cast(int, self._local_w), WorkerFailure.from_exception(exc, kind))
                return
            self.envs.resetting[i] = False
            self.envs.answered([i])

    # ---------------------------------------------------------------- failures
    def _died(self, w: int, method: str) -> None:
        """Worker ``w``'s process ended: raise, or replace it (its envs flagged)."""
        process = cast(WorkerProcess, self.host.workers[w]).process
        process.join(1.0)
        if self._whole is not None:
            self._replace(w, WorkerDied(describe_exit(process.exitcode)), method)
            return
        worker = self.host.workers[w]
        running = worker.running_env()
        i = worker.first_index if running is None else running
        self._failed(w, WorkerFailure(i, "step", f"worker {w} {describe_exit(process.exitcode)} while "
                                                 f"stepping env {i}", ""))

    def _failed(self, w: int, failure: WorkerFailure) -> None:
        """Raise the failure, or (``on_error="restart"``) replace the worker and flag its envs."""
        error = self.host.restart(w, failure, "recv")  # raises unless restarting
        worker = self.host.workers[w]
        for i in range(worker.first_index, worker.stop):
            self.said.pop(i, None)
        self._sentinels = self._watched()
        self.restarted(w, error)

    def _look_for_deaths(self) -> None:
        """Poll every worker's sentinel once: those ended are raised or replaced."""
        self._checked = time.monotonic()
        if not hasattr(select, "poll"):
            return
        if self._sentinels != self._exit_fds:
            self._exit_fds, self._exits = self._sentinels, select.poll()
            for fd in self._sentinels:
                self._exits.register(fd, select.POLLIN)
        for fd, _ in self._exits.poll(0):
            self._died(self._worker_of_sentinel(fd), "recv")

    # ------------------------------------------------------------------- helpers
    def _wake_owing(self) -> None:
        """Wake, through their pipes, the sleeping workers that owe answers (a wake-up lost)."""
        if self._whole is not None:
            owing = np.flatnonzero((self._answered >> 1) != self._seq)
        else:
            owing = np.flatnonzero(self.envs.status[:self.laned] == _IN_FLIGHT)
        asleep = [w for w in self._owners(owing) if self.lanes.sleeping(w)]
        if asleep and self.lanes.wake is not None:
            self.lanes.wake(asleep)

    def _busy_workers(self) -> list[int]:
        """The workers that owe answers and still run."""
        unanswered = np.flatnonzero((self._answered >> 1) != self.lanes.expected[:self.laned])
        busy = []
        for w in self._owners(unanswered):
            worker = cast(WorkerProcess, self.host.workers[w])
            if not worker.conn.closed and worker.process.is_alive():
                busy.append(w)
        return busy

    def _owners(self, env_ids: np.ndarray) -> list[int]:
        """The workers of ``env_ids``, once each, in order."""
        return np.unique(self.worker_of[env_ids]).tolist()

    def _watched(self) -> tuple[int, ...]:
        """The sentinels of the worker processes (they become readable when a process ends)."""
        return tuple(cast(WorkerProcess, self.host.workers[w]).process.sentinel for w in self._laned_workers)

    def _worker_of_sentinel(self, fd: int) -> int:
        return self._laned_workers[self._sentinels.index(fd)]

    def _post(self, w: int, command: PipeCommand, request: Any) -> None:
        """A command answered in the lanes (or not at all: WAKE); a dead worker is found by the wait."""
        try:
            self.host.workers[w].send(command, request)
        except WorkerDied:
            pass
