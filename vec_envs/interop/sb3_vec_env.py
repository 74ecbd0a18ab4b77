"""SB3VecEnv: any VecEnv as a ``stable_baselines3.common.vec_env.VecEnv`` (imports SB3).

Every call SB3 makes goes to one of our VecEnvs, its ``source``; ``SB3Forwarding`` holds
those calls once, for this class and for the views of our wrappers (``sb3_views.py``).

SB3 asks ``env_is_wrapped(Monitor)`` to learn whether ``infos[i]["episode"]`` holds whole,
unmodified episodes (``evaluate_policy``, ``EvalCallback``). Our envs report them through
other per-env monitors that fill ``info["episode"]`` the same way (``vec_envs.monitoring``'s
``EpisodeMonitor``, which ``make_atari_env`` puts on the emulator, gymnasium's
``RecordEpisodeStatistics``) or in the backend itself, where it declares
``reports_whole_episodes`` (``ALEVecEnv``): each of those answers that question as SB3's
Monitor would.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from vec_envs.extras import missing_extra
from vec_envs.monitoring.episode_monitor import EpisodeMonitor
from vec_envs.rendering.frames import gather_frames
from vec_envs.types import VecEnvIndices
from vec_envs.vec_env_base import VecEnvBase

try:
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.vec_env import VecEnv
    from stable_baselines3.common.vec_env.base_vec_env import VecEnvIndices as SB3Indices
except ImportError as exc:  # pragma: no cover - depends on the install
    raise missing_extra("sb3", "to_sb3() needs Stable-Baselines3") from exc

__all__ = ["SB3Forwarding", "SB3VecEnv"]

#: per-env wrappers whose ``info["episode"] = {"r", "l", ...}`` at an episode's end is SB3's Monitor's
EPISODE_MONITORS: tuple[type, ...] = (Monitor, EpisodeMonitor, gym.wrappers.RecordEpisodeStatistics)


class SB3Forwarding:
    """The VecEnv calls of SB3, each forwarded to ``self.source`` (one of our VecEnvs)."""

    source: VecEnvBase
    reset_infos: list[dict[str, Any]]

    def reset(self) -> Any:  # VecEnvObs; Any: SB3's wrappers narrow it
        obs = self.source.reset()
        self.reset_infos = self.source.reset_infos
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        self.source.step_async(actions)

    def step_wait(self) -> Any:  # VecEnvStepReturn; Any: SB3's wrappers narrow it
        return self.source.step_wait()

    def seed(self, seed: int | None = None) -> Sequence[int | None]:
        return self.source.seed(seed)

    def set_options(self, options: list[dict] | dict | None = None) -> None:
        self.source.set_options(options)

    def close(self) -> None:
        self.source.close()

    def get_attr(self, attr_name: str, indices: SB3Indices = None) -> list[Any]:
        return self.source.get_attr(attr_name, _indices(indices))

    def set_attr(self, attr_name: str, value: Any, indices: SB3Indices = None) -> None:
        self.source.set_attr(attr_name, value, _indices(indices))

    def env_method(self, method_name: str, *method_args: Any, indices: SB3Indices = None,
                   **method_kwargs: Any) -> list[Any]:
        return self.source.env_method(method_name, *method_args, indices=_indices(indices), **method_kwargs)

    def env_is_wrapped(self, wrapper_class: type, indices: SB3Indices = None) -> list[bool]:
        """Whether each env has ``wrapper_class``; for SB3's ``Monitor``: whether its infos
        carry whole episodes the way Monitor's do (see the module docstring)."""
        wrapped = self.source.env_is_wrapped(wrapper_class, _indices(indices))
        if wrapper_class is Monitor and not all(wrapped):
            monitored = _reports_episodes(self.source, _indices(indices), len(wrapped))
            wrapped = [a or b for a, b in zip(wrapped, monitored)]
        return wrapped

    def get_images(self) -> Sequence[np.ndarray | None]:
        return gather_frames(self.source, "get_images()")


class SB3VecEnv(SB3Forwarding, VecEnv):
    """A VecEnv seen by Stable-Baselines3: its algorithms and VecEnv wrappers accept it.

    Both APIs share the baselines conventions (``(obs, rewards, dones, infos)``, same-step
    auto-reset with ``terminal_observation`` and ``TimeLimit.truncated``), so every call
    is forwarded as it is; ``seed`` and ``set_options`` apply at the next ``reset``, as in SB3.
    ``to_sb3`` puts this under the views of our wrappers (``sb3_views.py``).

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
        self.source = self.venv = venv
        super().__init__(venv.num_envs, venv.observation_space, venv.action_space)

    def __repr__(self) -> str:
        return f"SB3VecEnv({self.venv!r})"


def _reports_episodes(venv: VecEnvBase, indices: VecEnvIndices, count: int) -> list[bool]:
    """For the ``count`` envs named by ``indices``: do their infos carry whole episodes as
    SB3's Monitor's do (EPISODE_MONITORS)?"""
    if venv.unwrapped.reports_whole_episodes:
        return [True] * count
    answers = [venv.env_is_wrapped(monitor, indices) for monitor in EPISODE_MONITORS[1:]]
    return [any(column) for column in zip(*answers)]


def _indices(indices: SB3Indices) -> VecEnvIndices:
    """SB3 allows any iterable of indices; ours are None, an int or a sequence."""
    if indices is None or isinstance(indices, (int, np.integer)):
        return indices
    return list(indices)
