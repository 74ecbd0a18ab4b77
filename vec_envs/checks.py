"""Argument checks every module shares, so that the same mistake gets the same message.

Example:
    >>> check_int("VecFrameStack: n_stack", 4)
    4
    >>> check_int("make_vec_env(): n_envs", 0)
    Traceback (most recent call last):
    ...
    ValueError: make_vec_env(): n_envs must be an int >= 1, received 0
"""
from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["check_int"]


def check_int(name: str, value: Any, minimum: int = 1, alternatives: str = "") -> int:
    """``value`` as an int if it is one (NumPy integers too, bools not) and ``>= minimum``.

    Args:
        name: the parameter, as the message names it (e.g. "VecFrameStack: n_stack").
        value: what the caller passed.
        minimum: the smallest value allowed.
        alternatives: other accepted values, for the message (e.g. "or 'auto'").

    Raises:
        ValueError: naming the parameter, what is expected and what was received.
    """
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        expected = f"an int >= {minimum}" + (f" {alternatives}" if alternatives else "")
        raise ValueError(f"{name} must be {expected}, received {value!r}")
    return int(value)
