"""VecTransposeImage: HWC image observations to CHW (the layout of PyTorch convolutions)."""
from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

from vec_envs.spaces.describe import is_image_space
from vec_envs.types import VecEnvObs
from vec_envs.vec_env_base import VecEnvBase
from vec_envs.vec_env_wrapper import VecEnvObservationWrapper

__all__ = ["VecTransposeImage"]

NOT_AN_IMAGE = ("VecTransposeImage transposes image spaces (uint8 Box of rank 3, bounds 0..255, or a "
                "Dict holding some), received {space}")
ALREADY_CHW = ("VecTransposeImage: observation{where} of shape {shape} looks channels-first already "
               "(its smallest dimension comes first); pass skip=True to leave it as it is")


def _transposed_space(space: spaces.Box, where: str = "") -> spaces.Box:
    if int(np.argmin(space.shape)) == 0:
        raise ValueError(ALREADY_CHW.format(where=where, shape=space.shape))
    return spaces.Box(np.transpose(space.low, (2, 0, 1)), np.transpose(space.high, (2, 0, 1)),
                      dtype=space.dtype)


def transpose_image(batch_nhwc: np.ndarray) -> np.ndarray:
    """A batch of HWC images as a C-contiguous batch of CHW images."""
    return np.ascontiguousarray(np.transpose(batch_nhwc, (0, 3, 1, 2)))


class VecTransposeImage(VecEnvObservationWrapper):
    """Transposes image observations from (H, W, C) to (C, H, W).

    Applies to an image space (uint8 Box of rank 3 with bounds 0..255), or to every image
    key of a Dict space (other keys pass through), in ``reset``, ``step`` and
    ``infos[i]["terminal_observation"]``. The observations returned are C-contiguous.

    Args:
        venv: the VecEnv to wrap.
        skip: leave the observations as they are (for a space already channels-first).

    Example:
        >>> from vec_envs import DummyVecEnv
        >>> from vec_envs.wrappers import VecFrameStack
        >>> from vec_envs.wrappers.atari import make_atari_env
        >>> atari_venv = make_atari_env("Breakout", 2, seed=0, vec_env_cls=DummyVecEnv)
        >>> with VecTransposeImage(VecFrameStack(atari_venv, 4)) as venv:
        ...     venv.reset().shape
        (2, 4, 84, 84)
    """

    def __init__(self, venv: VecEnvBase, skip: bool = False) -> None:
        self.skip = skip
        self.image_space_keys: list[str] | None = None
        space = venv.observation_space
        if not skip:
            if isinstance(space, spaces.Dict):
                self.image_space_keys = [k for k, s in space.spaces.items() if is_image_space(s)]
                if not self.image_space_keys:
                    raise ValueError(NOT_AN_IMAGE.format(space=space))
                space = spaces.Dict({k: _transposed_space(s, f"[{k!r}]") if is_image_space(s) else s
                                     for k, s in space.spaces.items()})
            elif is_image_space(space):
                space = _transposed_space(space)
            else:
                raise ValueError(NOT_AN_IMAGE.format(space=space))
        super().__init__(venv, observation_space=space)

    def process(self, obs: VecEnvObs) -> VecEnvObs:
        if self.skip:
            return obs
        if not isinstance(obs, dict):
            return transpose_image(np.asarray(obs))
        out = dict(obs)
        for key in self.image_space_keys or ():
            out[key] = transpose_image(obs[key])
        return out

    def process_terminal(self, index: int, terminal_obs: Any) -> Any:
        if self.skip:
            return terminal_obs
        if self.image_space_keys is None:
            return np.ascontiguousarray(np.transpose(terminal_obs, (2, 0, 1)))
        out = dict(terminal_obs)
        for key in self.image_space_keys:
            out[key] = np.ascontiguousarray(np.transpose(terminal_obs[key], (2, 0, 1)))
        return out
