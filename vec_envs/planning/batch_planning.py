"""Batch planning on a VecEnv: the checks and the packing behind ``get_states``,
``set_states``, ``sync_states`` and ``step_batch``.

``VecEnvBase``'s planning methods check the call (open, idle) and the actions, then hand
the rest to these functions, which call the backend's hook (``_step_batch``) with the
arguments in one canonical form: a list of states (one per env, or one per index), a
list of ``dt`` ints, and whether the caller wants the new states back.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from vec_envs.arguments import check_int
from vec_envs.types import EnvState, VecEnvObs

__all__ = ["StepBatchHook", "check_dts", "check_one_state", "check_states", "pack_step_batch", "run_step_batch"]

#: a backend's ``_step_batch(actions, states, dts, return_states)``: ``(obs, [(state or None,
#: reward, terminated, truncated, info) per env])``
StepBatchHook = Callable[[Any, "list[Any] | None", "list[int]", bool], "tuple[VecEnvObs, list[tuple]]"]


def check_states(states: Any, expected: int, method: str, per: str) -> list[Any]:
    """``states`` as a list of ``expected`` states; one lone state or a wrong count is refused.

    Args:
        states: what the caller passed.
        expected: how many states the call needs.
        method: the method, as the message names it.
        per: whose states they are, for the message (e.g. "one per env").

    Example:
        >>> check_states(("s0", "s1"), 2, "set_states", "one per index")
        ['s0', 's1']
        >>> check_states(["s0"], 2, "set_states", "one per index")
        Traceback (most recent call last):
        ValueError: set_states(): expected 2 states (one per index), received 1
    """
    if isinstance(states, EnvState):
        hint = ", or sync_states(state) to set one state on every env" if method == "set_states" else ""
        raise TypeError(f"{method}(): received one state; pass a list of {expected} states ({per}){hint}")
    try:
        states = list(states)
    except TypeError:
        raise TypeError(f"{method}(): expected a sequence of {expected} states ({per}), "
                        f"received {type(states).__name__}") from None
    if len(states) != expected:
        raise ValueError(f"{method}(): expected {expected} states ({per}), received {len(states)}")
    return states


def check_one_state(state: Any) -> Any:
    """``state`` for ``sync_states``: one state, not a list of them.

    Example:
        >>> check_one_state(["s0", "s1"])
        Traceback (most recent call last):
        TypeError: sync_states(): expected one state, received a list of 2; use set_states(states) for one state per env
    """
    if isinstance(state, (list, tuple)):
        raise TypeError(f"sync_states(): expected one state, received a {type(state).__name__} of "
                        f"{len(state)}; use set_states(states) for one state per env")
    return state


def check_dts(dt: Any, num_envs: int) -> list[int]:
    """``dt`` (an int, or one per env) as ``num_envs`` ints ``>= 1``.

    Example:
        >>> check_dts(4, 3)
        [4, 4, 4]
        >>> check_dts([1, 0], 2)
        Traceback (most recent call last):
        ValueError: step_batch(): dt for env 1 must be an int >= 1, received 0
    """
    try:
        dts = [dt] * num_envs if isinstance(dt, (int, np.integer)) else list(dt)
    except TypeError:
        raise ValueError(f"step_batch(): dt must be an int or {num_envs} ints (one per env), "
                         f"received {dt!r}") from None
    if len(dts) != num_envs:
        raise ValueError(f"step_batch(): expected dt as an int or {num_envs} ints (one per env), "
                         f"received {len(dts)}")
    return [check_int(f"step_batch(): dt for env {i}", value) for i, value in enumerate(dts)]


def pack_step_batch(obs: VecEnvObs, results: list[tuple], with_states: bool) -> tuple:
    """Per-env ``(state, reward, terminated, truncated, info)`` into the batched return.

    Example:
        >>> obs = np.zeros((2, 1))
        >>> _, rewards, terms, truncs, infos = pack_step_batch(
        ...     obs, [(None, 1, False, False, {}), (None, 2, True, False, {})], with_states=False)
        >>> rewards.tolist(), terms.tolist()
        ([1.0, 2.0], [False, True])
    """
    states, rewards, terminateds, truncateds, infos = (list(column) for column in zip(*results))
    out = (obs, np.asarray(rewards, np.float32), np.asarray(terminateds, np.bool_),
           np.asarray(truncateds, np.bool_), infos)
    return (states, *out) if with_states else out


def run_step_batch(step_hook: StepBatchHook, actions: Any, states: Any, dt: Any, return_states: bool | None,
                   num_envs: int) -> tuple:
    """``step_batch`` with checked actions: check ``states`` and ``dt``, run the hook, pack.

    Returns the new states first when ``states`` are given or ``return_states`` is True.

    Example:
        >>> def hook(actions, states, dts, want):          # a backend's _step_batch
        ...     return np.zeros((2, 1)), [("s", dts[i], False, False, {}) for i in range(2)]
        >>> states, obs, rewards, terms, truncs, infos = run_step_batch(
        ...     hook, [0, 1], ["s0", "s1"], dt=[1, 3], return_states=None, num_envs=2)
        >>> rewards.tolist()
        [1.0, 3.0]
    """
    if states is not None:
        states = check_states(states, num_envs, "step_batch", "one per env")
    dts = check_dts(dt, num_envs)
    want_states = states is not None if return_states is None else bool(return_states)
    obs, results = step_hook(actions, states, dts, want_states)
    return pack_step_batch(obs, results, want_states)
