"""ProcessSliceServer: a worker process's slice of envs, serving its pipe and its lanes.

What only the subprocess transport needs on top of the transport-free ``SliceServer``:

- the pipe: each ``Request`` read is answered by one ``Reply`` carrying its number (but
  ``NO_REPLY``'s: WAKE, and ASYNC_RESET, answered in the lanes); a reply that cannot be
  pickled becomes a failure naming the env and the info to blame;
- ``ATTACH_SHARED``: map the parent's shared memory, whose descriptors follow the request;
- the lanes: step (or reset) every env requested, each a step loop over a run of
  consecutive envs that answers every env with nothing to say the moment it is done
  (``WorkerLanes.done``); the envs with something to say (an info, a reset info, an
  error) share one ``EnvMessages``, sent once the serving is over, and are answered after
  it: one pipe message per serving at most, whatever the number of envs that talk.

Example:
    >>> import gymnasium as gym
    >>> from vec_envs.spaces.shared_memory import SharedBuffers
    >>> from vec_envs.workers.protocol import ResetRequest
    >>> from vec_envs.subproc.shared.control_block import ControlBlock
    >>> shared = SharedBuffers(gym.spaces.Box(-5, 5, (4,)), gym.spaces.Discrete(2), 2, ControlBlock.words(2, 1))
    >>> server = ProcessSliceServer([lambda: gym.make("CartPole-v1")] * 2, first_index=0, conn=None)
    >>> request = AttachSharedRequest(shared.space, shared.action_space, 2, 0, shared.size, 0, shared.fd, workers=1)
    >>> server.handle(PipeCommand.ATTACH_SHARED, request).ok
    True
    >>> server.handle(Command.RESET, ResetRequest(seeds=None)).value.arrays is None  # in shared memory
    True
    >>> shared.actions[:] = [0, 1]
    >>> block = ControlBlock(shared.control, 2, 1)
    >>> block.requested[:] = 1                      # the parent requests both envs
    >>> server.serve_lanes(), block.answered.tolist()   # nothing to say: no message, answers 1 << 1
    (2, [2, 2])
    >>> server.handle(Command.CLOSE, None).ok
    True
    >>> shared.close()
"""
from __future__ import annotations

import mmap
from collections.abc import Iterable, Sequence
from multiprocessing.connection import Connection
from multiprocessing.reduction import ForkingPickler
from typing import Any, ClassVar

from vec_envs.errors import EnvCallFailed
from vec_envs.spaces.shared_memory import map_region
from vec_envs.subproc.shared.control_block import ControlBlock
from vec_envs.subproc.shared.messages import (
    NO_REPLY,
    AsyncResetRequest,
    AttachSharedRequest,
    EnvMessages,
    PipeCommand,
    Reply,
    Request,
    receive_attach,
)
from vec_envs.subproc.worker.lanes import WorkerLanes
from vec_envs.subproc.worker.unpicklable import unpicklable_reply
from vec_envs.types import EnvFn, Info
from vec_envs.workers.protocol import (
    Command,
    Outcome,
    ResetReply,
    StepReply,
    WorkerFailure,
)
from vec_envs.workers.slice_server import SliceServer

__all__ = ["ProcessSliceServer"]


class ProcessSliceServer(SliceServer):
    """A ``SliceServer`` in a worker process: its pipe ``conn``, its shared memory and lanes."""

    HANDLERS: ClassVar[dict[int, str]] = {**SliceServer.HANDLERS, PipeCommand.ATTACH_SHARED: "_attach_shared"}

    def __init__(self, env_fns: Sequence[EnvFn], first_index: int, conn: Connection | None) -> None:
        super().__init__(env_fns, first_index)
        self.conn = conn
        self.lanes: WorkerLanes | None = None  # when the actions and the control block are shared
        self.bells: tuple[int, ...] | None = None  # the workers' bell (``wake.WorkerBell``), polled asleep
        self._region: mmap.mmap | None = None

    # ------------------------------------------------------------------ the pipe
    def serve_command(self) -> int:
        """Read the request waiting in the pipe and answer it; returns its command."""
        request: Request = self._pipe.recv()
        command, payload = request.command, request.payload
        if command in NO_REPLY:
            if command == PipeCommand.ASYNC_RESET:
                self.async_reset(payload)
            return command
        if command == PipeCommand.ATTACH_SHARED:
            payload = receive_attach(self._pipe, payload)
        self._reply(request.seq, self.handle(command, payload), command)
        return command

    @property
    def _pipe(self) -> Connection:
        if self.conn is None:
            raise RuntimeError("this slice server has no pipe")
        return self.conn

    def _reply(self, seq: int, outcome: Outcome, command: int) -> None:
        """Send the outcome; a reply that cannot be pickled becomes a failure naming why."""
        try:
            self._pipe.send(Reply(seq, outcome))
        except OSError:
            raise  # the pipe is gone: the worker's loop ends
        except Exception as exc:  # whatever pickling raises (an info's __reduce__ may raise anything)
            method = _command_name(command)
            infos = ((what, source, self.first_index + k, info) for what, source, pairs in _infos_of(outcome.value)
                     for k, info in pairs)
            failure = unpicklable_reply(method, infos, f"the result of {method}()", None, exc)
            self._pipe.send(Reply(seq, Outcome(False, failure)))

    def _attach_shared(self, request: AttachSharedRequest) -> None:
        words = ControlBlock.words(request.n, request.workers) if request.workers else 0
        self._region, full, actions, control = map_region(
            request.space, request.action_space, request.n, request.fd, request.size, words)
        stop = request.start + len(self.envs)
        self.attach(full.view(request.start, stop), None if actions is None else actions[request.start:stop])
        if control is not None and actions is not None:
            block = ControlBlock(control, request.n, request.workers)
            self.lanes = WorkerLanes(block, request.worker_index, request.start, stop, request.wake_fd)
            self.bells = request.bells

    # ----------------------------------------------------------------- the lanes
    def serve_lanes(self) -> int:
        """Step every env with a new request; how many were stepped."""
        lanes, envs, first = self.lanes, self.envs, self.first_index
        if lanes is None:
            return 0
        said: list[tuple[int, Info]] = []
        failures: dict[int, WorkerFailure] = {}
        stepped = 0
        for start, stop in lanes.take_runs():  # runs of consecutive envs: a step loop each
            actions = self.shared_actions[start:stop].copy()
            k = start
            while k < stop:
                try:
                    envs.step_run(actions, start, k, stop, lanes.done, said)
                    k = stop
                except EnvCallFailed as exc:  # said, with the others: the serving goes on
                    k = exc.env_index - first
                    failures[exc.env_index] = WorkerFailure.from_exception(exc, "step")
                    said.append((k, {}))
                    k += 1
            stepped += stop - start
        if said:
            dones, reset_infos = envs.buffers.dones, envs.reset_infos
            ended_reset = envs.pending is None  # deferred resets: an ended env was not reset
            self._say(lanes, said, [reset_infos[k] if ended_reset and dones[k] and k + first not in failures else None
                                    for k, _ in said], failures, "step")
        return stepped

    def async_reset(self, request: AsyncResetRequest) -> None:
        """ASYNC_RESET: reset every env of the slice, each answered in its lane with its number."""
        lanes, envs = self.lanes, self.envs
        if lanes is None:
            return
        lanes.skip_all()  # requests left from a round given up are void
        said: list[tuple[int, Info]] = []
        failures: dict[int, WorkerFailure] = {}
        for k, seq in enumerate(request.seqs):
            lanes.values[k] = seq << 1  # the number its answer carries
            try:
                info = envs.reset_env(k, None if request.seeds is None else request.seeds[k],
                                      None if request.options is None else request.options[k])
            except EnvCallFailed as exc:
                failures[exc.env_index] = WorkerFailure.from_exception(exc, "reset")
                said.append((k, {}))
                continue
            if info:
                said.append((k, dict(info)))
            else:
                lanes.answer(k, False)
        if said:
            self._say(lanes, said, [None] * len(said), failures, "reset")

    def _say(self, lanes: WorkerLanes, said: list[tuple[int, Info]], reset_infos: list[Info | None],
             failures: dict[int, WorkerFailure], method: str) -> None:
        """Send what the envs of ``said`` had to say in one message, then answer them."""
        first = self.first_index
        message = EnvMessages([first + k for k, _ in said], [lanes.seq(k) for k, _ in said],
                              [info for _, info in said], reset_infos, failures or None)
        try:
            self._pipe.send(message)
        except OSError:
            raise  # the pipe is gone: the worker's loop ends
        except Exception as exc:  # whatever pickling raises
            self._pipe.send(_picklable(message, method, exc))
        for k, _ in said:
            lanes.answer(k, True)


def _picklable(message: EnvMessages, method: str, exc: Exception) -> EnvMessages:
    """``message`` with each env's entry that cannot be pickled made a failure naming which
    of its infos is to blame (its step info, its reset info)."""
    failures = dict(message.failures or {})
    infos, reset_infos = list(message.infos), list(message.reset_infos)
    named = (("info", method), ("reset info", "reset")) if method == "step" else (("reset info", "reset"),)
    for j, env in enumerate(message.envs):
        try:
            ForkingPickler.dumps((infos[j], reset_infos[j]))
        except Exception:  # whatever pickling raises, this env's entry is the culprit
            entry = ((what, source, env, info) for (what, source), info in zip(named, (infos[j], reset_infos[j])))
            failures[env] = unpicklable_reply(method, entry, f"the message of env {env}", env, exc)
            infos[j], reset_infos[j] = {}, None
    return message._replace(infos=infos, reset_infos=reset_infos, failures=failures)


def _command_name(command: int) -> str:
    return (Command(command) if command in Command._value2member_map_ else PipeCommand(command)).name.lower()


def _infos_of(reply: Any) -> list[tuple[str, str, Iterable[tuple[int, Any]]]]:
    """The per-env infos a reply carries: (what, the env method, (k, info) pairs)."""
    if isinstance(reply, StepReply):
        return [("info", "step", reply.infos.items()), ("reset info", "reset", reply.reset_infos.items())]
    if isinstance(reply, ResetReply):
        return [("reset info", "reset", enumerate(reply.infos))]
    return []
