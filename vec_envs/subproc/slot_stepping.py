"""The worker's half of asynchronous batches in shared memory: step what ``EnvSlots`` asks.

A worker process answers each env on its own: it steps (or resets) the env into its rows,
sends an ``EnvMessage`` through the pipe only when there is something to say (infos, an
error), then writes the env's answer. The parent reads the answer, and the message it
announces, as soon as it is there; the other envs of the slice keep stepping meanwhile.
A parent asleep on the answers is woken by the ``Waker`` (``wake_up.py``).
"""
from __future__ import annotations

import pickle
from multiprocessing.connection import Connection
from typing import Any

import numpy as np

from vec_envs.errors import EnvCallFailed
from vec_envs.stepping.env_slice import EnvSlice
from vec_envs.subproc.env_slots import AsyncResetRequest, EnvMessage, WorkerSlots
from vec_envs.subproc.unpicklable import unpicklable_reply
from vec_envs.subproc.wake_up import Waker
from vec_envs.workers.protocol import Outcome, WorkerFailure

__all__ = ["serve_requests", "async_reset"]


def serve_requests(conn: Connection, envs: EnvSlice, slots: WorkerSlots, actions: np.ndarray,
                   waker: Waker | None = None) -> int:
    """Step every env with a new request, answering each when done; how many were stepped."""
    pending = slots.pending().tolist()
    for k in pending:
        seq = slots.take(k)
        _answer(conn, slots, k, seq, _step(envs, k, actions[k].copy()), waker, "step")
    return len(pending)


def _step(envs: EnvSlice, k: int, action: Any) -> Outcome | None:
    """Step env ``k`` into its rows: what its answer has to say (None: nothing)."""
    try:
        info = envs.step_env(k, action)
    except EnvCallFailed as exc:
        return Outcome(False, WorkerFailure.from_exception(exc, "step"))
    reset_info = envs.reset_infos[k] if envs.buffers.dones[k] else None
    return Outcome(True, (info, reset_info)) if info or reset_info else None


def async_reset(conn: Connection, envs: EnvSlice, slots: WorkerSlots, request: AsyncResetRequest,
                waker: Waker | None = None) -> None:
    """Reset every env of the slice, answering each with its number from ``request``."""
    slots.skip_all()  # requests left from a round given up are void
    for k, seq in enumerate(request.seqs):
        slots.started(k)
        _answer(conn, slots, k, seq, _reset(envs, k, request), waker, "reset")


def _reset(envs: EnvSlice, k: int, request: AsyncResetRequest) -> Outcome | None:
    """Reset env ``k`` into its rows: what its answer has to say (None: nothing)."""
    try:
        info = envs.reset_env(k, None if request.seeds is None else request.seeds[k],
                              None if request.options is None else request.options[k])
    except EnvCallFailed as exc:
        return Outcome(False, WorkerFailure.from_exception(exc, "reset"))
    return Outcome(True, (info, None)) if info else None


def _answer(conn: Connection, slots: WorkerSlots, k: int, seq: int, outcome: Outcome | None,
            waker: Waker | None, method: str) -> None:
    """Send the message (if any), then the answer: the parent never sees one without the other;
    then wake the parent if it sleeps for it."""
    if outcome is not None:
        env = slots.first + k
        try:
            conn.send(EnvMessage(env, seq, outcome))
        except (pickle.PicklingError, TypeError, AttributeError) as exc:
            conn.send(EnvMessage(env, seq, Outcome(False, _unpicklable(env, method, outcome.value, exc))))
    slots.answer(k, seq, outcome is not None)
    if waker is not None:
        waker.answered()


def _unpicklable(env: int, method: str, infos: tuple[Any, Any], exc: Exception) -> WorkerFailure:
    """Why env ``env``'s message cannot be pickled: which of its infos (its step info, its
    reset info), in the words of the lock-step path."""
    named = (("info", method), ("reset info", "reset")) if method == "step" else (("reset info", "reset"),)
    return unpicklable_reply(method, ((what, source, env, info) for (what, source), info in zip(named, infos)),
                             f"the message of env {env}", env, exc)
