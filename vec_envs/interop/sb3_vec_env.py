"""SB3VecEnv: any VecEnv as a ``stable_baselines3.common.vec_env.VecEnv`` (imports SB3)."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import numpy as np

from vec_envs.extras import missing_extra
from vec_envs.types import VecEnvIndices
from vec_envs.vec_env_base import VecEnvBase

try:
    from stable_baselines3.common.vec_env import VecEnv
    from stable_baselines3.common.vec_env.base_vec_env import (
        VecEnvIndices as SB3Indices,
    )
    from stable_baselines3.common.vec_env.base_vec_env import (
        VecEnvObs,
        VecEnvStepReturn,
    )
except ImportError as exc:  # pragma: no cover - depends on the install
    raise missing_extra("sb3", "to_sb3() needs Stable-Baselines3") from exc

__all__ = ["SB3VecEnv"]


class SB3VecEnv(VecEnv):
    """A VecEnv seen by Stable-Baselines3: its algorithms and VecEnv wrappers accept it.

    Both APIs share the baselines conventions (``(obs, rewards, dones, infos)``, same-step
    auto-reset with ``terminal_observation`` and ``TimeLimit.truncated``), so every call
    is forwarded as it is; ``seed`` and ``set_options`` apply at the next ``reset``, as in SB3.

    Args:
        venv: any VecEnv (a backend or a stack of our wrappers); closing this closes it.

    Example:
        >>> import gymnasium as gym
        >>> from vec_envs import DummyVecEnv
        >>> from stable_baselines3.common.vec_env import VecNormalize
        >>> env = VecNormalize(SB3VecEnv(DummyVecEnv([lambda: gym.make("CartPole-v1")] * 2)))
        >>> env.reset().shape
        (2, 4)
        >>> env.close()
    """

    def __init__(self, venv: VecEnvBase) -> None:
        if not isinstance(venv, VecEnvBase):
            raise TypeError(f"to_sb3(): expected a vec_envs VecEnv (VecEnvBase), received {type(venv).__name__}")
        self.venv = venv
        super().__init__(venv.num_envs, venv.observation_space, venv.action_space)

    def reset(self) -> VecEnvObs:
        obs = self.venv.reset()
        self.reset_infos = self.venv.reset_infos
        return cast(VecEnvObs, obs)

    def step_async(self, actions: np.ndarray) -> None:
        self.venv.step_async(actions)

    def step_wait(self) -> VecEnvStepReturn:
        return cast(VecEnvStepReturn, self.venv.step_wait())

    def seed(self, seed: int | None = None) -> Sequence[int | None]:
        return self.venv.seed(seed)

    def set_options(self, options: list[dict] | dict | None = None) -> None:
        self.venv.set_options(options)

    def close(self) -> None:
        self.venv.close()

    def get_attr(self, attr_name: str, indices: SB3Indices = None) -> list[Any]:
        return self.venv.get_attr(attr_name, _indices(indices))

    def set_attr(self, attr_name: str, value: Any, indices: SB3Indices = None) -> None:
        self.venv.set_attr(attr_name, value, _indices(indices))

    def env_method(self, method_name: str, *method_args: Any, indices: SB3Indices = None,
                   **method_kwargs: Any) -> list[Any]:
        return self.venv.env_method(method_name, *method_args, indices=_indices(indices), **method_kwargs)

    def env_is_wrapped(self, wrapper_class: type, indices: SB3Indices = None) -> list[bool]:
        return self.venv.env_is_wrapped(wrapper_class, _indices(indices))

    def get_images(self) -> Sequence[np.ndarray | None]:
        return self.venv.get_images()

    def __repr__(self) -> str:
        return f"SB3VecEnv({self.venv!r})"


def _indices(indices: SB3Indices) -> VecEnvIndices:
    """SB3 allows any iterable of indices; ours are None, an int or a sequence."""
    if indices is None or isinstance(indices, (int, np.integer)):
        return indices
    return list(indices)
