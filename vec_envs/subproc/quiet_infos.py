"""The infos of a batch where no env had anything to say (no pipe message came with it).

Every env's info is an empty dict, but for an env whose episode ended: its terminal
observation (from the terminal rows the worker wrote) and ``TimeLimit.truncated``; its
reset info, which would have come with a message, is an empty dict. Lock-step builds
every env's infos this way, ``recv`` those of the envs it returns; the episode ends cost
no Python of their own: one gather of their rows, then one C pass (``_lanes_kernel.c``)
that makes every dict, or the same in Python where it is not built.

Example:
    >>> import gymnasium as gym
    >>> buffers = BatchBuffers.allocate(gym.spaces.Box(0, 1, (2,)), 3, terminal=True)
    >>> buffers.terminal_obs[1] = [0.5, 0.25]; buffers.time_limit_truncated[1] = True
    >>> reset_infos = [{"seed": 0}] * 3
    >>> quiet_infos(buffers, np.array([False, True, False]), None, reset_infos)
    [{}, {'terminal_observation': array([0.5 , 0.25], dtype=float32), 'TimeLimit.truncated': True}, {}]
    >>> reset_infos[1]
    {}
"""
from __future__ import annotations

from types import ModuleType

import numpy as np

from vec_envs.spaces.batching import BatchBuffers
from vec_envs.types import Info

_lanes_kernel: ModuleType | None
try:  # the optional C pass, built by setup.py when it can be
    from vec_envs.subproc import _lanes_kernel
except ImportError:
    _lanes_kernel = None

__all__ = ["quiet_infos", "terminal_infos"]

_NO_ENDS = np.zeros(0, np.bool_)  # the truncated flags of no env


def quiet_infos(buffers: BatchBuffers, dones: np.ndarray, env_ids: np.ndarray | None,
                reset_infos: list[Info]) -> list[Info]:
    """The infos of envs ``env_ids`` (None: every env, in order), ``dones`` theirs, when none
    had anything to say; the reset info of each whose episode ended becomes ``{}``."""
    ended = np.flatnonzero(dones)
    if _lanes_kernel is not None and not len(ended):  # the usual batch: nothing to gather
        return _lanes_kernel.quiet_infos(len(dones), ended, ended, None, _NO_ENDS, reset_infos)
    ids = ended if env_ids is None else env_ids[ended]
    rows, truncated = _terminal_rows(buffers, ids)
    if _lanes_kernel is not None:
        return _lanes_kernel.quiet_infos(len(dones), ended, ids, rows, truncated, reset_infos)
    infos: list[Info] = [{} for _ in range(len(dones))]
    for place, i, row, end_truncated in zip(ended.tolist(), ids.tolist(), rows, truncated.tolist()):
        infos[place] = {"terminal_observation": row, "TimeLimit.truncated": end_truncated}
        reset_infos[i] = {}
    return infos


def terminal_infos(buffers: BatchBuffers, ended: np.ndarray) -> list[Info]:
    """The infos of the envs ``ended`` whose episode ended with nothing else to say: the
    terminal observation and ``TimeLimit.truncated``.

    Example:
        >>> import gymnasium as gym
        >>> buffers = BatchBuffers.allocate(gym.spaces.Box(0, 1, (2,)), 3, terminal=True)
        >>> buffers.terminal_obs[1] = [0.5, 0.25]; buffers.time_limit_truncated[1] = True
        >>> terminal_infos(buffers, np.array([1]))
        [{'terminal_observation': array([0.5 , 0.25], dtype=float32), 'TimeLimit.truncated': True}]
    """
    rows, truncated = _terminal_rows(buffers, ended)
    return [{"terminal_observation": row, "TimeLimit.truncated": end_truncated}
            for row, end_truncated in zip(rows, truncated.tolist())]


def _terminal_rows(buffers: BatchBuffers, ended: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The terminal rows of ``ended`` (one gather: each info holds a view of this copy) and
    their ``TimeLimit.truncated``."""
    if buffers.time_limit_truncated is None or type(buffers.terminal_obs) is not np.ndarray:
        raise ValueError("quiet_infos(): the buffers need array terminal rows")
    return buffers.terminal_obs[ended], buffers.time_limit_truncated[ended]
