"""gather_frames: one frame per env for ``render()``, and the fix when envs cannot render.

An env made without ``render_mode="rgb_array"`` returns no frame, and some envs (ALE's)
raise from deep inside their own ``render``; the caller then needs the fix, not that
traceback. ``gather_frames`` asks the envs' ``render_mode`` only when gathering failed,
so rendering pays nothing for the check.

``gather_frames`` takes any ``FrameSource``: what it asks of a VecEnv, and nothing more,
so this module needs no VecEnv class (``VecEnvBase.render`` calls it).
"""
from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from vec_envs.errors import VecEnvError

__all__ = ["NO_RENDER_MODE", "FrameSource", "RenderModeError", "gather_frames"]

NO_RENDER_MODE = (
    "{method}: env(s) {envs} have render_mode={mode!r} and give no frames; make them with "
    "render_mode='rgb_array': gym.make(env_id, render_mode='rgb_array') in the env factory, "
    "make_vec_env(env_id, env_kwargs={{'render_mode': 'rgb_array'}}), "
    "make_atari_env(game, env_kwargs={{'render_mode': 'rgb_array'}}) or "
    "ALEVecEnv(game, render_mode='rgb_array'). The envs raised {cause}")


class FrameSource(Protocol):
    """What ``gather_frames`` asks of a VecEnv: its frames, and its envs' attributes."""

    def get_images(self) -> list[np.ndarray]: ...

    def get_attr(self, attr_name: str) -> list[Any]: ...


class RenderModeError(ValueError):
    """Frames asked of envs that were made without ``render_mode="rgb_array"``.

    Example:
        >>> import gymnasium as gym
        >>> from vec_envs import DummyVecEnv
        >>> venv = DummyVecEnv([lambda: gym.make("CartPole-v1")])
        >>> _ = venv.reset()
        >>> try:
        ...     venv.render("rgb_array")
        ... except RenderModeError as err:
        ...     print("render_mode='rgb_array'" in str(err))
        True
        >>> venv.close()
    """


def gather_frames(venv: FrameSource, method: str = "render()") -> list[np.ndarray]:
    """``venv.get_images()``; a ``RenderModeError`` with the fix when it fails because
    some envs have no ``rgb_array`` render mode (any other failure is raised as it is).

    Example:
        >>> import gymnasium as gym
        >>> from vec_envs import DummyVecEnv
        >>> venv = DummyVecEnv([lambda: gym.make("CartPole-v1", render_mode="rgb_array")] * 2)
        >>> _ = venv.reset()
        >>> [frame.shape for frame in gather_frames(venv)]
        [(400, 600, 3), (400, 600, 3)]
        >>> venv.close()
    """
    try:
        return venv.get_images()
    except Exception as exc:
        try:
            modes = venv.get_attr("render_mode")
        except (AttributeError, VecEnvError):
            raise exc from None
        envs = [i for i, mode in enumerate(modes) if mode != "rgb_array"]
        if not envs:
            raise
        cause = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        raise RenderModeError(NO_RENDER_MODE.format(method=method, envs=envs, mode=modes[envs[0]],
                                                    cause=cause)) from None
