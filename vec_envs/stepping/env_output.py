"""Checks of what an env returns from ``reset()`` and ``step()``, shared by every backend.

``EnvSlice`` runs each result through these before storing it, so a reward of ``None``
(which NumPy would store as NaN), a reward no float32 holds (``1e39``, ``2**2000``: they
would become ``inf`` or fail the store), a ``terminated`` that is an array or an info
that is not a dict is an error naming the env, the method, what it returned and what was
expected, on DummyVecEnv, in the parent's own slice and in every worker alike.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["FLOAT32_MAX", "USUAL_REWARDS", "EnvOutputError", "check_reset_result", "check_step_result"]

_REAL = (int, float, np.integer, np.floating, np.bool_)  # bool is an int: True counts as reward 1
_FLAG = (bool, np.bool_)
USUAL_REWARDS = frozenset({float, int, np.float64, np.float32, np.int64})  # checked by type and range alone
#: the largest finite reward the float32 rewards hold (inf and nan are kept as they are)
FLOAT32_MAX = float(np.finfo(np.float32).max)
REWARD_EXPECTED = "a real number (float, int or NumPy scalar)"
REWARD_RANGE = f"a real number a float32 holds (magnitude at most {FLOAT32_MAX:.8g}, or inf, or nan)"


class EnvOutputError(TypeError):
    """An env returned something of the wrong type or structure from ``reset`` / ``step``."""


def _describe(value: Any) -> str:
    text = _repr(value)
    text = text if len(text) <= 60 else text[:57] + "..."
    if isinstance(value, np.ndarray):
        return f"{text} (array of shape {value.shape}, dtype {value.dtype})"
    return f"{text} ({type(value).__name__})"


def _repr(value: Any) -> str:
    """``repr(value)``; for an int too long to print, its size; for a repr that raises, the type."""
    if type(value) is int and value.bit_length() > 256:
        return f"an int of {value.bit_length()} bits"
    try:
        return repr(value)
    except Exception:  # whatever a broken __repr__ raises, the value is still described
        return f"<{type(value).__name__} object>"


def _refuse(env_index: int, method: str, what: str, value: Any, expected: str) -> EnvOutputError:
    return EnvOutputError(f"env {env_index} returned {what} {_describe(value)} from {method}(); "
                          f"expected {expected}")


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
    if -FLOAT32_MAX <= number <= FLOAT32_MAX or number != number:
        return True
    return math.isinf(value) if isinstance(value, (int, float)) else bool(np.isinf(value))


def _is_flag(value: Any) -> bool:
    if isinstance(value, _FLAG):
        return True
    if isinstance(value, (int, np.integer)):
        return value in (0, 1)
    return isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind == "b"


def check_step_result(result: Any, env_index: int, method: str = "step") -> tuple[Any, Any, bool, bool, dict]:
    """``(obs, reward, terminated, truncated, info)`` of one ``env.step``, checked.

    The reward must be a real number (Python or NumPy scalar, bools included, or a 0-d
    array) that a float32 holds, ``terminated`` / ``truncated`` booleans (0 and 1 pass),
    the info a dict.

    Example:
        >>> check_step_result((0, 1.0, False, False, {}), env_index=3)
        (0, 1.0, False, False, {})
        >>> check_step_result((0, None, False, False, {}), env_index=3)
        Traceback (most recent call last):
        vec_envs.stepping.env_output.EnvOutputError: env 3 returned reward None (NoneType) from step(); expected ...
    """
    if type(result) is tuple and len(result) == 5:
        _, reward, terminated, truncated, info = result
        if type(reward) in USUAL_REWARDS and -FLOAT32_MAX <= reward <= FLOAT32_MAX and type(terminated) is bool \
                and type(truncated) is bool and type(info) is dict:
            return result  # the usual case, in a few type lookups
    return _checked_step_result(result, env_index, method)


def _checked_step_result(result: Any, env_index: int, method: str) -> tuple[Any, Any, bool, bool, dict]:
    if not isinstance(result, tuple) or len(result) != 5:
        raise _refuse(env_index, method, "the result", result,
                      "a tuple (obs, reward, terminated, truncated, info)")
    obs, reward, terminated, truncated, info = result
    if not _is_real(reward):
        raise _refuse(env_index, method, "reward", reward, REWARD_EXPECTED)
    if not _fits_float32(reward):
        raise _refuse(env_index, method, "reward", reward, REWARD_RANGE)
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
