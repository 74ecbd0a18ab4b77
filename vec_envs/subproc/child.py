"""The worker's end of the pipe and the lanes: its loop, and how it serves each.

``worker_main`` runs in each worker process: it builds its envs, then serves requests through
the pipe (a ``wire.Request``, answered by one ``wire.Reply``, or in the lanes for WAKE and a
RESET with numbers) and in the lanes (``lanes.py``) until CLOSE or until the parent is gone.
``serve_lanes`` and ``serve_reset`` also run in the parent, for its own slice.
"""
from __future__ import annotations

import contextlib
import functools
import multiprocessing as mp
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from multiprocessing.reduction import recv_handle, send_handle
from types import SimpleNamespace
from typing import Any, NamedTuple

import numpy as np
from gymnasium import spaces

from vec_envs.spaces.shared_memory import map_region
from vec_envs.subproc.cloudpickle_wrapper import CloudpickleWrapper
from vec_envs.subproc.doorbell import LANES, PARENT_GONE, Spin, poller, worker_wait
from vec_envs.subproc.lanes import WorkerLanes, words
from vec_envs.types import Info
from vec_envs.workers import wire
from vec_envs.workers.env_slice import EnvSlice, step_envs
from vec_envs.workers.wire import Answers, Command, Reply, Request, Reset, WorkerFailure

__all__ = ["Attach", "parent_alive", "receive_attach", "send_attach", "serve_lanes", "serve_reset", "worker_main"]

POLL_S = 0.5  # where no pidfd can be had: how often the watch looks at the VecEnv's process


class Attach(NamedTuple):
    """ATTACH: where a worker finds its rows, its lanes and the wake-up fds."""
    space: spaces.Space
    action_space: spaces.Space
    n: int  # envs in the whole batch
    start: int  # the worker's first env
    size: int  # bytes of the region
    worker: int  # the worker's row of the control block
    fd: int  # the region; sent by ``send_handle`` after the request, as the others are
    workers: int = 0  # worker rows of the control block; 0: no control block
    wake_fd: int | None = None  # the parent's wake fd (``doorbell.Doorbell``); None: none
    bells: tuple[int, ...] = ()  # the worker's own bell, then the shared rings (``doorbell.Doorbell``); (): none


def send_attach(conn: Connection, seq: int, attach: Attach, pid: int) -> None:
    """Send ATTACH through the pipe, then its file descriptors to process ``pid``."""
    conn.send(Request(Command.ATTACH, seq, attach._replace(fd=-1, wake_fd=None if attach.wake_fd is None else -1,
                                                           bells=(-1,) * len(attach.bells))))
    for fd in (attach.fd, attach.wake_fd, *attach.bells):
        if fd is not None:
            send_handle(conn, fd, pid)


def receive_attach(conn: Connection, attach: Attach) -> Attach:
    """ATTACH completed with the file descriptors that follow it."""
    fd = recv_handle(conn)
    wake_fd = None if attach.wake_fd is None else recv_handle(conn)
    return attach._replace(fd=fd, wake_fd=wake_fd, bells=tuple(recv_handle(conn) for _ in attach.bells))


def serve_lanes(envs: EnvSlice, lanes: WorkerLanes, actions: np.ndarray, say: Callable[[Answers], None],
                deadline: float | None = None) -> None:
    """Step the envs asked, oldest first, a run of consecutive envs per loop; answer each once done
    (one with something to say that does not fit its info columns after the last run, in one
    message through ``say``). Past ``deadline`` the envs not stepped yet are left asked."""
    runs = lanes.take_runs()
    if deadline is not None:  # one env at a time, to look at the clock between them
        runs = [(seq, k, k + 1) for seq, a, b in runs for k in range(a, b)]
    talked: list[int] = []
    infos: dict[int, Info] = {}
    failures: dict[int, WorkerFailure] = {}
    first, deferred, dones = envs.first_index, envs.pending is not None, envs.buffers.dones
    for n, (_, start, stop) in enumerate(runs):
        if deadline is not None and time.monotonic() >= deadline:
            lanes.untake([k for _, a, b in runs[n:] for k in range(a, b)])
            break
        said: list[int] = []
        run_infos, failed = step_envs(envs, range(start, stop), actions[start:stop].copy(), said, lanes.done)
        if failed:
            failures.update({i: WorkerFailure.of(exc, "step") for i, exc in failed.items()})
        for k in said:
            info = infos[k] = run_infos[k - start]
            if not (k + first not in failures and (deferred or not dones[k] or not envs.reset_infos[k])
                     and lanes.answer_in_columns(k, info)):
                talked.append(k)
    if talked:
        resets = [None if deferred or not dones[k] or k + first in failures else dict(envs.reset_infos[k])
                  for k in talked]
        _answer(lanes, talked, [infos[k] for k in talked], resets, failures, say, first, lanes.propose)


def serve_reset(envs: EnvSlice, lanes: WorkerLanes, request: Reset, say: Callable[[Answers], None],
                deadline: float | None = None) -> Reset | None:
    """RESET through the lanes: each env answered with its number (``request.seqs``) once reset,
    those with a reset info or failure after the last, with one message. Past ``deadline``
    (the parent's slice under a timeout) the rest of the request is returned."""
    for k, seq in zip(request.ks, request.seqs or ()):
        lanes.take(k, seq)
    said: list[tuple[int, Info]] = []

    def answer(k: int, info: Info | None) -> None:
        if info or info is None:
            said.append((k, {} if info is None else dict(info)))
        else:
            lanes.answer(k, False)

    failures: dict[int, WorkerFailure] = {}
    served, step = 0, len(request.ks) if deadline is None else 1
    while served < len(request.ks) and not (served and deadline is not None and time.monotonic() >= deadline):
        failures.update(wire.reset_envs(envs, _part(request, served, served + step), answer))
        served += step
    if said:
        _answer(lanes, [k for k, _ in said], [info for _, info in said], [None] * len(said), failures, say,
                envs.first_index)
    return None if served >= len(request.ks) else _part(request, served, len(request.ks))


def _part(request: Reset, a: int, b: int) -> Reset:
    return Reset._make(None if field is None else field[a:b] for field in request)


def _answer(lanes: WorkerLanes, ks: list[int], infos: list[Info], reset_infos: list[Info | None],
            failures: dict[int, WorkerFailure], say: Callable[[Answers], None], first: int,
            propose: Callable[[Info], Any] | None = None) -> None:
    """Answer the envs ``ks`` with their message bit, then send their message (read as it is
    written: no size can stall either side), with the schema ``propose`` gives, if any."""
    schema = next((s for s in map(propose, infos) if s is not None), None) if propose is not None else None
    message = Answers([first + k for k in ks], [lanes.seq(k) for k in ks], infos, reset_infos, failures or None,
                      schema=schema)
    for k in ks:
        lanes.answer(k, True)
    say(message)


def _say(conn: Connection, message: Answers, method: str = "step") -> None:
    """Send ``message``; an env's entry that cannot be pickled becomes a failure naming it."""
    try:
        conn.send(message)
    except OSError:
        raise  # the pipe is gone: the worker's loop ends
    except Exception:  # whatever pickling raises
        failures = dict(message.failures or {})
        infos, resets = list(message.infos), list(message.reset_infos)
        for j, env in enumerate(message.envs):
            failure = wire.unpicklable_info(env, method, infos[j], resets[j])
            if failure is not None:
                failures[env], infos[j], resets[j] = failure, {}, None
        conn.send(message._replace(infos=infos, reset_infos=resets, failures=failures))


def worker_main(conn: Connection, env_fns: CloudpickleWrapper, first_index: int, deferred: bool, pending: bool,
                use_pdeathsig: bool, spin: bool, running: Any, thrifty: bool, parent_pid: int) -> None:
    """Serve the pipe and the lanes until CLOSE or process ``parent_pid`` is gone; ``running`` (a
    shared int) is 1 + the env being called, for the parent to name should this process die."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # blocked around start()
    if use_pdeathsig and sys.platform.startswith("linux"):  # SIGKILL this process when its OS parent dies
        with contextlib.suppress(OSError, AttributeError):
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    _watch(parent_pid)
    # an env may start processes (a SubprocVecEnv): a worker is daemonic only for the parent's exit to end
    # it; its daemonic children end with it and watch it
    mp.current_process().daemon = False
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=functools.partial(_close, conn.fileno()))  # not in an env's forks
    here = SimpleNamespace(conn=conn, envs=None, failure=None, lanes=None, actions=None, bells=(), region=None,
                           shared=False)
    try:
        here.envs = EnvSlice(env_fns.x, first_index, deferred, pending)
        here.envs.track_running(memoryview(running).cast("B").cast("q"))
    except Exception as exc:  # reported on the first request: the worker must not die
        here.failure = WorkerFailure.of(exc, "__init__")
    try:
        _serve(here, Spin(spin, thrifty), os.getppid())
    except (EOFError, BrokenPipeError, ConnectionResetError):
        return  # the parent closed its end
    finally:
        if here.envs is not None:
            with contextlib.suppress(Exception):  # the parent is gone or asked to close: nobody reads it
                here.envs.close()
        conn.close()


def _serve(here: SimpleNamespace, spin: Spin, parent: int) -> None:
    """Wait for work and serve it, until CLOSE or the parent is gone."""
    pollers: dict[str, Any] = {}
    say = functools.partial(_say, here.conn, method="step")
    while True:
        event = worker_wait(here.conn, here.lanes, spin, here.bells, parent, pollers)
        if event == PARENT_GONE:
            return
        if event == LANES and here.envs is not None:
            serve_lanes(here.envs, here.lanes, here.actions, say)
        elif event != LANES and _serve_request(here) == Command.CLOSE:
            return


def _serve_request(here: SimpleNamespace) -> int:
    """Read the request waiting in the pipe and serve it; its command."""
    conn, envs, failure = here.conn, here.envs, here.failure
    request = conn.recv()
    command, payload = request.command, request.payload
    if command == Command.WAKE:
        return command
    if command == Command.RESET and payload.seqs is not None and envs is not None:
        serve_reset(envs, here.lanes, payload, functools.partial(_say, conn, method="reset"))
        return command
    if command == Command.ATTACH:
        payload = receive_attach(conn, payload)
    ok, value = True, None
    try:
        if failure is not None or envs is None:
            if envs is not None or command != Command.CLOSE:
                ok, value = False, failure
        elif command == Command.ATTACH:
            _attach(envs, payload, here)
        else:
            value = wire.serve(envs, command, payload, here.shared)
    except Exception as exc:
        ok, value = False, WorkerFailure.of(exc, "handle")
    try:
        conn.send(Reply(request.seq, ok, value))
    except OSError:
        raise
    except Exception as exc:  # whatever pickling raises (an info's __reduce__ may raise anything)
        first = 0 if envs is None else envs.first_index
        conn.send(Reply(request.seq, False, wire.unpicklable(value, request, first, exc)))
    return command


def _attach(envs: EnvSlice, attach: Attach, here: SimpleNamespace) -> None:
    """Map the shared memory: step into its rows, read the actions and the lanes there."""
    control = words(attach.n, attach.workers) if attach.workers else 0
    here.region, buffers, actions, block = map_region(attach.space, attach.action_space, attach.n, attach.fd,
                                                      attach.size, control)
    stop = attach.start + len(envs.envs)
    envs.attach(buffers.view(attach.start, stop))
    here.shared = True
    if block is not None and actions is not None:
        here.actions = actions[attach.start:stop]
        here.lanes = WorkerLanes(block, attach.n, attach.workers, attach.worker, attach.start, stop, attach.wake_fd)
        here.bells = attach.bells


def _close(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)


def parent_alive(pid: int) -> bool:
    """Does process ``pid`` still run (a zombie counts as gone where ``/proc`` says so)?"""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return True


def _watch(pid: int) -> None:
    """A daemon thread ends this process (``os._exit``) once process ``pid`` is gone."""
    try:
        pidfd = os.pidfd_open(pid) if hasattr(os, "pidfd_open") else None
    except ProcessLookupError:
        os._exit(0)
    except OSError:
        pidfd = None  # ENOSYS (an old kernel), or a sandbox that refuses it

    def watch() -> None:
        if pidfd is None:
            while parent_alive(pid):
                time.sleep(POLL_S)
        else:
            while not poller(pidfd).poll():  # readable once the process ended
                pass
        os._exit(0)

    threading.Thread(target=watch, name="vec_envs-parent-watch", daemon=True).start()
