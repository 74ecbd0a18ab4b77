"""Storing the workers' replies to lock-step RESET and STEP in the parent's batch buffers.

Where the buffers have terminal rows (shared memory), the envs that ended are found by
their done flag and their last observation is in those rows; elsewhere it travels in
the env's info, which is never empty then (``StepReply``).

Example:
    >>> from gymnasium import spaces
    >>> buffers = BatchBuffers.allocate(spaces.Box(0, 1, (2,)), 3)
    >>> reply = StepReply({1: {"x": 1}}, {}, Arrays(np.ones((2, 2)), np.array([1.0, 2.0]), np.array([False, True])))
    >>> infos = [{} for _ in range(3)]
    >>> store_step(buffers, [{}] * 3, 1, reply, infos)
    >>> buffers.rewards.tolist(), infos
    ([0.0, 1.0, 2.0], [{}, {}, {'x': 1}])
"""
from __future__ import annotations

from typing import Any

import numpy as np

from vec_envs.spaces.batching import BatchBuffers, write_rows
from vec_envs.stepping.env_slice import with_terminal
from vec_envs.types import Info
from vec_envs.workers.protocol import Arrays, Outcome, ResetReply, StepReply
from vec_envs.workers.worker import Worker

__all__ = ["ended_info", "flag_restarted", "store_arrays", "store_ended", "store_reset", "store_step"]


def store_arrays(buffers: BatchBuffers, start: int, arrays: Arrays) -> None:
    """Rows ``start:`` of the buffers from a reply that carried them."""
    write_rows(buffers.obs, start, arrays.obs)
    buffers.rewards[start:start + len(arrays.rewards)] = arrays.rewards
    buffers.dones[start:start + len(arrays.dones)] = arrays.dones


def store_reset(buffers: BatchBuffers, reset_infos: list[Info], worker: Worker, reply: ResetReply) -> None:
    reset_infos[worker.first_index:worker.stop] = reply.infos
    if reply.arrays is not None:
        store_arrays(buffers, worker.first_index, reply.arrays)


def store_step(buffers: BatchBuffers, reset_infos: list[Info], first: int, reply: StepReply,
               infos: list[Info]) -> None:
    """Store the rows and infos of the slice from ``first``; without terminal rows, only
    envs with an info can have ended, and their reset infos are stored here."""
    if reply.arrays is not None:
        store_arrays(buffers, first, reply.arrays)
    dones = buffers.dones
    terminal_rows = buffers.terminal_obs is not None
    for k, info in reply.infos.items():
        infos[first + k] = info
        if dones[first + k] and not terminal_rows:
            reset_infos[first + k] = reply.reset_infos.get(k, {})


def store_ended(buffers: BatchBuffers, reset_infos: list[Info], outcomes: dict[int, Outcome],
                worker_of: list[int], workers: list[Worker], infos: list[Info]) -> None:
    """The envs that ended, found by their done flag (workers that answered only): their
    terminal observation from the terminal rows, their reset info from the reply."""
    for i in np.flatnonzero(buffers.dones).tolist():
        ok, reply = outcomes[worker_of[i]]
        if ok:
            infos[i] = with_terminal(buffers, i, infos[i])
            reset_infos[i] = reply.reset_infos.get(i - workers[worker_of[i]].first_index, {})


def ended_info(buffers: BatchBuffers, i: int, info: Info) -> Info:
    """Env ``i`` ended: its info, with its terminal observation if that is in the buffers."""
    return info if buffers.terminal_obs is None else with_terminal(buffers, i, info)


def flag_restarted(buffers: BatchBuffers, worker: Worker, error: str, infos: list[dict[str, Any]]) -> None:
    """The envs of a replaced worker: done, reward 0, ``env_restarted`` in their infos."""
    for i in worker.env_indices:
        infos[i] = {"env_restarted": True, "error": error}
    buffers.rewards[worker.first_index:worker.stop] = 0.0
    buffers.dones[worker.first_index:worker.stop] = True
