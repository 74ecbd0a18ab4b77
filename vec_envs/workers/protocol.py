"""The command protocol between a worker VecEnv and its workers, transport-free.

A worker runs one ``SliceServer`` (its slice of envs). The parent sends
``(Command, payload)``; every command gets exactly one reply: ``(True, result)`` or
``(False, WorkerFailure)``. Subprocess pipes and Ray actors only carry these messages.
"""
from __future__ import annotations

import enum
import traceback
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from vec_envs.errors import EnvCallFailed
from vec_envs.stepping.env_slice import EnvSlice
from vec_envs.subproc.doorbell import Doorbell
from vec_envs.spaces.shared_memory import map_buffers
from vec_envs.types import EnvFn

__all__ = ["Command", "WorkerFailure", "SliceServer"]


class Command(enum.IntEnum):
    """What the parent asks of a worker."""

    GET_SPACES = 1
    ATTACH_SHARED = 2
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


@dataclass
class WorkerFailure:
    """Why a command failed in a worker: which env, which method, the remote traceback."""

    env_index: int | None
    method: str
    summary: str
    traceback: str

    @classmethod
    def from_exception(cls, exc: BaseException, method: str) -> WorkerFailure:
        env_index = None
        if isinstance(exc, EnvCallFailed):
            env_index, method = exc.env_index, exc.method
            exc = exc.__cause__ or exc
        text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        return cls(env_index, method, f"{type(exc).__name__}: {exc}", text)


class SliceServer:
    """Builds a slice of envs and answers the parent's commands about it.

    Example:
        >>> import gymnasium as gym
        >>> server = SliceServer([lambda: gym.make("CartPole-v1")] * 2, first_index=4)
        >>> ok, (infos, arrays) = server.handle(Command.RESET, [0, 1])
        >>> ok, arrays[0].shape                     # observations of envs 4 and 5
        (True, (2, 4))
        >>> server.handle(Command.CLOSE, None)
        (True, None)
    """

    def __init__(self, env_fns: Sequence[EnvFn], first_index: int) -> None:
        self.first_index = first_index
        self.slice: EnvSlice | None = None
        self.startup_failure: WorkerFailure | None = None
        self.shared = False
        self._region: Any = None
        self._actions: Any = None
        self.doorbell: Doorbell | None = None
        try:
            self.slice = EnvSlice(env_fns, first_index)
        except Exception as exc:  # reported on the first command: the worker must not die
            self.startup_failure = WorkerFailure.from_exception(exc, "__init__")
        self._handlers: dict[int, Callable[[Any], Any]] = {  # Command is an int: a raw int finds it
            Command.GET_SPACES: self._get_spaces,
            Command.ATTACH_SHARED: self._attach_shared,
            Command.RESET: self._reset,
            Command.STEP: self._step,
            Command.RESET_ONE: self._reset_one,
            Command.GET_ATTR: lambda p: self.envs.get_attr(*p),
            Command.SET_ATTR: lambda p: self.envs.set_attr(*p),
            Command.ENV_METHOD: lambda p: self.envs.env_method(*p),
            Command.ENV_IS_WRAPPED: lambda p: self.envs.env_is_wrapped(*p),
            Command.GET_IMAGES: lambda p: self.envs.get_images(),
            Command.CLOSE: self._close,
            Command.GET_STATES: lambda p: self.envs.get_states(p),
            Command.SET_STATES: lambda p: self.envs.set_states(*p),
            Command.STEP_BATCH: self._step_batch,
        }

    @property
    def envs(self) -> EnvSlice:
        """The slice; ``handle`` answers with the startup failure before any handler needs it."""
        if self.slice is None:
            raise RuntimeError("this worker's envs failed to start or are closed")
        return self.slice

    def handle(self, command: int, payload: Any) -> tuple[bool, Any]:
        """Run one command; never raises: failures become ``(False, WorkerFailure)``."""
        handler = self._handlers.get(command)
        if handler is None:
            valid = ", ".join(f"{c.name}={c.value}" for c in Command)
            return False, WorkerFailure(None, "handle", f"unknown command {command!r}; valid: {valid}", "")
        if self.startup_failure is not None and command != Command.CLOSE:
            return False, self.startup_failure
        try:
            return True, handler(payload)
        except Exception as exc:
            return False, WorkerFailure.from_exception(exc, Command(command).name.lower())

    def _get_spaces(self, _: Any) -> tuple:
        return self.envs.observation_space, self.envs.action_space

    def _attach_shared(self, payload: tuple) -> None:
        space, action_space, n, start, size, doorbells, worker_index, fd = payload
        self._region, full, actions, bells = map_buffers(space, action_space, n, doorbells, fd, size)
        stop = start + len(self.envs)
        self.attach(full.view(start, stop), None if actions is None else actions[start:stop])
        self.doorbell = None if bells is None else Doorbell(bells[worker_index])

    def attach(self, buffers: Any, actions: Any = None) -> None:
        """Step into ``buffers`` (views the parent reads); read actions from ``actions``."""
        self.envs.attach(buffers)
        self._actions = actions
        self.shared = True

    def _arrays(self) -> tuple | None:
        buffers = self.envs.buffers
        return None if self.shared else (buffers.obs, buffers.rewards, buffers.dones)

    def _reset(self, seeds: Sequence[int | None] | None) -> tuple:
        infos = self.envs.reset(seeds)
        return list(infos), self._arrays()

    def _step(self, actions: Sequence[Any] | None) -> tuple:
        if actions is None:  # the parent wrote them to shared memory
            actions = self._actions.copy()
        envs = self.envs
        infos = envs.step(actions)
        sparse = {k: info for k, info in enumerate(infos) if info}
        reset_infos = envs.reset_infos
        dones = envs.buffers.dones
        new_reset_infos = {k: reset_infos[k] for k in range(len(infos)) if dones[k] and reset_infos[k]}
        return sparse, new_reset_infos, self._arrays()

    def _reset_one(self, payload: tuple) -> tuple:
        k, seed = payload
        return self.envs.reset_one(k, seed), self.envs.reset_infos[k]

    def _step_batch(self, payload: tuple) -> tuple:
        actions, states, dts, return_states = payload
        return self.envs.step_batch(actions, states, dts, return_states), self._arrays()

    def _close(self, _: Any) -> None:
        if self.slice is not None:
            env_slice, self.slice = self.slice, None
            env_slice.close()

    def close_quietly(self) -> None:
        """Close the envs if CLOSE never came (the parent died); errors are moot then."""
        try:
            self._close(None)
        except Exception:
            pass
