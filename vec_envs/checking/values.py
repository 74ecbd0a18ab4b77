"""Declared against returned: each observation leaf, reward and flag an env returned, checked
against what its spaces declare and what a VecEnv's batch buffers can hold.

A leaf of a ``Box`` is stored in the batch as the Box's dtype: a value that dtype cannot
hold (``300`` or ``-1`` in ``uint8``, ``1.5`` in an integer Box, ``1e39`` in ``float32``)
makes the VecEnv raise at that step; a float64 value stored as float32 is rounded without
a word. Both are problems here, and so are a shape other than the Box's, a value outside
its bounds, a value another space does not contain, a reward that is no finite real
number a float32 holds, and flags that are no booleans. Each names the env, the step and
the value.

Example:
    >>> from gymnasium import spaces
    >>> [p.kind for p in obs_problems(spaces.Box(0, 255, (2,), np.uint8), np.array([3, 300]))]
    ['wraps']
    >>> obs_problems(spaces.Box(0, 255, (2,), np.uint8), np.array([3, 300]))[0].text
    'obs[1] = 300 (int64) does not fit uint8: the VecEnv raises at this step'
    >>> [p.kind for p in obs_problems(spaces.Box(-1, 1, (1,), np.float32), np.array([0.1]))]
    ['rounds']
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium import spaces

from vec_envs.checking.differences import show
from vec_envs.spaces.checks import cast_exactly
from vec_envs.spaces.nested import iter_leaves, path_text

__all__ = ["Problem", "FIXES", "obs_problems", "reward_problems", "flag_problems"]

#: what to change, per kind of problem
FIXES = {
    "wraps": "declare the Box with a dtype that holds these values (np.int16, np.float32...), or clip and "
             "convert them in the env to the declared dtype",
    "overflows": "scale the values into float32's range in the env, or declare the Box with dtype=np.float64",
    "rounds": "return arrays of the Box's dtype (obs.astype(np.float32)), or declare the Box with "
              "dtype=np.float64 where the precision matters",
    "shape": "return arrays of the declared shape, or declare the shape the env returns",
    "bounds": "widen the Box's low / high to the values the env returns, or clip them in the env",
    "contains": "return values of the declared space, or declare the space the env returns",
    "reward": "return a finite float (or int) reward that float32 holds: the VecEnv stores rewards as float32",
    "flag": "return terminated and truncated as bools",
}


@dataclass(frozen=True)
class Problem:
    """One value at odds with its space: ``kind`` is a key of ``FIXES``; ``text`` says where and what."""

    kind: str
    text: str


def _leaf(obs: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        obs = obs[key]
    return obs


def obs_problems(space: spaces.Space, obs: Any) -> list[Problem]:
    """Every leaf of ``obs`` at odds with its leaf of ``space``: at most one problem per leaf."""
    found = []
    for path, leaf_space in iter_leaves(space):
        name = f"obs{path_text(path)}"
        try:
            value = _leaf(obs, path)
        except (KeyError, IndexError, TypeError):
            found.append(Problem("contains", f"{name} is missing from the observation"))
            continue
        problem = _box_problem(leaf_space, value, name) if isinstance(leaf_space, spaces.Box) else (
            None if leaf_space.contains(value) else
            Problem("contains", f"{name} = {show(value)} is not in {leaf_space}"))
        if problem is not None:
            found.append(problem)
    return found


def _box_problem(box: spaces.Box, value: Any, name: str) -> Problem | None:
    arr = np.asarray(value)
    if arr.shape != box.shape:
        return Problem("shape", f"{name} has shape {arr.shape}, the Box declares {box.shape}")
    try:
        stored = cast_exactly(arr, box.dtype)
    except ValueError:
        at, lost = _first_lost(arr, box.dtype)
        kind = "overflows" if box.dtype.kind == "f" and arr.dtype.kind == "f" else "wraps"
        return Problem(kind, f"{name}{at} = {show(lost)} ({arr.dtype}) does not fit {box.dtype}: "
                             f"the VecEnv raises at this step")
    if stored.dtype.kind == "f" and arr.dtype.kind in "fc" and stored.dtype.itemsize < arr.dtype.itemsize:
        changed = np.flatnonzero(stored.astype(arr.dtype).ravel() != arr.ravel())
        if changed.size:
            i = int(changed[0])
            return Problem("rounds", f"{name}{_index(arr.shape, i)} = {arr.ravel()[i]!r} ({arr.dtype}) is stored as "
                                     f"{stored.ravel()[i]!r} ({stored.dtype}), rounded")
    return _bounds_problem(box, stored, name)


def _bounds_problem(box: spaces.Box, stored: np.ndarray, name: str) -> Problem | None:
    if stored.dtype.kind not in "iuf":
        return None
    with np.errstate(invalid="ignore"):
        outside = np.flatnonzero(((stored < box.low) | (stored > box.high)).ravel())
    if not outside.size:
        return None
    i = int(outside[0])
    return Problem("bounds", f"{name}{_index(stored.shape, i)} = {stored.ravel()[i]!r} is outside the Box's "
                             f"[{box.low.ravel()[i]!r}, {box.high.ravel()[i]!r}]")


def _index(shape: tuple[int, ...], flat: int) -> str:
    return "".join(f"[{i}]" for i in np.unravel_index(flat, shape)) if shape else ""


def _first_lost(arr: np.ndarray, dtype: np.dtype) -> tuple[str, Any]:
    """The index and value of the first element of ``arr`` that ``dtype`` does not hold."""
    for i, x in enumerate(arr.ravel()):
        try:
            cast_exactly(np.asarray(x), dtype)
        except ValueError:
            return _index(arr.shape, i), x.item() if isinstance(x, np.generic) else x
    return "", arr


def reward_problems(reward: Any) -> list[Problem]:
    """A reward that is no finite real number a float32 holds."""
    if isinstance(reward, (bool, np.bool_)) or not isinstance(reward, (int, float, np.integer, np.floating)):
        return [Problem("reward", f"reward {show(reward)} is a {type(reward).__name__}, not a number")]
    value = float(reward)
    if not math.isfinite(value):
        return [Problem("reward", f"reward {value!r} is not finite")]
    if not math.isfinite(float(np.float32(value))):
        return [Problem("reward", f"reward {value!r} overflows float32 (stored as inf)")]
    return []


def flag_problems(terminated: Any, truncated: Any) -> list[Problem]:
    """Flags that are no booleans."""
    return [Problem("flag", f"{name} is {show(flag)} ({type(flag).__name__}), not a bool")
            for name, flag in (("terminated", terminated), ("truncated", truncated))
            if not isinstance(flag, (bool, np.bool_))]
