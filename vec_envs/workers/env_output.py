"""Checks of what an env returns from ``reset()`` and ``step()``, shared by every backend.

``EnvSlice`` checks each result before storing it, so a reward of ``None`` (stored as NaN)
or one no float32 holds (``1e39``), a ``terminated`` that is an array or an info that is no
dict is an error naming the env, the method, the value and what was expected, on every backend.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from vec_envs.errors import EnvOutputError

__all__ = ["FLOAT32_MAX", "USUAL_REWARDS", "EnvOutputError", "check_reset_result", "check_step_result"]

_REAL = (int, float, np.integer, np.floating, np.bool_)  # bool is an int: True counts as reward 1
USUAL_REWARDS = frozenset({float, int, np.float64, np.float32, np.int64})  # checked by type and range alone
#: the largest finite float32 (inf and nan are kept as they are)
FLOAT32_MAX = float(np.finfo(np.float32).max)
#: a finite reward below this magnitude rounds to a finite float32 (to at most FLOAT32_MAX)
_FLOAT32_BOUND = 2.0 ** 128 - 2.0 ** 103
REWARD_EXPECTED = "a real number (float, int or NumPy scalar)"
REWARD_RANGE = f"a real number a float32 holds (magnitude at most {FLOAT32_MAX:.8g}, or inf, or nan)"


def _refuse(env_index: int, method: str, what: str, value: Any, expected: str) -> EnvOutputError:
    """The error for env ``env_index`` returning ``value``: its repr (cut short) and type."""
    if type(value) is int and value.bit_length() > 256:
        text = f"an int of {value.bit_length()} bits"
    else:
        try:
            text = repr(value)
        except Exception:  # whatever a broken __repr__ raises, the value is still described
            text = f"<{type(value).__name__} object>"
    text = text if len(text) <= 60 else text[:57] + "..."
    kind = type(value).__name__
    if isinstance(value, np.ndarray):
        kind = f"array of shape {value.shape}, dtype {value.dtype}"
    return EnvOutputError(f"env {env_index} returned {what} {text} ({kind}) from {method}(); expected {expected}")


def _is_real(value: Any) -> bool:
    if isinstance(value, _REAL):
        return not isinstance(value, np.complexfloating)
    return isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "biuf"


def _fits_float32(value: Any) -> bool:
    """Does the real number ``value`` keep its value (rounded) as a float32? inf and nan do."""
    try:
        number = float(value)
    except (OverflowError, ValueError, TypeError):  # an int beyond any float
        return False
    if -_FLOAT32_BOUND < number < _FLOAT32_BOUND or number != number:
        return True
    return math.isinf(value) if isinstance(value, (int, float)) else bool(np.isinf(value))


def _is_flag(value: Any) -> bool:
    if isinstance(value, (bool, np.bool_)):
        return True
    if isinstance(value, (int, np.integer)):
        return value in (0, 1)
    return isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind == "b"


def check_step_result(result: Any, env_index: int, method: str = "step") -> tuple[Any, Any, bool, bool, dict]:
    """``(obs, reward, terminated, truncated, info)`` of one ``env.step``, checked: a real reward (scalar, bool
    or 0-d array) a float32 holds, boolean flags (0 and 1 pass), a dict info."""
    if type(result) is tuple and len(result) == 5:
        _, reward, terminated, truncated, info = result
        kind = type(reward)
        if kind in USUAL_REWARDS and (kind is np.float32 or -_FLOAT32_BOUND < reward < _FLOAT32_BOUND) \
                and type(terminated) is bool and type(truncated) is bool and type(info) is dict:
            return result  # the usual case, in a few type lookups
    if not isinstance(result, tuple) or len(result) != 5:
        raise _refuse(env_index, method, "the result", result, "a tuple (obs, reward, terminated, truncated, info)")
    obs, reward, terminated, truncated, info = result
    if not _is_real(reward):
        raise _refuse(env_index, method, "reward", reward, REWARD_EXPECTED)
    if not _fits_float32(reward):
        raise _refuse(env_index, method, "reward", reward, REWARD_RANGE)
    for what, flag in (("terminated", terminated), ("truncated", truncated)):
        if not _is_flag(flag):
            raise _refuse(env_index, method, what, flag, "a bool")
    if not isinstance(info, dict):
        raise _refuse(env_index, method, "info", info, "a dict")
    return obs, reward, bool(terminated), bool(truncated), info


def check_reset_result(result: Any, env_index: int, method: str = "reset") -> tuple[Any, dict]:
    """``(obs, info)`` of one ``env.reset``, checked (the info must be a dict)."""
    if not isinstance(result, tuple) or len(result) != 2:
        raise _refuse(env_index, method, "the result", result, "a tuple (obs, info)")
    if not isinstance(result[1], dict):
        raise _refuse(env_index, method, "info", result[1], "a dict")
    return result
