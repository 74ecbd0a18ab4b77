"""The infos of envs whose episode ended, read from the terminal rows of the batch buffers.

Where the buffers have terminal rows (shared memory), a slice that ends an episode writes
the last observation and ``TimeLimit.truncated`` there instead of into the env's info, so
an episode's end alone gives a worker nothing to say. Whoever reads the batch adds them
back: ``with_terminal`` for one env, ``terminal_infos`` for several, and ``ended_infos``
for a whole batch where no env had anything to say (every info an empty dict but those of
the envs that ended, whose reset infos become ``{}``), in one C pass
(``_step_kernel.ended_infos``) where it is built. Where resets are deferred (next-step and
disabled autoreset) an ended env's row is its last observation and it was not reset: its
info is ``TimeLimit.truncated`` alone (``deferred=True``) and no reset info changes.

Example:
    >>> import gymnasium as gym
    >>> buffers = BatchBuffers.allocate(gym.spaces.Box(0, 1, (2,)), 3, terminal=True)
    >>> buffers.terminal_obs[1] = [0.5, 0.25]; buffers.time_limit_truncated[1] = True
    >>> reset_infos = [{"seed": 0}] * 3
    >>> ended_infos(buffers, np.array([False, True, False]), None, reset_infos)
    [{}, {'terminal_observation': array([0.5 , 0.25], dtype=float32), 'TimeLimit.truncated': True}, {}]
    >>> reset_infos[1]
    {}
"""
from __future__ import annotations

import numpy as np

from vec_envs import kernels
from vec_envs.spaces.batching import BatchBuffers, copy_obs, get_row
from vec_envs.types import Info

__all__ = ["ended_infos", "terminal_infos", "with_terminal", "with_truncated"]

_kernel = kernels.load("step")
_NO_ENDS = np.zeros(0, np.bool_)  # the truncated flags of no env


def with_truncated(buffers: BatchBuffers, i: int, info: Info) -> Info:
    """Env ``i`` ended and was not reset (deferred resets): a copy of its info with the
    ``TimeLimit.truncated`` its slice left in the terminal rows of ``buffers``."""
    info = dict(info)
    info["TimeLimit.truncated"] = bool(_truncated_flags(buffers, np.array([i]))[0])
    return info


def with_terminal(buffers: BatchBuffers, i: int, info: Info) -> Info:
    """Env ``i`` ended: a copy of its info with the ``terminal_observation`` (a copy) and
    ``TimeLimit.truncated`` that its slice left in the terminal rows of ``buffers``.

    Example:
        >>> import gymnasium as gym
        >>> buffers = BatchBuffers.allocate(gym.spaces.Box(0, 1, (2,)), 3, terminal=True)
        >>> buffers.terminal_obs[1] = [0.5, 0.25]; buffers.time_limit_truncated[1] = True
        >>> with_terminal(buffers, 1, {"score": 3})
        {'score': 3, 'terminal_observation': array([0.5 , 0.25], dtype=float32), 'TimeLimit.truncated': True}
    """
    if buffers.terminal_obs is None or buffers.time_limit_truncated is None:
        raise ValueError("with_terminal(): these buffers have no terminal rows (BatchBuffers.allocate(terminal=True))")
    info = dict(info)
    info["terminal_observation"] = copy_obs(get_row(buffers.terminal_obs, i))
    info["TimeLimit.truncated"] = bool(buffers.time_limit_truncated[i])
    return info


def ended_infos(buffers: BatchBuffers, dones: np.ndarray, env_ids: np.ndarray | None,
                reset_infos: list[Info], deferred: bool = False) -> list[Info]:
    """The infos of envs ``env_ids`` (None: every env, in order), ``dones`` theirs, when none
    had anything to say; the reset info of each whose episode ended becomes ``{}``
    (``deferred``: ended envs were not reset, their infos hold ``TimeLimit.truncated`` only).

    Example:
        >>> import gymnasium as gym
        >>> buffers = BatchBuffers.allocate(gym.spaces.Box(0, 1, (2,)), 2, terminal=True)
        >>> buffers.time_limit_truncated[0] = True
        >>> ended_infos(buffers, np.array([True, False]), None, [{}, {}], deferred=True)
        [{'TimeLimit.truncated': True}, {}]
    """
    ended = np.flatnonzero(dones)
    if _kernel is not None and not len(ended):  # the usual batch: nothing to gather
        return _kernel.ended_infos(len(dones), ended, ended, None, _NO_ENDS, reset_infos)
    ids = ended if env_ids is None else env_ids[ended]
    if deferred:
        rows, truncated = None, _truncated_flags(buffers, ids)
    else:
        rows, truncated = _terminal_rows(buffers, ids)
    if _kernel is not None:
        return _kernel.ended_infos(len(dones), ended, ids, rows, truncated, None if deferred else reset_infos)
    infos: list[Info] = [{} for _ in range(len(dones))]
    for j, (place, i, end_truncated) in enumerate(zip(ended.tolist(), ids.tolist(), truncated.tolist())):
        if rows is None:
            infos[place] = {"TimeLimit.truncated": end_truncated}
            continue
        infos[place] = {"terminal_observation": rows[j], "TimeLimit.truncated": end_truncated}
        reset_infos[i] = {}
    return infos


def _truncated_flags(buffers: BatchBuffers, ended: np.ndarray) -> np.ndarray:
    if buffers.time_limit_truncated is None:
        raise ValueError("ended_infos(): the buffers need terminal rows")
    return buffers.time_limit_truncated[ended]


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
        raise ValueError("ended_infos(): the buffers need array terminal rows")
    return buffers.terminal_obs[ended], buffers.time_limit_truncated[ended]
