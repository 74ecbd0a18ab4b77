"""Type aliases shared by every backend and wrapper."""
from __future__ import annotations

from typing import Any, Callable, Sequence

import gymnasium as gym
import numpy as np

__all__ = ["VecEnvObs", "VecEnvStepReturn", "VecEnvRecvReturn", "VecEnvIndices", "EnvFn", "Info"]

#: A batched observation: one array shaped (num_envs, *shape), or a dict / tuple of such
#: for Dict / Tuple spaces (a list of per-env observations for spaces with no fixed size).
VecEnvObs = np.ndarray | dict[str, Any] | tuple[Any, ...] | list[Any]
Info = dict[str, Any]
#: (obs, rewards float32 (n,), dones bool (n,), infos: list of n dicts)
VecEnvStepReturn = tuple[VecEnvObs, np.ndarray, np.ndarray, list[Info]]
#: (obs, rewards, dones, infos, env_ids int64 (batch,)): rows in the order of env_ids
VecEnvRecvReturn = tuple[VecEnvObs, np.ndarray, np.ndarray, list[Info], np.ndarray]
#: Which sub-envs a call addresses: None = all, an int, or a sequence of ints.
VecEnvIndices = None | int | Sequence[int]
#: A zero-argument factory returning a gymnasium env (or an old-gym-API env).
EnvFn = Callable[[], gym.Env | Any]
