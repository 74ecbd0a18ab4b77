"""The first place two recordings differ, bit for bit, named by its path.

Arrays are equal when their dtype, shape and bytes are (so a NaN equals the same NaN, and
``0.1`` in float64 differs from ``0.1`` stored in float32); dicts by their keys, then key
by key; lists and tuples element by element; objects that compare by identity alone (a
lock, a handle) by their type; anything else by ``==``.

Example:
    >>> a = {"obs": np.array([[0.0, 1.0], [2.0, 3.0]], np.float32), "lives": 3}
    >>> b = {"obs": np.array([[0.0, 1.0], [2.0, 4.0]], np.float32), "lives": 3}
    >>> first_difference(a, a) is None
    True
    >>> first_difference(a, b)
    "['obs'][1][1]: 3.0 against 4.0"
"""
from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["first_difference", "show"]


def show(value: Any, limit: int = 60) -> str:
    """``value`` in at most ``limit`` characters."""
    text = repr(value.tolist() if isinstance(value, np.generic) else value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def first_difference(a: Any, b: Any, path: str = "") -> str | None:
    """Where ``a`` and ``b`` first differ (``"['obs'][1][1]: 3.0 against 4.0"``), or None."""
    if isinstance(a, dict) or isinstance(b, dict):
        return _dicts(a, b, path)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return _sequences(a, b, path)
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return _arrays(np.asarray(a), np.asarray(b), path)
    if type(a) is type(b) and type(a).__eq__ is object.__eq__:
        return None  # an object compared by identity only (a lock, a handle): its type is all that compares
    try:
        equal = bool(a == b) or (a != a and b != b)  # the same NaN
    except Exception:  # noqa: BLE001 (a value whose == raises is not comparable: a difference)
        equal = False
    return None if equal else f"{path or 'value'}: {show(a)} against {show(b)}"


def _dicts(a: Any, b: Any, path: str) -> str | None:
    if not (isinstance(a, dict) and isinstance(b, dict)):
        return f"{path or 'value'}: {show(a)} against {show(b)}"
    if list(a) != list(b) and set(a) != set(b):
        return f"{path or 'value'} keys: {sorted(map(str, a))} against {sorted(map(str, b))}"
    for key in a:
        found = first_difference(a[key], b[key], f"{path}[{key!r}]")
        if found:
            return found
    return None


def _sequences(a: list[Any] | tuple[Any, ...], b: list[Any] | tuple[Any, ...], path: str) -> str | None:
    if len(a) != len(b):
        return f"{path or 'value'}: {len(a)} entries against {len(b)}"
    for i, (x, y) in enumerate(zip(a, b)):
        found = first_difference(x, y, f"{path}[{i}]")
        if found:
            return found
    return None


def _arrays(a: np.ndarray, b: np.ndarray, path: str) -> str | None:
    where = path or "value"
    if a.dtype != b.dtype:
        return f"{where}: dtype {a.dtype} against {b.dtype}"
    if a.shape != b.shape:
        return f"{where}: shape {a.shape} against {b.shape}"
    if a.dtype == object:
        if a.ndim == 0:
            return first_difference(a.item(), b.item(), path)
        return _sequences(list(a), list(b), path) if a.ndim == 1 else _nested(a, b, path)
    if np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes():
        return None
    if a.ndim == 0:
        return f"{where}: {show(a.item())} against {show(b.item())}"
    flat_a, flat_b = a.reshape(a.shape[0], -1), b.reshape(b.shape[0], -1)
    for i in range(a.shape[0]):
        if flat_a[i].tobytes() != flat_b[i].tobytes():
            return _arrays(np.asarray(a[i]), np.asarray(b[i]), f"{path}[{i}]")
    return None


def _nested(a: np.ndarray, b: np.ndarray, path: str) -> str | None:
    for i in range(a.shape[0]):
        found = _arrays(a[i], b[i], f"{path}[{i}]")
        if found:
            return found
    return None
