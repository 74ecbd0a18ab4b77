"""The messages between a worker VecEnv (the parent) and its workers, and the worker's side of them.

Whatever the transport (a pipe, a Ray actor, the parent's own slice), the parent sends a ``Request``
(a ``Command``, a number, a payload). The worker runs it on its ``EnvSlice`` (``serve``) and answers
each request not answered elsewhere with one ``Reply`` of that number (the parent drops one of
another: it answers a request given up on), ok with the value or not ok with a ``WorkerFailure``.
Resets and steps get ``Answers``; a failed env stops no serving: it is one more answer.
"""
from __future__ import annotations

import enum
import traceback
from collections.abc import Callable, Sequence
from multiprocessing.reduction import ForkingPickler
from typing import Any, NamedTuple

import numpy as np
from gymnasium import spaces

from vec_envs.errors import EnvCallFailed
from vec_envs.interop.single_env import env_attr, is_wrapped, set_env_attr
from vec_envs.spaces.batching import copy_obs, get_row, take_rows
from vec_envs.types import Info, VecEnvObs
from vec_envs.workers.env_slice import EnvSlice, step_envs

__all__ = ["Answers", "Command", "EnvCall", "Reply", "Request", "Reset", "Spaces", "Step", "WorkerFailure",
           "reset_envs", "serve", "unpicklable", "unpicklable_info"]


class Command(enum.IntEnum):
    """What the parent asks of a worker (the numbers travel on the wire)."""
    SPACES = 1
    RESET = 2  # a ``Reset``: some envs of the slice
    STEP = 3  # a ``Step``: some envs of the slice (lock-step: all of them), with their actions
    ENV_CALL = 4  # an ``EnvCall``: attributes, methods, frames, states of some envs
    CLOSE = 5
    ATTACH = 6  # the subprocess transport: map the shared memory whose descriptors follow
    WAKE = 7  # the subprocess transport: look at the lanes (a worker asleep without the bell); no reply


class Request(NamedTuple):
    """Parent to worker: one command, numbered."""
    command: int
    seq: int
    payload: Any


class Reply(NamedTuple):
    """Worker to parent: the outcome of request ``seq``: ``value`` if ``ok``, else a ``WorkerFailure``."""
    seq: int
    ok: bool
    value: Any


class WorkerFailure(NamedTuple):
    """Why a command failed in a worker; ``raise_as``: a vec_envs check's class, raised as such in the parent."""
    env_index: int | None
    method: str
    summary: str
    traceback: str
    raise_as: type | None = None

    @classmethod
    def of(cls, exc: BaseException, method: str) -> WorkerFailure:
        """The failure of ``method``; an ``EnvCallFailed`` names the env and its own method."""
        env_index, raise_as = None, None
        if isinstance(exc, EnvCallFailed):
            env_index, method = exc.env_index, exc.method
            raise_as = type(exc.__cause__) if exc.ours else None
            exc = exc.__cause__ or exc
        text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        traceback.clear_frames(exc.__traceback__)  # their locals (views of shared memory) go now
        summary = str(exc) if raise_as is not None else f"{type(exc).__name__}: {exc}"
        return cls(env_index, method, summary, text, raise_as)


class Spaces(NamedTuple):
    """The reply to SPACES: one env's spaces."""
    observation_space: spaces.Space
    action_space: spaces.Space


class Reset(NamedTuple):
    """RESET: env ``ks[j]`` with ``seeds[j]``, ``options[j]``; with ``seqs`` (lanes): answered in lane ``seqs[j]``."""
    ks: list[int]
    seeds: Sequence[int | None] | None
    options: Sequence[dict | None] | None
    seqs: list[int] | None = None


class Step(NamedTuple):
    """STEP: env ``ks[j]`` of the slice with ``actions[j]``."""
    ks: list[int]
    actions: Any


class EnvCall(NamedTuple):
    """ENV_CALL: ``ENV_CALLS[method]`` on envs ``ks``, ``args`` for all, ``per_env[j]`` for ``ks[j]``; a value each."""
    method: str
    ks: list[int]
    args: tuple = ()
    per_env: list | None = None


class Answers(NamedTuple):
    """What envs said answering a reset or a step, per env of ``envs`` (global indices): ``infos`` (after
    a reset, the reset infos) and ``reset_infos`` (of the reset after an episode's end; None: none).
    ``seqs``: the request each answers (lanes); ``failures``: env -> why it failed; ``obs``, ``rewards``,
    ``dones``: their rows unless the parent reads them in memory; ``schema``: the info schema (lanes)."""
    envs: list[int]
    seqs: list[int] | None
    infos: list[Info]
    reset_infos: list[Info | None]
    failures: dict[int, WorkerFailure] | None
    obs: VecEnvObs | None = None
    rewards: np.ndarray | None = None
    dones: np.ndarray | None = None
    schema: tuple | None = None


# ------------------------------------------------------------ the worker's side
def _with_row(envs: EnvSlice, k: int, *result: Any) -> tuple:
    """``(env k's observation row, *result)``: the row read after the call that gave ``result``."""
    return (copy_obs(get_row(envs.buffers.obs, k)), *result)


#: ENV_CALL's methods: (envs, k, per-env value, *args) -> the env's result
ENV_CALLS: dict[str, Callable[..., Any]] = {
    "get_attr": lambda s, k, _, name: s.call(k, "get_attr", lambda: env_attr(s.envs[k], name)),
    "set_attr": lambda s, k, _, name, value: s.call(k, "set_attr", lambda: set_env_attr(s.envs[k], name, value)),
    "env_method": lambda s, k, _, name, args, kwargs: s.call(
        k, name, lambda: env_attr(s.envs[k], name)(*args, **kwargs)),
    "env_is_wrapped": lambda s, k, _, wrapper_class: is_wrapped(s.envs[k], wrapper_class),
    "get_images": lambda s, k, _: s.image(k),
    "get_states": lambda s, k, _: s.get_state(k),
    "set_states": lambda s, k, state: s.set_state(k, state),
    "step_from": lambda s, k, value, return_states: _with_row(s, k, *s.step_from(k, *value, return_states)),
    "reset_one": lambda s, k, value: _with_row(s, k, dict(s.reset_env(k, *value))),
}


def reset_envs(envs: EnvSlice, request: Reset,
               answer: Callable[[int, Info | None], None]) -> dict[int, WorkerFailure]:
    """Reset the envs of ``request`` (on past a failed env) and ``answer(k, reset info or None)`` each; the failures."""
    failures: dict[int, WorkerFailure] = {}
    for j, k in enumerate(request.ks):
        try:
            info: Info | None = envs.reset_env(k, None if request.seeds is None else request.seeds[j],
                                               None if request.options is None else request.options[j])
        except EnvCallFailed as exc:
            failures[exc.env_index] = WorkerFailure.of(exc, "reset")
            info = None
        answer(k, info)
    return failures


def _answers(envs: EnvSlice, ks: list[int], infos: list[Info], reset_infos: list[Info | None],
             failures: dict[int, WorkerFailure], shared: bool) -> Answers:
    answers = Answers([envs.first_index + k for k in ks], None, infos, reset_infos, failures or None)
    if shared:
        return answers
    idx, buffers = np.asarray(ks, np.int64), envs.buffers
    return answers._replace(obs=take_rows(buffers.obs, idx), rewards=buffers.rewards[idx], dones=buffers.dones[idx])


def serve(envs: EnvSlice, command: int, payload: Any, shared: bool = False) -> Any:
    """Run one command on ``envs``; its reply's value (``shared``: no rows in the answers). Raises what it raised."""
    if command == Command.STEP:
        infos, failed = step_envs(envs, payload.ks, payload.actions)
        failures = {i: WorkerFailure.of(exc, "step") for i, exc in failed.items()}
        dones, deferred = envs.buffers.dones, envs.pending is not None
        resets = [dict(envs.reset_infos[k]) if dones[k] and not deferred and k + envs.first_index not in failures
                  else None for k in payload.ks]
        return _answers(envs, payload.ks, infos, resets, failures, shared)
    if command == Command.RESET:
        said: list[Info] = []
        failures = reset_envs(envs, payload, lambda k, info: said.append({} if info is None else dict(info)))
        return _answers(envs, payload.ks, said, [None] * len(said), failures, shared)
    if command == Command.ENV_CALL:
        call = ENV_CALLS[payload.method]
        per_env = payload.per_env or [None] * len(payload.ks)
        return [call(envs, k, value, *payload.args) for k, value in zip(payload.ks, per_env)]
    if command == Command.SPACES:
        return Spaces(envs.observation_space, envs.action_space)
    if command == Command.CLOSE:
        return envs.close()
    valid = ", ".join(f"{c.name}={c.value}" for c in Command)
    raise ValueError(f"unknown command {command!r}; valid: {valid}")


def unpicklable_info(env: int, method: str, info: Info, reset_info: Info | None) -> WorkerFailure | None:
    """The failure naming env ``env``'s info (of ``method``; the reset info after a reset) or reset info if
    one cannot be pickled; None if both can."""
    named = [("info", method, info), ("reset info", "reset", reset_info)] if method != "reset" else \
        [("reset info", "reset", info)]
    for what, source, item in named:
        try:
            ForkingPickler.dumps(item)
        except Exception as error:  # whatever pickling raises, this info is the culprit
            return WorkerFailure(env, method, f"the {what} env {env} returned from {source}() cannot be pickled to "
                                 f"reach the parent process ({type(error).__name__}: {error}); keep infos to "
                                 "picklable values", "")
    return None


def unpicklable(value: Any, request: Request, first_index: int, exc: Exception) -> WorkerFailure:
    """Why ``value``, the reply to ``request``, cannot be pickled: the first info or result to blame, else ``exc``."""
    command, payload = request.command, request.payload
    method = payload.method if command == Command.ENV_CALL else Command(command).name.lower() \
        if command in Command.__members__.values() else "handle"
    if isinstance(value, Answers):
        for i, info, reset_info in zip(value.envs, value.infos, value.reset_infos):
            failure = unpicklable_info(i, method, info, reset_info)
            if failure is not None:
                return failure
    env: int | None = None
    if command == Command.ENV_CALL and isinstance(value, list):
        for k, item in zip(payload.ks, value):
            try:
                ForkingPickler.dumps(item)
            except Exception:  # whatever pickling raises, this env's result is the culprit
                env = first_index + k
                break
    what = f"the result of {method}()" if env is None else f"what env {env} returned to {method}()"
    return WorkerFailure(env, method, f"{what} cannot be pickled to reach the parent process "
                                      f"({type(exc).__name__}: {exc}); return picklable values", "")
