"""SliceServer: a worker's slice of envs, answering the parent's commands about it.

The server side of the protocol (``protocol.py``): the same in a worker process, a Ray
actor and the parent's own slice (``LocalWorker``).

Example:
    >>> import gymnasium as gym
    >>> server = SliceServer([lambda: gym.make("CartPole-v1")] * 2, first_index=0)
    >>> outcome = server.handle(Command.RESET, ResetRequest(seeds=[1, 2]))
    >>> outcome.ok, outcome.value.arrays.obs.shape
    (True, (2, 4))
    >>> server.handle(Command.STEP, StepRequest([0, 1], np.array([0, 1]))).value.arrays.dones
    array([False, False])
    >>> server.handle(Command.CLOSE, None).ok
    True
"""
from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np

from vec_envs.spaces.batching import BatchBuffers, copy_obs, get_row, take_rows
from vec_envs.stepping.env_slice import EnvSlice
from vec_envs.types import EnvFn
from vec_envs.workers.protocol import (
    Arrays,
    Command,
    DeferResetsRequest,
    EnvIsWrappedRequest,
    EnvMethodRequest,
    GetAttrRequest,
    GetStatesRequest,
    Outcome,
    ResetEnvsReply,
    ResetEnvsRequest,
    ResetOneReply,
    ResetOneRequest,
    ResetReply,
    ResetRequest,
    SetAttrRequest,
    SetStatesRequest,
    SpacesReply,
    StepBatchReply,
    StepBatchRequest,
    StepReply,
    StepRequest,
    WorkerFailure,
)

__all__ = ["SliceServer"]


class SliceServer:
    """Builds a slice of envs and answers the parent's commands about it.

    ``HANDLERS`` maps each command this server answers to the name of its handler; a
    transport's subclass adds its own commands there.
    """

    HANDLERS: ClassVar[dict[int, str]] = {
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
        Command.DEFER_RESETS: "_defer_resets",
        Command.RESET_ENVS: "_reset_envs",
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
            valid = ", ".join(f"{_name(c)}={c}" for c in self._handlers)
            return Outcome(False, WorkerFailure(None, "handle", f"unknown command {command!r}; valid: {valid}", ""))
        if self.startup_failure is not None and command != Command.CLOSE:
            return Outcome(False, self.startup_failure)
        try:
            return Outcome(True, handler(payload))
        except Exception as exc:
            return Outcome(False, WorkerFailure.from_exception(exc, _name(command).lower()))

    @property
    def envs(self) -> EnvSlice:
        """The slice; ``handle`` answers with the startup failure before any handler needs it."""
        if self.slice is None:
            raise RuntimeError("this worker's envs failed to start or are closed")
        return self.slice

    @property
    def shared_actions(self) -> np.ndarray:
        """The array the transport writes this slice's actions into (``attach``)."""
        if self._actions is None:
            raise RuntimeError("this worker reads its actions from its commands, not from shared memory")
        return self._actions

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

    def _step(self, request: StepRequest) -> StepReply:
        envs = self.envs
        infos = {k: info for k, action in zip(request.ks, request.actions) if (info := envs.step_env(k, action))}
        dones = envs.buffers.dones
        reset_infos = {k: envs.reset_infos[k] for k in request.ks
                       if dones[k] and envs.pending is None and envs.reset_infos[k]}
        arrays = None
        if not self.shared:
            ks = np.asarray(request.ks, np.int64)
            arrays = Arrays(take_rows(envs.buffers.obs, ks), envs.buffers.rewards[ks], dones[ks])
        return StepReply(infos, reset_infos, arrays)

    def _reset_one(self, request: ResetOneRequest) -> ResetOneReply:
        obs = self.envs.reset_one(request.k, request.seed)
        return ResetOneReply(obs, self.envs.reset_infos[request.k])

    def _reset_envs(self, request: ResetEnvsRequest) -> ResetEnvsReply:
        envs = self.envs
        infos = [dict(envs.reset_env(k, seed, options))
                 for k, seed, options in zip(request.ks, request.seeds, request.options)]
        return ResetEnvsReply([copy_obs(get_row(envs.buffers.obs, k)) for k in request.ks], infos)

    def _defer_resets(self, request: DeferResetsRequest) -> None:
        self.envs.defer_resets(request.pending)

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


def _name(command: int) -> str:
    """A command's name: the protocol's, else the transport's own (an ``IntEnum`` member keeps it)."""
    return command.name if isinstance(command, enum.IntEnum) else Command(command).name
