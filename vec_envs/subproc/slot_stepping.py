"""The worker's half of asynchronous batches in shared memory: step what ``EnvSlots`` asks.

A worker process answers each env on its own: it steps (or resets) the env into its rows,
sends an ``EnvMessage`` through the pipe only when there is something to say (infos, an
error), then writes the env's answer. The parent reads the answer, and the message it
announces, as soon as it is there; the other envs of the slice keep stepping meanwhile.
"""
from __future__ import annotations

import pickle
from multiprocessing.connection import Connection

import numpy as np

from vec_envs.errors import EnvCallFailed
from vec_envs.stepping.env_slice import EnvSlice
from vec_envs.subproc.env_slots import AsyncResetRequest, EnvMessage, WorkerSlots
from vec_envs.workers.protocol import Outcome, WorkerFailure

__all__ = ["serve_requests", "async_reset"]


def serve_requests(conn: Connection, envs: EnvSlice, slots: WorkerSlots, actions: np.ndarray) -> int:
    """Step every env with a new request, answering each when done; how many were stepped."""
    pending = slots.pending().tolist()
    for k in pending:
        seq = slots.take(k)
        try:
            info = envs.step_env(k, actions[k].copy())
        except EnvCallFailed as exc:
            _answer(conn, slots, k, seq, Outcome(False, WorkerFailure.from_exception(exc, "step")))
            continue
        reset_info = envs.reset_infos[k] if envs.buffers.dones[k] else None
        _answer(conn, slots, k, seq, Outcome(True, (info, reset_info)) if info or reset_info else None)
    return len(pending)


def async_reset(conn: Connection, envs: EnvSlice, slots: WorkerSlots, request: AsyncResetRequest) -> None:
    """Reset every env of the slice, answering each with its number from ``request``."""
    slots.skip_all()  # requests left from a round given up are void
    for k, seq in enumerate(request.seqs):
        slots.started(k)
        try:
            info = envs.reset_env(k, None if request.seeds is None else request.seeds[k])
        except EnvCallFailed as exc:
            _answer(conn, slots, k, seq, Outcome(False, WorkerFailure.from_exception(exc, "reset")))
            continue
        _answer(conn, slots, k, seq, Outcome(True, (info, None)) if info else None)


def _answer(conn: Connection, slots: WorkerSlots, k: int, seq: int, outcome: Outcome | None) -> None:
    """Send the message (if any), then the answer: the parent never sees one without the other."""
    if outcome is not None:
        env = slots.first + k
        try:
            conn.send(EnvMessage(env, seq, outcome))
        except (pickle.PicklingError, TypeError, AttributeError) as exc:
            failure = WorkerFailure.from_exception(exc, "step (sending its info)")
            conn.send(EnvMessage(env, seq, Outcome(False, failure)))
    slots.answer(k, seq, outcome is not None)
