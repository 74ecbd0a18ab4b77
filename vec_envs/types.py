"""Type aliases shared by every backend and wrapper, and the one data type of the API (EnvState)."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

__all__ = ["VecEnvObs", "VecEnvStepReturn", "VecEnvRecvReturn", "VecEnvIndices", "EnvFn", "Info", "EnvState"]

#: A batched observation, one array shaped ``(num_envs, *shape)``, or a dict / tuple of such
#: for Dict / Tuple spaces (a list of per-env observations for spaces with no fixed size).
VecEnvObs = np.ndarray | dict[str, Any] | tuple[Any, ...] | list[Any]
#: One env's info dict.
Info = dict[str, Any]
#: What ``step`` returns, ``(obs, rewards, dones, infos)``, with ``rewards`` float32 ``(n,)``, ``dones``
#: bool ``(n,)`` and ``infos`` a list of n dicts.
VecEnvStepReturn = tuple[VecEnvObs, np.ndarray, np.ndarray, list[Info]]
#: What ``recv`` returns, ``(obs, rewards, dones, infos, env_ids)``, with ``env_ids`` int64 ``(batch,)``
#: and the rows in the order of ``env_ids``.
VecEnvRecvReturn = tuple[VecEnvObs, np.ndarray, np.ndarray, list[Info], np.ndarray]
#: Which sub-envs a call addresses, None for all, an int, or a sequence of ints.
VecEnvIndices = None | int | Sequence[int]
#: A zero-argument factory returning a gymnasium env (or an old-gym-API env).
EnvFn = Callable[[], gym.Env | Any]


@dataclass(frozen=True)
class EnvState:
    """One env's snapshot; opaque to users, picklable (ALE states pickle as bytes).

    Made and restored by ``vec_envs.planning.env_state``; defined here, with the contract,
    so that the VecEnv API can name it without importing the planning machinery.

    Attributes:
        source: the env it came from (``describe_env``), checked on restore.
        kind: "custom" (the env's own ``get_state``), "ale" or "copy".
        core: the snapshot of the layer that keeps the state.
        wrappers: the plain-data attributes of each wrapper above that layer.

    Example:
        >>> import gymnasium as gym
        >>> from vec_envs.planning.env_state import get_env_state
        >>> env = gym.make("CartPole-v1")
        >>> _ = env.reset(seed=0)
        >>> get_env_state(env).kind
        'copy'
    """

    source: str
    kind: str
    core: Any
    wrappers: tuple[dict[str, Any], ...]
