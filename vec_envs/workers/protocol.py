"""The command protocol between a worker VecEnv and its workers, whatever the transport.

A worker runs one ``SliceServer`` (its slice of envs, ``slice_server.py``). The parent
sends a ``Command`` with its typed request below (or None); every command gets exactly
one ``Outcome``: ``Outcome(True, reply)`` with the command's typed reply (``REPLY_TYPES``),
or ``Outcome(False, WorkerFailure)``. A transport carries these messages (a Ray actor's
calls, a pipe's numbered requests) and may add commands of its own, answered by its own
subclass of ``SliceServer``.

Example:
    >>> Command.STEP.name, REPLY_TYPES[Command.GET_SPACES].__name__
    ('STEP', 'SpacesReply')
"""
from __future__ import annotations

import enum
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, NamedTuple, TypeVar

import numpy as np
from gymnasium import spaces

from vec_envs.errors import EnvCallFailed
from vec_envs.stepping.env_slice import BatchStepResult
from vec_envs.types import Info, VecEnvObs

__all__ = [
    "REPLY_TYPES",
    "reply_as",
    "Arrays",
    "Command",
    "DeferResetsRequest",
    "EnvIsWrappedRequest",
    "EnvMethodRequest",
    "GetAttrRequest",
    "GetStatesRequest",
    "Outcome",
    "ResetOneReply",
    "ResetOneRequest",
    "ResetEnvsReply",
    "ResetEnvsRequest",
    "ResetReply",
    "ResetRequest",
    "SetAttrRequest",
    "SetStatesRequest",
    "SpacesReply",
    "StepBatchReply",
    "StepBatchRequest",
    "StepReply",
    "StepRequest",
    "WorkerFailure",
]


class Command(enum.IntEnum):
    """What the parent asks of a worker (the numbers travel on the wire)."""

    GET_SPACES = 1
    RESET = 2
    STEP = 3  # some envs of the slice (lock-step: all of them), with their actions
    RESET_ONE = 4
    GET_ATTR = 5
    SET_ATTR = 6
    ENV_METHOD = 7
    ENV_IS_WRAPPED = 8
    GET_IMAGES = 9
    CLOSE = 10
    GET_STATES = 11
    SET_STATES = 12
    STEP_BATCH = 13
    DEFER_RESETS = 14  # next-step / disabled autoreset: an ended env is reset at its next step
    RESET_ENVS = 15  # reset some envs of the slice


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
# GET_SPACES, GET_IMAGES and CLOSE carry None.

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


class ResetEnvsRequest(NamedTuple):
    ks: list[int]  # envs of the slice
    seeds: list[int | None]  # one per env of ``ks``
    options: list[dict[str, Any]]  # one per env of ``ks``


class DeferResetsRequest(NamedTuple):
    pending: bool  # every env's next step is its reset (a new worker's envs, not reset yet)


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


class StepRequest(NamedTuple):
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
    """The envs ``ks`` of a STEP stepped: only what the parent cannot read elsewhere.

    ``arrays`` holds their rows, in order, unless they are in memory the parent reads
    (shared memory). The parent finds the envs that ended by their done flag; where the
    buffers have terminal rows, an episode's end says nothing more
    (``stepping/ended_infos.py``), elsewhere it is in the env's info.
    """

    infos: dict[int, Info]  # non-empty infos, by env of the slice
    reset_infos: dict[int, Info]  # the non-empty ones of the envs that ended and were reset
    arrays: Arrays | None


class ResetOneReply(NamedTuple):
    obs: Any
    info: Info


class ResetEnvsReply(NamedTuple):
    obs: list[Any]  # one first observation per env asked for, in order
    infos: list[Info]


class StepBatchReply(NamedTuple):
    outcomes: list[BatchStepResult]
    arrays: Arrays | None


#: The reply each command's ``Outcome`` carries when ok (None: no value).
REPLY_TYPES: Mapping[Command, type | None] = MappingProxyType({
    Command.GET_SPACES: SpacesReply, Command.RESET: ResetReply, Command.STEP: StepReply,
    Command.RESET_ONE: ResetOneReply, Command.GET_ATTR: list, Command.SET_ATTR: list, Command.ENV_METHOD: list,
    Command.ENV_IS_WRAPPED: list, Command.GET_IMAGES: list, Command.CLOSE: None, Command.GET_STATES: list,
    Command.SET_STATES: None, Command.STEP_BATCH: StepBatchReply, Command.DEFER_RESETS: None,
    Command.RESET_ENVS: ResetEnvsReply,
})


R = TypeVar("R")


def reply_as(value: object, expected: type[R]) -> R:
    """An ok ``Outcome``'s value, read as the reply type of its command (``REPLY_TYPES``):
    typed where it is used; another type is a protocol error, raised as such."""
    if not isinstance(value, expected):
        raise TypeError(f"a worker replied with a {type(value).__name__} where a {expected.__name__} was due")
    return value
