"""SubprocWorker: the parent's handle on one worker process (``worker_loop.py`` runs in it).

Commands go through the pipe. With shared memory, a STEP with no payload (the actions
are in shared memory already) goes through the worker's env lanes instead (``control.py``):
the handle requests every env of the slice, wakes the worker with a WAKE message if it
sleeps, and the reply is read from the lanes, plus the one pipe message that carries what
the envs had to say, if any.
"""
from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import signal
import threading
import time
from collections.abc import Iterator, Sequence
from multiprocessing.connection import wait
from typing import Any

import numpy as np

from vec_envs.subproc.cloudpickle_wrapper import CloudpickleWrapper
from vec_envs.subproc.control import ParentLanes
from vec_envs.subproc.lane_serving import EnvMessage
from vec_envs.subproc.shared_slice_server import send_attach
from vec_envs.subproc.spin_wait import Spin, spin_until
from vec_envs.subproc.wake_up import FALLBACK_S, ParentSleep
from vec_envs.subproc.worker_loop import pipe_poller, worker_main
from vec_envs.workers.protocol import EMPTY_STEP_REPLY, Command, Outcome, StepReply
from vec_envs.workers.worker import Worker, WorkerDied

__all__ = ["NAP_MIN_S", "PARENT_NAP_MAX_S", "SubprocWorker", "describe_exit"]

NAP_MIN_S, PARENT_NAP_MAX_S = 100e-6, 200e-6  # a parent with no wake fd dozes between looks
STEPPED_QUIETLY = Outcome(True, EMPTY_STEP_REPLY)  # a lane step answered with nothing to say
CUT_MID_MESSAGE = "lost its pipe: a Ctrl-C cut a message to or from it in half"


@contextlib.contextmanager
def _sigint_blocked() -> Iterator[None]:
    """Block SIGINT in this thread; children started meanwhile (and a forkserver started
    meanwhile, hence its children) inherit the block until ``worker_main`` ignores it."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _wake_sleepers(workers: Sequence[SubprocWorker]) -> None:
    """Wake those of ``workers`` asleep on their pipes though their lanes wait for them."""
    for w in workers:
        if w.lanes is not None and w.lanes.sleeping(w.index) and not w._ready():
            try:
                w.wake()
            except WorkerDied:
                pass  # its sentinel says so


def _answers_due(counts: list[int], stepping: Sequence[SubprocWorker]) -> int:
    """The total of answers, over every worker (``counts``: one look at them), at which
    each worker of ``stepping`` has answered its slice (at least one more than now)."""
    due = list(counts)
    for w in stepping:
        if w.lanes is not None:
            due[w.index] = max(w._lane_target, counts[w.index] + 1)
    return sum(due)


def describe_exit(code: int | None) -> str:
    """How a worker process ended, from its exit code (None: still running)."""
    if code is None:
        return "is unresponsive"
    if code < 0:
        try:
            return f"was killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


class SubprocWorker(Worker):
    """A worker process stepping envs ``first_index:stop`` in series.

    Example:
        >>> import gymnasium as gym
        >>> w = SubprocWorker(mp.get_context("spawn"), 0, [lambda: gym.make("CartPole-v1")] * 2, 0, 2)
        >>> w.send(Command.GET_SPACES, None); SubprocWorker.wait([w], 60.0) == [w]
        True
        >>> w.recv().value.observation_space.shape
        (4,)
        >>> w.send(Command.CLOSE, None); SubprocWorker.wait([w], 10.0) and w.recv().ok
        True
        >>> w.shutdown(10.0)
    """

    def __init__(self, ctx: mp.context.BaseContext, index: int, env_fns: Sequence[Any],
                 first_index: int, stop: int, spin: bool = False, thrifty: bool = False) -> None:
        super().__init__(index, first_index, stop)
        self.spin = Spin(spin, thrifty)
        self.lanes: ParentLanes | None = None  # set by the backend once shared memory is attached
        self.sleeper: ParentSleep | None = None  # the parent's sleep, woken by the workers' answers
        self._lane_target = 0  # while a lane step is out: the answer count that completes it (0: none)
        self._lane_seq = 0  # and the number its answers carry
        self._quiet = False  # _ready saw every answer in, none with a message
        self.conn, child_conn = ctx.Pipe(duplex=True)
        self._poller = pipe_poller(self.conn)
        self._running = ctx.RawValue("q", 0)  # 1 + the env the worker is calling (0: none)
        use_pdeathsig = threading.current_thread() is threading.main_thread() or ctx.get_start_method() == "forkserver"
        # every context mp.get_context returns has Process; typeshed's BaseContext does not declare it
        self.process = ctx.Process(  # type: ignore[attr-defined]
            target=worker_main, name=f"vec_envs-worker-{index}", daemon=True,
            args=(child_conn, CloudpickleWrapper(list(env_fns)), first_index, use_pdeathsig, spin, self._running,
                  thrifty, os.getpid()),
        )
        with _sigint_blocked():  # a Ctrl-C now must not kill the worker while it starts
            self.process.start()
        child_conn.close()

    def running_env(self) -> int | None:
        running = int(self._running.value)
        return running - 1 if running > 0 else None

    def send(self, command: Command, payload: Any) -> None:
        if self.conn.closed:
            raise WorkerDied("was stopped")
        if self.broken:
            raise WorkerDied(CUT_MID_MESSAGE)
        if command == Command.STEP and payload is None and self.lanes is not None:
            if not self.lanes.together:
                self.lanes.set_together(True)  # the whole slice is awaited: its messages may come in one
            self._lane_target = self.lanes.answers(self.index) + self.stop - self.first_index
            self._quiet = False
            self._lane_seq = self.lanes.request(slice(self.first_index, self.stop))  # actions are shared already
            if self.lanes.sleeping(self.index):
                self.wake()
            return
        try:
            if command == Command.ATTACH_SHARED:
                send_attach(self.conn, payload, self.process.pid)
            else:
                self.conn.send((int(command), payload))  # a plain int pickles faster than the enum
        except (BrokenPipeError, ConnectionResetError, OSError) as exc:
            self.process.join(0.5)
            raise WorkerDied(describe_exit(self.process.exitcode)) from exc
        except BaseException as exc:
            self.broken = not isinstance(exc, Exception)  # a Ctrl-C mid-message (a pickling error sends nothing)
            raise

    def wake(self) -> None:
        """Wake the worker asleep on its pipe (it looks at its lanes then); no reply."""
        self.send(Command.WAKE, None)

    def recv(self) -> Outcome:
        if self._lane_target:
            return self._recv_lanes()
        try:
            if self._has_message():
                return self.conn.recv()
        except (EOFError, ConnectionResetError, OSError):
            pass
        except BaseException:  # a Ctrl-C mid-message: the rest of it is still in the pipe
            self.broken = True
            raise
        self.process.join(1.0)
        raise WorkerDied(describe_exit(self.process.exitcode))

    def _recv_lanes(self) -> Outcome:
        """The reply to a lane step: from the lanes, and the message of the envs that talk."""
        self._lane_target = 0
        if self._quiet:  # seen by _ready: every env answered, nothing to say
            self._quiet = False
            return STEPPED_QUIETLY  # all is in shared memory
        if not self._lanes_finished():  # no local view of the lanes: the error's frames hold none
            self.process.join(1.0)
            raise WorkerDied(describe_exit(self.process.exitcode))
        talking = self._talking()
        messages = self._lane_messages(set((talking.nonzero()[0] + self.first_index).tolist()))
        failed = next((m.outcome for m in messages if not m.outcome.ok), None)
        if failed is not None:
            return failed
        first = self.first_index
        infos = {m.env - first: m.outcome.value[0] for m in messages if m.outcome.value[0]}
        reset_infos = {m.env - first: m.outcome.value[1] for m in messages if m.outcome.value[1]}
        return Outcome(True, StepReply(infos, reset_infos, None))

    def _lanes_finished(self) -> bool:
        return self.lanes is not None and self.lanes.slice_finished(self.first_index, self.stop, self._lane_seq)

    def _talking(self) -> np.ndarray:
        """Which envs of the slice sent a message with their answer (a fresh 0/1 array)."""
        return self.lanes.answered[self.first_index:self.stop] & 1 if self.lanes is not None else np.zeros(0)

    def _lane_messages(self, envs: set[int]) -> list[EnvMessage]:
        """Read the messages of ``envs`` (the pipe carries one list per answer that talks)."""
        found: list[EnvMessage] = []
        while envs:
            for message in self.recv_message():
                if message.env in envs and self._current(message):
                    envs.discard(message.env)
                    found.append(message)
        return found

    def recv_message(self) -> list[EnvMessage]:
        """The next lane message through the pipe, waiting for it (WorkerDied if the worker is gone)."""
        if self.conn.closed:  # killed by this process: nothing more comes
            raise WorkerDied("was stopped")
        try:
            return self.conn.recv()
        except (EOFError, ConnectionResetError, OSError):
            self.process.join(1.0)
            raise WorkerDied(describe_exit(self.process.exitcode)) from None
        except BaseException:  # a Ctrl-C mid-message: the rest of it is still in the pipe
            self.broken = True
            raise

    def _current(self, message: EnvMessage) -> bool:
        """Does ``message`` answer the last request of its env (not one given up on)?"""
        return self.lanes is None or message.seq == self.lanes.expected[message.env]

    @classmethod
    def wait(cls, workers: Sequence[SubprocWorker], timeout: float | None) -> list[SubprocWorker]:
        start = time.perf_counter()
        budget = max([w.spin.budget() for w in workers])
        limit = budget if timeout is None else min(budget, timeout)
        if len(workers) == 1:  # lock-step's usual case: poll the one reply, building no lists
            ready = list(workers) if spin_until(workers[0]._ready, limit) else []
        else:
            ready = spin_until(lambda: [w for w in workers if w._ready()], limit)
        if not ready:
            ready = cls._sleep_until_ready(workers, None if timeout is None else start + timeout)
        waited = time.perf_counter() - start
        for w in ready:
            w.spin.record(waited)
        return ready

    @staticmethod
    def _sleep_until_ready(workers: Sequence[SubprocWorker], deadline: float | None) -> list[SubprocWorker]:
        """Sleep on pipes and process sentinels; while lane steps are out, on the wake fd
        too (woken when their answers are in), else doze and look again. After a nap with
        no answer, wake the workers that owe one and sleep (a wake-up lost, ``wake_up.py``)."""
        by_handle = {}
        for w in workers:
            by_handle[w.process.sentinel] = w
            if not w._lane_target:
                by_handle[w.conn] = w
        stepping = [w for w in workers if w._lane_target]
        sleeper = next((w.sleeper for w in stepping), None)
        nap = None if not stepping else FALLBACK_S if sleeper is not None else NAP_MIN_S
        while True:
            remaining = None if deadline is None else max(0.0, deadline - time.perf_counter())
            pause = nap if remaining is None else (remaining if nap is None else min(nap, remaining))
            if sleeper is not None and pause is not None:
                found = sleeper.sleep(lambda: any(w._ready() for w in stepping), list(by_handle), pause,
                                      _answers_due(sleeper.answers(), stepping))
            else:
                found = wait(list(by_handle), pause)
            ready = {id(by_handle[h]): by_handle[h] for h in found}
            ready.update((id(w), w) for w in stepping if w._ready())
            if ready or remaining == 0.0 or nap is None:
                return list(ready.values())
            _wake_sleepers(stepping)
            nap = nap if sleeper is not None else min(2 * nap, PARENT_NAP_MAX_S)

    def _ready(self) -> bool:
        """The reply is there: the lanes answered, or a message waits in the pipe."""
        if self._lane_target:
            lanes = self.lanes
            if lanes is None or lanes.answers(self.index) < self._lane_target:
                return False
            self._quiet = lanes.slice_quiet(self.first_index, self.stop, self._lane_seq)
            return self._quiet or lanes.slice_finished(self.first_index, self.stop, self._lane_seq)
        return self._has_message()

    def _has_message(self) -> bool:
        if self._poller is None:
            return self.conn.poll()
        return bool(self._poller.poll(0))

    def shutdown(self, timeout: float) -> None:
        """Give the process ``timeout`` s to exit (CLOSE was answered), then kill it."""
        if self.conn.closed:
            return
        self.process.join(timeout)
        self.kill()

    def forget(self) -> None:
        mp.process._children.discard(self.process)  # type: ignore[attr-defined]  # see fork_safety
        self.conn.close()  # this process's copy of the pipe only

    def kill(self) -> None:
        if self.conn.closed:
            return
        if self.process.is_alive():
            self.process.kill()
        self.process.join(5.0)
        self.conn.close()
        if self.process.exitcode is not None:
            self.process.close()  # release the sentinel's file descriptor
