"""BackendHooks: what a backend fills in under VecEnvBase's control flow.

``VecEnvBase``'s public methods check every call, then call a hook with canonical arguments. The
asynchronous batches (``_async_reset``, ``_recv``, ``_send``) and the planning hooks are optional:
without them a backend raises ``NotImplementedError`` saying what to use instead.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import numpy as np

from vec_envs.types import VecEnvIndices, VecEnvObs, VecEnvRecvReturn, VecEnvStepReturn

__all__ = ["BackendHooks"]

NO_ASYNC = "{cls}.{method}(): {cls} has no asynchronous batches (recv/send); use step(), or a backend that has them"
NO_STATES = ("{cls}.{method}(): {cls} keeps no env states; call it on the backend (venv.unwrapped), "
             "whose observations skip this wrapper's processing")


class BackendHooks(ABC):
    """The hooks a VecEnv backend fills in; ``VecEnvBase`` calls them after its checks."""

    @abstractmethod
    def _reset(self, seeds: list[int | None] | None, options: list[dict[str, Any]] | None) -> VecEnvObs:
        """Reset every env (env i with ``seeds[i]`` and ``options[i]`` when given); the batch."""

    @abstractmethod
    def _step_async(self, actions: Any) -> None:
        """Start stepping with validated actions."""

    @abstractmethod
    def _step_wait(self, timeout: float | None) -> VecEnvStepReturn:
        """Finish the step started by ``_step_async``."""

    @abstractmethod
    def _reset_single_env(self, index: int, seed: int | None) -> Any:
        """Reset env ``index`` alone and return its observation."""

    def _reset_envs(self, indices: list[int], seeds: list[int | None], options: list[dict[str, Any]]) -> VecEnvObs:
        """Reset env ``indices[j]`` with ``seeds[j]`` and ``options[j]``, the others untouched; their first
        observations, batched in that order (reset infos in ``reset_infos``)."""
        raise NotImplementedError(f"{type(self).__name__}.reset_envs(): {type(self).__name__} cannot reset some "
                                  "envs alone; call reset()")

    def close_extras(self) -> None:  # noqa: B027 (a hook: backends with nothing to release keep it)
        """Release what the backend holds (workers, shared memory); called once by close()."""

    def close_interrupted(self) -> None:
        """End a ``close_extras`` a Ctrl-C stopped part-way (the next close() calls this); by default, rerun it."""
        self.close_extras()

    def _action_owner(self, index: int) -> str:
        """Who acts at env ``index``, as the message of a refused action names it."""
        return f"env {index}"

    def _ignored_actions(self, env_ids: np.ndarray | None) -> np.ndarray | None:
        """Per action of a step (``env_ids`` None) or send: True where nobody reads it (its range goes
        unchecked); None when every action is read."""
        return None

    @abstractmethod
    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        """``attr_name`` of each sub-env named by ``indices``, in index order."""

    @abstractmethod
    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        """Set ``attr_name`` to ``value`` on each sub-env named by ``indices``."""

    @abstractmethod
    def env_method(self, method_name: str, *method_args: Any, indices: VecEnvIndices = None,
                   **method_kwargs: Any) -> list[Any]:
        """Call ``method_name(*args, **kwargs)`` on each sub-env named by ``indices``."""

    @abstractmethod
    def env_is_wrapped(self, wrapper_class: type, indices: VecEnvIndices = None) -> list[bool]:
        """Whether each sub-env named by ``indices`` has ``wrapper_class`` in its chain."""

    @abstractmethod
    def get_images(self) -> list[np.ndarray]:
        """One (H, W, 3) frame per env (the envs need ``render_mode="rgb_array"``)."""

    def _async_reset(self, seeds: list[int | None] | None, options: list[dict[str, Any]] | None) -> None:
        """Start resetting every env (env i with ``seeds[i]`` and ``options[i]`` when given)."""
        raise NotImplementedError(NO_ASYNC.format(cls=type(self).__name__, method="async_reset"))

    def _recv(self, count: int, timeout: float | None) -> VecEnvRecvReturn:
        """The first ``count`` envs whose reset or step finished: ``(obs, rewards, dones, infos, env_ids)``,
        rows in ``env_ids`` order; EnvTimeoutError after ``timeout``."""
        raise NotImplementedError(NO_ASYNC.format(cls=type(self).__name__, method="recv"))

    def _send(self, actions: Any, env_ids: np.ndarray) -> None:
        """Start stepping env ``env_ids[j]`` with ``actions[j]`` (validated, one per env)."""
        raise NotImplementedError(NO_ASYNC.format(cls=type(self).__name__, method="send"))

    def _get_states(self, indices: list[int]) -> list[Any]:
        """Snapshots of the envs ``indices`` (backends that keep envs implement it)."""
        raise NotImplementedError(NO_STATES.format(cls=type(self).__name__, method="get_states"))

    def _set_states(self, states: list[Any], indices: list[int]) -> None:
        """Restore ``states[j]`` into env ``indices[j]``."""
        raise NotImplementedError(NO_STATES.format(cls=type(self).__name__, method="set_states"))

    def _step_batch(self, actions: Any, states: list[Any] | None, dts: list[int],
                    return_states: bool) -> tuple[VecEnvObs, list[tuple]]:
        """``(obs, [(state or None, reward, terminated, truncated, info) per env])``."""
        raise NotImplementedError(NO_STATES.format(cls=type(self).__name__, method="step_batch"))
