"""VecExtractDictObs: one key of a Dict observation space as the whole observation."""
from __future__ import annotations

from typing import Any

from gymnasium import spaces

from vec_envs.types import VecEnvObs
from vec_envs.vec_env_base import VecEnvBase
from vec_envs.vec_env_wrapper import VecEnvObservationWrapper

__all__ = ["VecExtractDictObs"]

NOT_A_DICT = "VecExtractDictObs needs a Dict observation space, received {space}"
BAD_KEY = "VecExtractDictObs: key {key!r} is not in the observation space (valid keys: {valid})"


class VecExtractDictObs(VecEnvObservationWrapper):
    """Replaces a Dict observation by its entry ``key`` (in ``reset``, ``step`` and
    ``infos[i]["terminal_observation"]``).

    Args:
        venv: a VecEnv with a Dict observation space.
        key: the key to keep.

    Example:
        >>> import gymnasium as gym
        >>> from vec_envs import DummyVecEnv
        >>> def make_env():   # observations {"obs": CartPole's 4 numbers, "time": the step count}
        ...     return gym.wrappers.TimeAwareObservation(gym.make("CartPole-v1"), flatten=False)
        >>> with VecExtractDictObs(DummyVecEnv([make_env] * 4), "obs") as venv:
        ...     venv.reset().shape
        (4, 4)
    """

    def __init__(self, venv: VecEnvBase, key: str) -> None:
        space = venv.observation_space
        if not isinstance(space, spaces.Dict):
            raise ValueError(NOT_A_DICT.format(space=space))
        if key not in space.spaces:
            raise ValueError(BAD_KEY.format(key=key, valid=list(space.spaces)))
        self.key = key
        super().__init__(venv, observation_space=space[key])

    def process(self, obs: VecEnvObs) -> VecEnvObs:
        if not isinstance(obs, dict):
            raise TypeError(f"VecExtractDictObs: expected a dict of batches from {type(self.venv).__name__}, "
                            f"received {type(obs).__name__}")
        return obs[self.key]

    def process_terminal(self, index: int, terminal_obs: Any) -> Any:
        return terminal_obs[self.key]
