"""SubprocWorker: a worker process talking over a pipe, and the loop it runs."""
from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import pickle
import select
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from multiprocessing.connection import Connection, wait
from typing import Any

from vec_envs.subproc.cloudpickle_wrapper import CloudpickleWrapper
from vec_envs.subproc.doorbell import Doorbell
from vec_envs.subproc.env_slots import WorkerSlots
from vec_envs.subproc.shared_slice_server import (
    SharedSliceServer,
    receive_attach,
    send_attach,
)
from vec_envs.subproc.spin_wait import Spin, spin_until
from vec_envs.subproc.unpicklable import unpicklable_reply
from vec_envs.subproc.wake_up import FALLBACK_S, ParentSleep
from vec_envs.workers.protocol import EMPTY_STEP_REPLY, Command, Outcome, ResetReply, StepReply, WorkerFailure
from vec_envs.workers.worker import Worker, WorkerDied

__all__ = ["SubprocWorker", "describe_exit", "worker_main"]

PARENT_CHECK_S = 1.0  # how often an idle worker checks that its parent still lives
NAP_MIN_S, WORKER_NAP_MAX_S, PARENT_NAP_MAX_S = 100e-6, 5e-3, 200e-6  # dozing between doorbell looks
PIPE = -1  # "a command came through the pipe" (doorbell requests are numbered from 1;
PARENT_GONE = -2  # every event is non-zero, so spin_until takes each as found)
STEPPED_QUIETLY = Outcome(True, EMPTY_STEP_REPLY)  # a doorbell step answered with nothing to say
SLOTS = -3  # "envs have new requests in their slots" (asynchronous batches)
CUT_MID_MESSAGE = "lost its pipe: a Ctrl-C cut a message to or from it in half"


def _poller(conn: Connection) -> Any:
    """A reusable ``select.poll`` on ``conn`` (~1 us a look, where ``conn.poll()`` takes ~8)."""
    if not hasattr(select, "poll"):
        return None
    poller = select.poll()
    poller.register(conn.fileno(), select.POLLIN)
    return poller


def _wait_for_work(conn: Connection, poller: Any, spin: Spin, parent: int, bell: Doorbell | None,
                   last_seq: int, slots: WorkerSlots | None = None) -> int:
    """Spin, then sleep, until the doorbell rings (its sequence number), envs have new
    requests (SLOTS), a command comes through the pipe (PIPE), or the parent is gone
    (PARENT_GONE).

    Asleep, the worker says so on its bell, so the parent sends the next step through the
    pipe and wakes it at once; it still looks at the bell between naps in case the two
    crossed (a bell rung just as it fell asleep)."""
    def event() -> int | None:  # one look at everything, ~1 us: each spin turn costs this
        seq = bell.requested(last_seq) if bell is not None else 0
        if not seq and slots is not None and _has_requests(slots):
            seq = SLOTS
        return seq or (PIPE if poller is None or poller.poll(0) else None)

    start = time.perf_counter()
    found = spin_until(event, spin.budget())
    if found is None:
        found = _sleep_until_work(conn, parent, bell, slots, event)
    spin.record(time.perf_counter() - start)
    return found


def _sleep_until_work(conn: Connection, parent: int, bell: Doorbell | None, slots: WorkerSlots | None,
                      event: Callable[[], int | None]) -> int:
    """Sleep on the pipe (said so on the bell and in the slots) between looks at ``event()``."""
    _set_sleeping(bell, slots, True)  # from now on the parent wakes it through the pipe
    found = event()
    nap = NAP_MIN_S
    watched = bell is not None or slots is not None
    while found is None:
        if conn.poll(nap if watched else PARENT_CHECK_S):
            found = PIPE
        elif os.getppid() != parent:
            return PARENT_GONE
        else:
            found, nap = event(), min(2 * nap, WORKER_NAP_MAX_S)
    _set_sleeping(bell, slots, False)
    return found


def _has_requests(slots: WorkerSlots) -> bool:
    """``len(slots.pending()) > 0`` in ~0.1 us instead of ~1 (a spinning worker asks every turn)."""
    return slots.requested.tobytes() != slots.seen.tobytes()


def _set_sleeping(bell: Doorbell | None, slots: WorkerSlots | None, asleep: bool) -> None:
    if bell is not None:
        bell.set_sleeping(asleep)
    if slots is not None:
        slots.set_sleeping(asleep)


def _answer_doorbell(conn: Connection, server: SharedSliceServer, bell: Doorbell, seq: int) -> None:
    """Step as the doorbell asks; a pipe message goes only with infos or an error."""
    outcome = server.step_for_doorbell()
    if outcome is not None:
        _reply(conn, outcome, Command.STEP, server.first_index)
    bell.answer(seq, has_message=outcome is not None)
    if server.waker is not None:
        server.waker.answered()


def _die_with_parent() -> None:
    """Ask Linux to SIGKILL this process when its parent dies (best effort)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _reply(conn: Connection, outcome: Outcome, command: int, first_index: int) -> None:
    """Send the outcome; a reply that cannot be pickled becomes a failure naming why."""
    try:
        conn.send(outcome)
    except (pickle.PicklingError, TypeError, AttributeError) as exc:
        conn.send(Outcome(False, _unpicklable(outcome.value, Command(command).name.lower(), first_index, exc)))


def _unpicklable(reply: Any, method: str, first_index: int, exc: Exception) -> WorkerFailure:
    """Why ``reply`` cannot be pickled: the first env info that cannot, naming the env."""
    infos = ((what, source, first_index + k, info) for what, source, pairs in _infos_of(reply) for k, info in pairs)
    return unpicklable_reply(method, infos, f"the result of {method}()", None, exc)


def _infos_of(reply: Any) -> list[tuple[str, str, Iterable[tuple[int, Any]]]]:
    """The per-env infos a reply carries: (what, the env method, (k, info) pairs)."""
    if isinstance(reply, StepReply):
        return [("info", "step", reply.infos.items()), ("reset info", "reset", reply.reset_infos.items())]
    if isinstance(reply, ResetReply):
        return [("reset info", "reset", enumerate(reply.infos))]
    return []


def worker_main(conn: Connection, env_fns: CloudpickleWrapper, first_index: int, use_pdeathsig: bool,
                spin: bool = False, running: Any = None, thrifty: bool = False) -> None:
    """Serve commands until CLOSE, or until the parent is gone; keep ``running`` (a shared
    int) at 1 + the env being called, so the parent can name it should this process die."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # blocked since start()
    parent = os.getppid()
    if use_pdeathsig:
        _die_with_parent()
    server = SharedSliceServer(env_fns.x, first_index)
    if running is not None and server.slice is not None:
        server.slice.track_running(memoryview(running).cast("B").cast("q"))
    poller, spinner, last_seq = _poller(conn), Spin(spin, thrifty), 0
    try:
        while True:
            event = _wait_for_work(conn, poller, spinner, parent, server.doorbell, last_seq, server.slots)
            if event == PARENT_GONE:
                return
            if event == SLOTS:
                server.serve_slots(conn)
                continue
            if event != PIPE and server.doorbell is not None:
                last_seq = event
                _answer_doorbell(conn, server, server.doorbell, event)
                continue
            if _serve_pipe_command(conn, server) == Command.CLOSE:
                return
    except (EOFError, BrokenPipeError, ConnectionResetError):
        return  # the parent closed its end
    finally:
        server.close_quietly()
        conn.close()


def _serve_pipe_command(conn: Connection, server: SharedSliceServer) -> int:
    """Read and answer the command waiting in the pipe; returns it."""
    command, payload = conn.recv()
    if command in (Command.ASYNC_RESET, Command.WAKE):  # answered per env in the slots
        if command == Command.ASYNC_RESET:
            server.async_reset(conn, payload)
        return int(command)
    if command == Command.ATTACH_SHARED:
        payload = receive_attach(conn, payload)
    _reply(conn, server.handle(command, payload), command, server.first_index)
    return int(command)


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
        self.bell: Doorbell | None = None  # set by the backend once shared memory is attached
        self.sleeper: ParentSleep | None = None  # the parent's sleep, woken by answered bells
        self._bell_seq = 0  # the doorbell request awaiting its answer (0: none)
        self.conn, child_conn = ctx.Pipe(duplex=True)
        self._poller = _poller(self.conn)
        self._running = ctx.RawValue("q", 0)  # 1 + the env the worker is calling (0: none)
        use_pdeathsig = threading.current_thread() is threading.main_thread() or ctx.get_start_method() == "forkserver"
        # every context mp.get_context returns has Process; typeshed's BaseContext does not declare it
        self.process = ctx.Process(  # type: ignore[attr-defined]
            target=worker_main, name=f"vec_envs-worker-{index}", daemon=True,
            args=(child_conn, CloudpickleWrapper(list(env_fns)), first_index, use_pdeathsig, spin, self._running,
                  thrifty),
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
        if command == Command.STEP and payload is None and self.bell is not None and not self.bell.sleeping():
            self._bell_seq = self.bell.ring()  # actions are in shared memory already
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

    def recv(self) -> Outcome:
        if self._bell_seq and self.bell is not None:
            seq, self._bell_seq = self._bell_seq, 0
            if self.bell.answered(seq) and not self.bell.has_message():
                return STEPPED_QUIETLY  # all is in shared memory
            if not self.bell.answered(seq):
                self.process.join(1.0)
                raise WorkerDied(describe_exit(self.process.exitcode))
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

    def recv_message(self) -> Any:
        """The next message through the pipe, waiting for it (WorkerDied if the worker is gone)."""
        try:
            return self.conn.recv()
        except (EOFError, ConnectionResetError, OSError):
            self.process.join(1.0)
            raise WorkerDied(describe_exit(self.process.exitcode)) from None

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
        """Sleep on pipes and process sentinels; while a doorbell is out, on the wake fd too
        (woken when a bell is answered), else doze and look again."""
        by_handle = {}
        for w in workers:
            by_handle[w.process.sentinel] = w
            if not w._bell_seq:
                by_handle[w.conn] = w
        rung = [w for w in workers if w._bell_seq]
        sleeper = next((w.sleeper for w in rung), None)
        nap = None if not rung else FALLBACK_S if sleeper is not None else NAP_MIN_S
        while True:
            remaining = None if deadline is None else max(0.0, deadline - time.perf_counter())
            pause = nap if remaining is None else (remaining if nap is None else min(nap, remaining))
            if sleeper is not None and pause is not None:
                found = sleeper.sleep(lambda: any(w._ready() for w in rung), list(by_handle), pause)
            else:
                found = wait(list(by_handle), pause)
            ready = {id(by_handle[h]): by_handle[h] for h in found}
            ready.update((id(w), w) for w in rung if w._ready())
            if ready or remaining == 0.0 or nap is None:
                return list(ready.values())
            nap = nap if sleeper is not None else min(2 * nap, PARENT_NAP_MAX_S)

    def _ready(self) -> bool:
        """The reply is there: the doorbell was answered, or a message waits in the pipe."""
        if self._bell_seq and self.bell is not None:
            return self.bell.answered(self._bell_seq)
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
