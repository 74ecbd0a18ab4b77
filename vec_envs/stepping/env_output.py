"""Checks of what an env returns from ``reset()`` and ``step()``, shared by every backend.

``EnvSlice`` runs each result through these before storing it, so a reward of ``None``
(which NumPy would store as NaN), a ``terminated`` that is an array or an info that is
not a dict is an error naming the env, the method, what it returned and what was
expected, on DummyVecEnv, in the parent's own slice and in every worker alike.
"""
from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["USUAL_REWARDS", "EnvOutputError", "check_reset_result", "check_step_result"]

_REAL = (int, float, np.integer, np.floating)  # bool is an int: True counts as reward 1
_FLAG = (bool, np.bool_)
USUAL_REWARDS = frozenset({float, int, np.float64, np.float32, np.int64})  # checked by type alone


class EnvOutputError(TypeError):
    """An env returned something of the wrong type or structure from ``reset`` / ``step``."""


def _describe(value: Any) -> str:
    text = repr(value)
    text = text if len(text) <= 60 else text[:57] + "..."
    if isinstance(value, np.ndarray):
        return f"{text} (array of shape {value.shape}, dtype {value.dtype})"
    return f"{text} ({type(value).__name__})"


def _refuse(env_index: int, method: str, what: str, value: Any, expected: str) -> EnvOutputError:
    return EnvOutputError(f"env {env_index} returned {what} {_describe(value)} from {method}(); "
                          f"expected {expected}")


def _is_real(value: Any) -> bool:
    if isinstance(value, _REAL):
        return not isinstance(value, np.complexfloating)
    return isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "biuf"


def _is_flag(value: Any) -> bool:
    if isinstance(value, _FLAG):
        return True
    if isinstance(value, (int, np.integer)):
        return value in (0, 1)
    return isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind == "b"


def check_step_result(result: Any, env_index: int, method: str = "step") -> tuple[Any, Any, bool, bool, dict]:
    """``(obs, reward, terminated, truncated, info)`` of one ``env.step``, checked.

    The reward must be a real number (Python or NumPy scalar, or a 0-d array),
    ``terminated`` / ``truncated`` booleans (0 and 1 pass), the info a dict.

    Example:
        >>> check_step_result((0, 1.0, False, False, {}), env_index=3)
        (0, 1.0, False, False, {})
        >>> check_step_result((0, None, False, False, {}), env_index=3)
        Traceback (most recent call last):
        vec_envs.stepping.env_output.EnvOutputError: env 3 returned reward None (NoneType) from step(); expected ...
    """
    if type(result) is tuple and len(result) == 5:
        _, reward, terminated, truncated, info = result
        if type(reward) in USUAL_REWARDS and type(terminated) is bool and type(truncated) is bool \
                and type(info) is dict:
            return result  # the usual case, in a few type lookups
    return _checked_step_result(result, env_index, method)


def _checked_step_result(result: Any, env_index: int, method: str) -> tuple[Any, Any, bool, bool, dict]:
    if not isinstance(result, tuple) or len(result) != 5:
        raise _refuse(env_index, method, "the result", result,
                      "a tuple (obs, reward, terminated, truncated, info)")
    obs, reward, terminated, truncated, info = result
    if not _is_real(reward):
        raise _refuse(env_index, method, "reward", reward, "a real number (float, int or NumPy scalar)")
    if not _is_flag(terminated):
        raise _refuse(env_index, method, "terminated", terminated, "a bool")
    if not _is_flag(truncated):
        raise _refuse(env_index, method, "truncated", truncated, "a bool")
    if not isinstance(info, dict):
        raise _refuse(env_index, method, "info", info, "a dict")
    return obs, reward, bool(terminated), bool(truncated), info


def check_reset_result(result: Any, env_index: int, method: str = "reset") -> tuple[Any, dict]:
    """``(obs, info)`` of one ``env.reset``, checked (the info must be a dict).

    Example:
        >>> check_reset_result(([0.0], {}), env_index=0)
        ([0.0], {})
    """
    if not isinstance(result, tuple) or len(result) != 2:
        raise _refuse(env_index, method, "the result", result, "a tuple (obs, info)")
    if not isinstance(result[1], dict):
        raise _refuse(env_index, method, "info", result[1], "a dict")
    return result
