"""The worker's half of the env lanes (``control.py``): step what the parent requested.

A worker answers each env in its lane: it steps (or resets) the env into its rows, sends
the envs' ``EnvMessage`` list through the pipe only when there is something to say
(infos, an error), then writes the answers. Under ``recv``/``send`` each env is answered
as soon as it is done, so the parent can take the first envs to finish while the others
keep stepping: a run of envs requested together is one step loop (``EnvSlice.step_marked``),
which answers the envs with nothing to say itself (``lanes.marks``). Lock-step is the same
loop over the whole slice; as the parent waits for the whole batch there (its ``TOGETHER``
column), the envs with something to say share one message, sent after the last env, and
the answers are counted, and the parent woken if they complete its batch, once at the end.
"""
from __future__ import annotations

import pickle
from collections.abc import Sequence
from multiprocessing.connection import Connection
from multiprocessing.reduction import ForkingPickler
from typing import NamedTuple

from vec_envs.errors import EnvCallFailed
from vec_envs.stepping.env_slice import EnvSlice
from vec_envs.stepping.marks import Marks
from vec_envs.subproc.control import WorkerLanes
from vec_envs.subproc.unpicklable import unpicklable_reply
from vec_envs.workers.protocol import Outcome, WorkerFailure
from vec_envs.workers.slice_server import SliceServer

__all__ = ["AsyncResetRequest", "EnvMessage", "async_reset", "serve_requests"]


class AsyncResetRequest(NamedTuple):
    """ASYNC_RESET: reset the slice's envs; env k's answer carries ``seqs[k]``."""

    seeds: Sequence[int | None] | None
    seqs: list[int]
    options: Sequence[dict | None] | None = None  # one per env of the slice; None: no options


class EnvMessage(NamedTuple):
    """What one env's answer has to say beyond its rows; a list of them goes through the
    pipe before the answers.

    ``outcome`` is ``Outcome(True, (info, reset_info or None))`` after a step (the reset
    info when the episode ended and the env was reset), ``Outcome(True, (reset_info,
    None))`` after an async reset, or ``Outcome(False, WorkerFailure)``.
    """

    env: int  # the env's global index
    seq: int  # the request it answers
    outcome: Outcome


def serve_requests(conn: Connection | None, server: SliceServer, lanes: WorkerLanes) -> int:
    """Step every env with a new request; how many were stepped. Each env is answered as
    soon as it is done, except in lock-step (``together()``: the parent waits for the whole
    batch anyway), where the envs with something to say share one message, sent last."""
    if lanes.together():
        return _serve_together(conn, server, lanes)
    stepped = 0
    for start, stop in lanes.take_runs():  # runs of consecutive envs: a step loop each
        _serve_run(conn, server, lanes, start, stop, lanes.marks, None)
        stepped += stop - start
    return stepped


def _serve_together(conn: Connection | None, server: SliceServer, lanes: WorkerLanes) -> int:
    """Lock-step: the same step loop, but the answers are counted (and the parent woken)
    once at the end, the envs with something to say answered after their one message."""
    held: list[EnvMessage] = []
    stepped = 0
    for start, stop in lanes.take_runs():
        _serve_run(conn, server, lanes, start, stop, lanes.uncounted_marks, held)
        stepped += stop - start
    if held:
        _send(conn, held, "step")
        for message in held:
            lanes.answer(message.env - lanes.first, message.seq, True, count=False)
    if stepped:
        lanes.counted(stepped)
    return stepped


def _serve_run(conn: Connection | None, server: SliceServer, lanes: WorkerLanes, start: int, stop: int,
               marks: Marks, held: list[EnvMessage] | None) -> None:
    """Step envs ``start:stop``, each answered as soon as it is done: those with nothing to
    say by the step loop itself (``lanes.marks``), the others here with their message (or,
    ``held``, later with the others')."""
    envs, actions = server.envs, server.shared_actions[start:stop].copy()
    k = start
    while k < stop:
        try:
            k, info = envs.step_marked(actions, start, k, stop, marks)
        except EnvCallFailed as exc:
            k = exc.env_index - lanes.first
            outcome = Outcome(False, WorkerFailure.from_exception(exc, "step"))
        else:
            if k == stop:
                return
            outcome = Outcome(True, (info, envs.reset_infos[k] if envs.buffers.dones[k] else None))
        if held is None:
            _answer(conn, lanes, k, lanes.seq(k), outcome, "step")
        else:
            held.append(EnvMessage(lanes.first + k, lanes.seq(k), outcome))
        k += 1


def async_reset(conn: Connection, envs: EnvSlice, lanes: WorkerLanes, request: AsyncResetRequest) -> None:
    """Reset every env of the slice, answering each with its number from ``request``."""
    lanes.skip_all()  # requests left from a round given up are void
    for k, seq in enumerate(request.seqs):
        _answer(conn, lanes, k, seq, _reset(envs, k, request), "reset")


def _reset(envs: EnvSlice, k: int, request: AsyncResetRequest) -> Outcome | None:
    """Reset env ``k`` into its rows: what its answer has to say (None: nothing)."""
    try:
        info = envs.reset_env(k, None if request.seeds is None else request.seeds[k],
                              None if request.options is None else request.options[k])
    except EnvCallFailed as exc:
        return Outcome(False, WorkerFailure.from_exception(exc, "reset"))
    return Outcome(True, (info, None)) if info else None


def _answer(conn: Connection | None, lanes: WorkerLanes, k: int, seq: int, outcome: Outcome | None,
            method: str) -> None:
    """Send the message (if any), then the answer: the parent never sees one without the other."""
    if outcome is not None:
        _send(conn, [EnvMessage(lanes.first + k, seq, outcome)], method)
    lanes.answer(k, seq, outcome is not None)


def _send(conn: Connection | None, messages: list[EnvMessage], method: str) -> None:
    """Send ``messages`` in one pipe message; one that cannot be pickled becomes a failure."""
    if conn is None:
        raise RuntimeError("an env message needs the worker's pipe")
    try:
        conn.send(messages)
    except (pickle.PicklingError, TypeError, AttributeError) as exc:
        conn.send([message if _picklable(message) else
                   EnvMessage(message.env, message.seq, Outcome(False, _unpicklable(message, method, exc)))
                   for message in messages])


def _picklable(message: EnvMessage) -> bool:
    try:
        ForkingPickler.dumps(message)
    except Exception:
        return False
    return True


def _unpicklable(message: EnvMessage, method: str, exc: Exception) -> WorkerFailure:
    """Why env ``message.env``'s message cannot be pickled: which of its infos (its step
    info, its reset info)."""
    env, infos = message.env, message.outcome.value
    named = (("info", method), ("reset info", "reset")) if method == "step" else (("reset info", "reset"),)
    return unpicklable_reply(method, ((what, source, env, info) for (what, source), info in zip(named, infos)),
                             f"the message of env {env}", env, exc)
