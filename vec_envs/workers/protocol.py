"""The command protocol between a worker VecEnv and its workers, transport-free.

A worker runs one ``SliceServer`` (its slice of envs). The parent sends
``(Command, request)``, where the request is the command's typed payload below (or
None); every command gets exactly one ``Outcome``: ``Outcome(True, reply)`` with the
command's typed reply, or ``Outcome(False, WorkerFailure)``. Each request and reply type
is defined here, beside the handler that reads or builds it; subprocess pipes and Ray
actors only carry these messages, and a transport's own commands (the subprocess
transport's ``ATTACH_SHARED``) are answered by its own subclass of ``SliceServer``.

Example:
    >>> import gymnasium as gym
    >>> server = SliceServer([lambda: gym.make("CartPole-v1")] * 2, first_index=0)
    >>> outcome = server.handle(Command.RESET, ResetRequest(seeds=[1, 2]))
    >>> outcome.ok, outcome.value.arrays.obs.shape
    (True, (2, 4))
    >>> server.handle(Command.STEP, np.array([0, 1])).value.arrays.dones
    array([False, False])
    >>> server.handle(Command.CLOSE, None).ok
    True
"""
from __future__ import annotations

import enum
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, ClassVar, NamedTuple

import numpy as np
from gymnasium import spaces

from vec_envs.errors import EnvCallFailed
from vec_envs.spaces.batching import BatchBuffers, take_rows
from vec_envs.stepping.env_slice import BatchStepResult, EnvSlice
from vec_envs.types import EnvFn, Info, VecEnvObs

__all__ = [
    "EMPTY_STEP_REPLY",
    "Arrays",
    "Command",
    "EnvIsWrappedRequest",
    "EnvMethodRequest",
    "GetAttrRequest",
    "GetStatesRequest",
    "Outcome",
    "ResetOneReply",
    "ResetOneRequest",
    "ResetReply",
    "ResetRequest",
    "SetAttrRequest",
    "SetStatesRequest",
    "SliceServer",
    "SpacesReply",
    "StepBatchReply",
    "StepBatchRequest",
    "StepEnvsReply",
    "StepEnvsRequest",
    "StepReply",
    "WorkerFailure",
]


class Command(enum.IntEnum):
    """What the parent asks of a worker (the numbers travel on the wire)."""

    GET_SPACES = 1
    ATTACH_SHARED = 2  # subprocess transport only (vec_envs/subproc/shared_slice_server.py)
    RESET = 3
    STEP = 4
    RESET_ONE = 5
    GET_ATTR = 6
    SET_ATTR = 7
    ENV_METHOD = 8
    ENV_IS_WRAPPED = 9
    GET_IMAGES = 10
    CLOSE = 11
    GET_STATES = 12
    SET_STATES = 13
    STEP_BATCH = 14
    STEP_ENVS = 15  # asynchronous batches: step some envs of the slice
    ASYNC_RESET = 16  # subprocess transport only: answered per env in shared memory (env_slots.py)
    WAKE = 17  # subprocess transport only: "new requests in shared memory"; no reply


@dataclass
class WorkerFailure:
    """Why a command failed in a worker: which env, which method, the remote traceback."""

    env_index: int | None
    method: str
    summary: str
    traceback: str

    @classmethod
    def from_exception(cls, exc: BaseException, method: str) -> WorkerFailure:
        """The failure of ``method``; an ``EnvCallFailed`` names the env and its own method."""
        env_index = None
        if isinstance(exc, EnvCallFailed):
            env_index, method = exc.env_index, exc.method
            exc = exc.__cause__ or exc
        text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        traceback.clear_frames(exc.__traceback__)  # their locals (views of shared memory) go now
        return cls(env_index, method, f"{type(exc).__name__}: {exc}", text)


class Outcome(NamedTuple):
    """The one answer to every command: the command's reply, or why it failed."""

    ok: bool
    value: Any  # the command's reply if ok, else a WorkerFailure


# ------------------------------------------------------------------ requests
# GET_SPACES, GET_IMAGES and CLOSE carry None; STEP carries the slice's actions, or None
# when the transport put them where the server reads them (``SliceServer.attach``).

class ResetRequest(NamedTuple):
    seeds: Sequence[int | None] | None  # one per env of the slice; None: no reseeding
    options: Sequence[dict | None] | None = None  # one per env of the slice; None: no options

    @classmethod
    def of_slice(cls, seeds: Sequence[int | None] | None, options: Sequence[dict | None] | None,
                 first: int, stop: int) -> ResetRequest:
        """The request for envs ``first:stop`` out of the VecEnv's seeds and options (one per env)."""
        return cls(None if seeds is None else seeds[first:stop], None if options is None else options[first:stop])


class ResetOneRequest(NamedTuple):
    k: int  # the env's place in the slice
    seed: int | None


class GetAttrRequest(NamedTuple):
    name: str
    ks: list[int]


class SetAttrRequest(NamedTuple):
    name: str
    value: Any
    ks: list[int]


class EnvMethodRequest(NamedTuple):
    name: str
    args: tuple
    kwargs: dict[str, Any]
    ks: list[int]


class EnvIsWrappedRequest(NamedTuple):
    wrapper_class: type
    ks: list[int]


class GetStatesRequest(NamedTuple):
    ks: list[int]


class SetStatesRequest(NamedTuple):
    states: list[Any]
    ks: list[int]


class StepBatchRequest(NamedTuple):
    actions: Any
    states: Sequence[Any] | None
    dts: Sequence[int]
    return_states: bool


class StepEnvsRequest(NamedTuple):
    ks: list[int]  # envs of the slice, in the order of ``actions``
    actions: Any  # one action per env of ``ks``


# ------------------------------------------------------------------- replies
class Arrays(NamedTuple):
    """The slice's batch rows, sent only when they are not in memory the parent reads."""

    obs: VecEnvObs
    rewards: np.ndarray
    dones: np.ndarray


class SpacesReply(NamedTuple):
    observation_space: spaces.Space
    action_space: spaces.Space


class ResetReply(NamedTuple):
    infos: list[Info]
    arrays: Arrays | None


class StepReply(NamedTuple):
    """Only what the parent cannot read elsewhere: non-empty infos, by env of the slice,
    and the non-empty reset infos of the envs that ended (and were reset).

    The parent finds the envs that ended by their done flag. Where the buffers have
    terminal rows (shared memory), their ``terminal_observation`` and
    ``TimeLimit.truncated`` are there (``with_terminal``), so an episode's end alone
    leaves the reply empty; elsewhere they are in the env's info, which is never empty then.
    """

    infos: Mapping[int, Info]
    reset_infos: Mapping[int, Info]  # the non-empty ones of the envs that ended and were reset
    arrays: Arrays | None

    @property
    def is_empty(self) -> bool:
        return not self.infos and not self.reset_infos and self.arrays is None


#: A step with nothing to say: no infos, every array in shared memory (immutable, so shared).
EMPTY_STEP_REPLY = StepReply(MappingProxyType({}), MappingProxyType({}), None)


class StepEnvsReply(NamedTuple):
    """The envs ``ks`` of a STEP_ENVS request stepped; ``arrays`` holds their rows, in order."""

    infos: dict[int, Info]  # non-empty infos, by env of the slice
    reset_infos: dict[int, Info]  # of the envs that ended and were reset
    arrays: Arrays | None


class ResetOneReply(NamedTuple):
    obs: Any
    info: Info


class StepBatchReply(NamedTuple):
    outcomes: list[BatchStepResult]
    arrays: Arrays | None


# -------------------------------------------------------------------- server
class SliceServer:
    """Builds a slice of envs and answers the parent's commands about it.

    ``HANDLERS`` maps each command this server answers to the name of its handler; a
    transport's subclass adds its own commands there.
    """

    HANDLERS: ClassVar[dict[Command, str]] = {
        Command.GET_SPACES: "_get_spaces",
        Command.RESET: "_reset",
        Command.STEP: "_step",
        Command.RESET_ONE: "_reset_one",
        Command.GET_ATTR: "_get_attr",
        Command.SET_ATTR: "_set_attr",
        Command.ENV_METHOD: "_env_method",
        Command.ENV_IS_WRAPPED: "_env_is_wrapped",
        Command.GET_IMAGES: "_get_images",
        Command.CLOSE: "_close",
        Command.GET_STATES: "_get_states",
        Command.SET_STATES: "_set_states",
        Command.STEP_BATCH: "_step_batch",
        Command.STEP_ENVS: "_step_envs",
    }

    def __init__(self, env_fns: Sequence[EnvFn], first_index: int) -> None:
        self.first_index = first_index
        self.slice: EnvSlice | None = None
        self.startup_failure: WorkerFailure | None = None
        self.shared = False
        self._actions: Any = None  # an array the transport writes the actions into (attach)
        try:
            self.slice = EnvSlice(env_fns, first_index)
        except Exception as exc:  # reported on the first command: the worker must not die
            self.startup_failure = WorkerFailure.from_exception(exc, "__init__")
        self._handlers: dict[int, Callable[[Any], Any]] = {
            command: getattr(self, name) for command, name in self.HANDLERS.items()}

    def handle(self, command: int, payload: Any) -> Outcome:
        """Run one command; never raises: a failure becomes ``Outcome(False, WorkerFailure)``."""
        handler = self._handlers.get(command)
        if handler is None:
            valid = ", ".join(f"{Command(c).name}={c}" for c in self._handlers)
            return Outcome(False, WorkerFailure(None, "handle", f"unknown command {command!r}; valid: {valid}", ""))
        if self.startup_failure is not None and command != Command.CLOSE:
            return Outcome(False, self.startup_failure)
        try:
            return Outcome(True, handler(payload))
        except Exception as exc:
            return Outcome(False, WorkerFailure.from_exception(exc, Command(command).name.lower()))

    @property
    def envs(self) -> EnvSlice:
        """The slice; ``handle`` answers with the startup failure before any handler needs it."""
        if self.slice is None:
            raise RuntimeError("this worker's envs failed to start or are closed")
        return self.slice

    def attach(self, buffers: BatchBuffers, actions: np.ndarray | None = None) -> None:
        """Step into ``buffers`` (views the parent reads); read actions from ``actions``."""
        self.envs.attach(buffers)
        self._actions = actions
        self.shared = True

    def _arrays(self) -> Arrays | None:
        if self.shared:
            return None
        buffers = self.envs.buffers
        return Arrays(buffers.obs, buffers.rewards, buffers.dones)

    def _get_spaces(self, _: None) -> SpacesReply:
        return SpacesReply(self.envs.observation_space, self.envs.action_space)

    def _reset(self, request: ResetRequest) -> ResetReply:
        return ResetReply(list(self.envs.reset(request.seeds, request.options)), self._arrays())

    def _step(self, actions: Any | None) -> StepReply:
        envs = self.envs
        if actions is None:  # the transport wrote them where we read them (attach)
            actions = self._actions.copy()
        infos = envs.step(actions)
        ended = envs.ended(infos)
        if not ended and not any(infos):  # the usual step: nothing to say
            return StepReply({}, {}, self._arrays())
        reset_infos = envs.reset_infos
        return StepReply({k: info for k, info in enumerate(infos) if info},
                         {k: reset_infos[k] for k in ended if reset_infos[k]}, self._arrays())

    def _step_envs(self, request: StepEnvsRequest) -> StepEnvsReply:
        envs = self.envs
        infos = {k: info for k, action in zip(request.ks, request.actions) if (info := envs.step_env(k, action))}
        dones = envs.buffers.dones
        reset_infos = {k: envs.reset_infos[k] for k in request.ks if dones[k] and envs.reset_infos[k]}
        arrays = None
        if not self.shared:
            ks = np.asarray(request.ks, np.int64)
            arrays = Arrays(take_rows(envs.buffers.obs, ks), envs.buffers.rewards[ks], dones[ks])
        return StepEnvsReply(infos, reset_infos, arrays)

    def _reset_one(self, request: ResetOneRequest) -> ResetOneReply:
        obs = self.envs.reset_one(request.k, request.seed)
        return ResetOneReply(obs, self.envs.reset_infos[request.k])

    def _get_attr(self, request: GetAttrRequest) -> list[Any]:
        return self.envs.get_attr(request.name, request.ks)

    def _set_attr(self, request: SetAttrRequest) -> list[None]:
        return self.envs.set_attr(request.name, request.value, request.ks)

    def _env_method(self, request: EnvMethodRequest) -> list[Any]:
        return self.envs.env_method(request.name, request.args, request.kwargs, request.ks)

    def _env_is_wrapped(self, request: EnvIsWrappedRequest) -> list[bool]:
        return self.envs.env_is_wrapped(request.wrapper_class, request.ks)

    def _get_images(self, _: None) -> list[np.ndarray]:
        return self.envs.get_images()

    def _get_states(self, request: GetStatesRequest) -> list[Any]:
        return self.envs.get_states(request.ks)

    def _set_states(self, request: SetStatesRequest) -> None:
        self.envs.set_states(request.states, request.ks)

    def _step_batch(self, request: StepBatchRequest) -> StepBatchReply:
        outcomes = self.envs.step_batch(request.actions, request.states, request.dts, request.return_states)
        return StepBatchReply(outcomes, self._arrays())

    def _close(self, _: None) -> None:
        if self.slice is not None:
            env_slice, self.slice = self.slice, None
            env_slice.close()

    def close_quietly(self) -> None:
        """Close the envs if CLOSE never came (the parent died); errors are moot then."""
        try:
            self._close(None)
        except Exception:
            pass
