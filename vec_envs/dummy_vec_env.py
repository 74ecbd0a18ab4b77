"""DummyVecEnv: every env in this process, stepped in series."""
from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np

from vec_envs.arguments import check_env_fns, resolve_autoreset_mode
from vec_envs.autoreset import AutoresetMode
from vec_envs.errors import EnvCallFailed
from vec_envs.failure_state import env_exception
from vec_envs.spaces.batching import copy_obs, take_rows
from vec_envs.types import EnvFn, VecEnvIndices, VecEnvObs, VecEnvRecvReturn, VecEnvStepReturn
from vec_envs.vec_env_base import VecEnvBase
from vec_envs.workers.env_slice import EnvSlice
from vec_envs.workers.wire import ENV_CALLS

__all__ = ["DummyVecEnv"]

T = TypeVar("T")


def _run(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)``; an env's failure reaches the caller as the env's own exception."""
    try:
        return fn(*args)
    except EnvCallFailed as failure:
        raise env_exception(failure, "DummyVecEnv") from None


class DummyVecEnv(VecEnvBase):
    """All envs in this process, stepped in series: the reference backend.

    Args:
        env_fns: one zero-argument factory per env.
        copy: return fresh observation arrays (True) or views of the internal buffer,
            valid until the next step / reset (False).
        batch_size: envs per ``recv`` (None: all). In series nothing finishes early, so
            ``recv`` is round robin: it steps and returns the ``batch_size`` envs in flight
            that were sent longest ago (envs sent together in the order of their ids).
        autoreset_mode: ``"same_step"`` (default), ``"next_step"`` or ``"disabled"``
            (or gymnasium's ``AutoresetMode``): what an env's rows are after its episode
            ends (see ``vec_envs.autoreset``).

    An env's exception reaches the caller as itself, with a note naming the env index;
    after one in ``step`` / ``recv`` / ``reset`` only a reset (or ``close``) is accepted.

    Example:
        >>> import gymnasium as gym
        >>> with DummyVecEnv([lambda: gym.make("CartPole-v1")] * 8) as venv:
        ...     venv.reset().shape
        (8, 4)
    """

    def __init__(self, env_fns: Sequence[EnvFn], copy: bool = True, batch_size: int | None = None,
                 autoreset_mode: AutoresetMode | str = AutoresetMode.SAME_STEP) -> None:
        env_fns = check_env_fns(env_fns, "DummyVecEnv", picklable=False)
        mode = resolve_autoreset_mode(autoreset_mode, "DummyVecEnv")
        self.slice = _run(EnvSlice, env_fns, 0, mode is not AutoresetMode.SAME_STEP)
        super().__init__(len(env_fns), self.slice.observation_space, self.slice.action_space, batch_size, mode)
        self.envs = self.slice.envs
        self.copy = copy
        self.reset_infos = self.slice.reset_infos
        self._actions: Any = None
        #: envs in flight, sent longest ago first: (env index, ("reset", (seed, options)) or ("step", action))
        self._queue: deque[tuple[int, tuple[str, Any]]] = deque()

    def _out(self) -> VecEnvObs:
        obs = self.slice.buffers.obs
        return copy_obs(obs) if self.copy else obs

    # An env's failure in reset, step or recv leaves as EnvCallFailed: the base class
    # raises the env's own exception and refuses further calls until a reset.
    def _reset(self, seeds: list[int | None] | None, options: list[dict[str, Any]] | None) -> VecEnvObs:
        self.slice.reset(seeds, options)
        return self._out()

    def _step_async(self, actions: Any) -> None:
        self._actions = actions

    def _step_wait(self, timeout: float | None) -> VecEnvStepReturn:
        infos = self.slice.step(self._actions)
        buffers = self.slice.buffers
        return self._out(), buffers.rewards.copy(), buffers.dones.copy(), infos

    def _reset_single_env(self, index: int, seed: int | None) -> Any:
        return self._call("reset_one", [index], per_env=[(seed, None)])[0][0]

    def _reset_envs(self, indices: list[int], seeds: list[int | None], options: list[dict[str, Any]]) -> VecEnvObs:
        for i, seed, env_options in zip(indices, seeds, options):
            _run(self.slice.reset_env, i, seed, env_options)
        return take_rows(self.slice.buffers.obs, np.asarray(indices, np.int64))

    # ------------------------------------------------------- asynchronous batches
    def _async_reset(self, seeds: list[int | None] | None, options: list[dict[str, Any]] | None) -> None:
        self._queue.clear()
        for i in range(self.num_envs):
            self._queue.append((i, ("reset", (None if seeds is None else seeds[i],
                                              None if options is None else options[i]))))

    def _send(self, actions: Any, env_ids: np.ndarray) -> None:
        self._queue.extend((int(i), ("step", actions[j])) for j, i in enumerate(env_ids))

    def _recv(self, count: int, timeout: float | None) -> VecEnvRecvReturn:
        batch = [self._queue.popleft() for _ in range(count)]
        env_ids = np.fromiter((i for i, _ in batch), np.int64, count)
        try:
            infos = [self._advance(i, kind, value) for i, (kind, value) in batch]
        except EnvCallFailed:
            self._queue.clear()
            raise
        buffers = self.slice.buffers
        return take_rows(buffers.obs, env_ids), buffers.rewards[env_ids], buffers.dones[env_ids], infos, env_ids

    def _advance(self, i: int, kind: str, value: Any) -> dict[str, Any]:
        """Reset (with ``value = (seed, options)``) or step (with action ``value``) env ``i``; its info."""
        if kind == "reset":
            return dict(self.slice.reset_env(i, *value))
        return self.slice.step_env(i, value)


    def _call(self, method: str, ids: list[int], args: tuple = (), per_env: list | None = None) -> list[Any]:
        """``method`` of ``wire.ENV_CALLS`` on envs ``ids``, one result each."""
        call = ENV_CALLS[method]
        return _run(lambda: [call(self.slice, i, None if per_env is None else per_env[j], *args)
                             for j, i in enumerate(ids)])

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        self._check_idle("get_attr")
        return self._call("get_attr", self._indices(indices, "get_attr"), (attr_name,))

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        self._check_idle("set_attr")
        self._call("set_attr", self._indices(indices, "set_attr"), (attr_name, value))

    def env_method(self, method_name: str, *method_args: Any, indices: VecEnvIndices = None,
                   **method_kwargs: Any) -> list[Any]:
        self._check_idle("env_method")
        return self._call("env_method", self._indices(indices, "env_method"), (method_name, method_args, method_kwargs))

    def env_is_wrapped(self, wrapper_class: type, indices: VecEnvIndices = None) -> list[bool]:
        self._check_idle("env_is_wrapped")
        return self._call("env_is_wrapped", self._indices(indices, "env_is_wrapped"), (wrapper_class,))

    def get_images(self) -> list[np.ndarray]:
        self._check_idle("get_images")
        return self._call("get_images", list(range(self.num_envs)))

    def _get_states(self, indices: list[int]) -> list[Any]:
        return self._call("get_states", indices)

    def _set_states(self, states: list[Any], indices: list[int]) -> None:
        self._call("set_states", indices, per_env=list(states))

    def _step_batch(self, actions: Any, states: list[Any] | None, dts: list[int],
                    return_states: bool) -> tuple[VecEnvObs, list[tuple]]:
        outcomes = _run(lambda: [self.slice.step_from(i, None if states is None else states[i], actions[i], dts[i],
                                                      return_states) for i in range(self.num_envs)])
        return self._out(), outcomes

    def close_extras(self) -> None:
        _run(self.slice.close)
