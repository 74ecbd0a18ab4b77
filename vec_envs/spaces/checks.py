"""Values checked against a space: casts that lose nothing, and nested action structures.

Every backend stores observations and actions through these checks, so a value the
space's dtype cannot hold (``300`` or ``-1`` for ``uint8``, ``1.5`` for an integer
space) or an action shaped unlike its space is an error, never a silent wrap-around.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

from vec_envs.spaces.nested import FIXED_SIZE_LEAVES, path_text

__all__ = ["cast_exactly", "check_action", "check_actions", "check_env_actions"]


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) < 80 else text[:77] + "..."


def _lost(arr: np.ndarray, cast: np.ndarray) -> np.ndarray:
    """Elements of ``arr`` whose value ``cast`` does not hold (True where lost)."""
    if cast.dtype.kind in "iu":
        bounds = np.iinfo(cast.dtype)
        with np.errstate(invalid="ignore"):
            lost = (arr < bounds.min) | (arr > bounds.max)
            return lost | (cast != arr) if arr.dtype.kind in "fc" else lost  # fractions, NaN
    if cast.dtype.kind == "b":
        return cast.astype(arr.dtype) != arr  # only 0 and 1 are booleans
    if cast.dtype.kind in "fc" and arr.dtype.kind in "fc":
        return np.isinf(cast) & np.isfinite(arr)  # rounding is fine, overflow to inf is not
    return np.zeros(arr.shape, bool)


def cast_exactly(value: Any, dtype: np.dtype) -> np.ndarray:
    """``value`` as an array of ``dtype``; ``ValueError`` if a value does not fit.

    Casting that keeps every value (int64 ``3`` -> uint8, float64 -> float32 with
    rounding) passes; a value out of range, a fraction for an integer dtype, NaN for an
    integer dtype, or text raise, naming the value and the dtype.

    Example:
        >>> cast_exactly([3, 255], np.dtype(np.uint8))
        array([  3, 255], dtype=uint8)
        >>> cast_exactly([300, -1], np.dtype(np.uint8))
        Traceback (most recent call last):
        ValueError: value 300 does not fit dtype uint8 (values [300, -1])
    """
    arr = value if isinstance(value, np.ndarray) else np.asarray(value)
    if arr.dtype == dtype:
        return arr
    if arr.dtype.kind not in "biufc":
        raise ValueError(f"value {_short(value)} of dtype {arr.dtype} cannot be stored as dtype {dtype}")
    if np.can_cast(arr.dtype, dtype, "safe"):
        return arr.astype(dtype)
    with np.errstate(invalid="ignore", over="ignore"):
        cast = arr.astype(dtype)
    lost = _lost(arr, cast)
    if lost.any():
        first = (arr[lost].flat[0] if arr.ndim else arr[()]).item()
        raise ValueError(f"value {first!r} does not fit dtype {dtype} (values {_short(arr.tolist())})")
    return cast


def check_action(space: spaces.Space, action: Any, path: tuple = ()) -> None:
    """Raise ``ValueError`` unless ``action`` has the structure of ``space``.

    Dict actions need exactly the space's keys, Tuple actions its length, and every
    fixed-size leaf its shape (so a scalar for a ``Box((2,))`` leaf or a dict for a
    ``Discrete`` space is refused). Leaves with no fixed size are not checked.

    Example:
        >>> space = spaces.Dict({"move": spaces.Discrete(3), "aim": spaces.Box(-1, 1, (2,))})
        >>> check_action(space, {"move": 1, "aim": [0.5, 0.0]})
        >>> check_action(space, {"move": 1})
        Traceback (most recent call last):
        ValueError: action is missing keys ['aim'] (expected keys ['aim', 'move'] of Dict('aim': ..., 'move': ...))
    """
    if isinstance(space, spaces.Dict):
        _check_dict(space, action, path)
    elif isinstance(space, spaces.Tuple):
        if not isinstance(action, (tuple, list)) or len(action) != len(space.spaces):
            raise ValueError(f"action{path_text(path)} is {_short(action)}, but the action space expects a "
                             f"tuple of {len(space.spaces)} actions ({_brief(space)})")
        for j, (sub, part) in enumerate(zip(space.spaces, action)):
            check_action(sub, part, path + (j,))
    elif isinstance(space, FIXED_SIZE_LEAVES):
        _check_leaf(space, action, path)


def _check_leaf(space: spaces.Space, action: Any, path: tuple) -> None:
    if isinstance(action, dict):
        raise ValueError(  # the contract: a wrong action is a ValueError
            f"action{path_text(path)} is a dict {_short(action)}, but the action space {space} "
            f"expects an array of shape {space.shape}")
    try:
        shape = action.shape if isinstance(action, np.ndarray) else np.shape(action)
    except ValueError:  # ragged nested lists
        shape = None
    if shape != space.shape:
        raise ValueError(f"action{path_text(path)} {_short(action)} has shape {shape}, but the action "
                         f"space {space} expects shape {space.shape}")


def _check_dict(space: spaces.Dict, action: Any, path: tuple) -> None:
    if not isinstance(action, dict):
        raise ValueError(  # the contract: a wrong action is a ValueError
            f"action{path_text(path)} is {_short(action)}, but the action space expects a dict "
            f"with keys {list(space.spaces)} ({_brief(space)})")
    missing = [k for k in space.spaces if k not in action]
    extra = [k for k in action if k not in space.spaces]
    if missing or extra:
        problem = f"is missing keys {missing}" if missing else f"has unknown keys {extra}"
        raise ValueError(f"action{path_text(path)} {problem} (expected keys {list(space.spaces)} of "
                         f"{_brief(space)})")
    for key, sub in space.spaces.items():
        check_action(sub, action[key], path + (key,))


def _brief(space: spaces.Space) -> str:
    if isinstance(space, spaces.Dict):
        return "Dict(" + ", ".join(f"{k!r}: ..." for k in space.spaces) + ")"
    if isinstance(space, spaces.Tuple):
        return f"Tuple of {len(space.spaces)}"
    return str(space)


def check_actions(space: spaces.Space, actions: Any, num_envs: int, method: str = "step_async",
                  per: str = "one per env") -> Any:
    """One action per env, checked against ``space``, in the form backends step with.

    Fixed-size spaces give one array ``(num_envs, *shape)`` in the space's dtype (a
    value that dtype cannot hold, or a float for an integer space, is refused); a Dict
    space takes a list of per-env dicts or one dict of batches (split per env); every
    per-env action of a Dict / Tuple space must match its structure (``check_action``).
    Errors are ``ValueError`` naming the method, the env, what came and what was expected
    (``per`` says whose actions they are, for the message).

    Example:
        >>> check_actions(spaces.Discrete(3), [0, 2], num_envs=2)
        array([0, 2])
        >>> check_actions(spaces.Discrete(3), {"a": [0, 1]}, num_envs=2)
        Traceback (most recent call last):
        ValueError: step_async(): received a dict of actions, but the action space Discrete(3) is not a Dict ...
    """
    if type(actions) is np.ndarray and actions.dtype == space.dtype and space.shape is not None \
            and actions.shape[1:] == space.shape and len(actions) == num_envs:
        return actions  # the usual case: one array, as the space wants it
    if isinstance(actions, dict):
        actions = _split_dict_of_batches(space, actions, num_envs, method, per)
    try:
        count = len(actions)
    except TypeError:
        raise ValueError(f"{method}(): expected a sequence of {num_envs} actions ({per}), received "
                         f"{type(actions).__name__}") from None
    if count != num_envs:
        raise ValueError(f"{method}(): expected {num_envs} actions ({per}), received {count}")
    if isinstance(space, FIXED_SIZE_LEAVES):
        return _fixed_actions(space, actions, num_envs, method)
    if isinstance(space, (spaces.Dict, spaces.Tuple)):
        for i, action in enumerate(actions):
            try:
                check_action(space, action)
            except ValueError as exc:
                raise ValueError(f"{method}(): env {i}: {exc}") from None
    return actions



def check_env_actions(space: spaces.Space, actions: Any, env_ids: np.ndarray, method: str = "send") -> Any:
    """``check_actions`` for the envs ``env_ids`` (one action each); a wrong count names them.

    Example:
        >>> check_env_actions(spaces.Discrete(3), [2], np.array([5]))
        array([2])
        >>> check_env_actions(spaces.Discrete(3), [0, 1], np.array([5]))
        Traceback (most recent call last):
        ValueError: send(): expected 1 actions (one per env of env_ids [5]), received 2
    """
    try:
        return check_actions(space, actions, len(env_ids), method)
    except ValueError:  # checked again for the message, which names env_ids
        pass
    return check_actions(space, actions, len(env_ids), method, per=f"one per env of env_ids {env_ids.tolist()}")

def _split_dict_of_batches(space: spaces.Space, actions: dict, num_envs: int, method: str,
                           per: str) -> list[dict]:
    if not isinstance(space, spaces.Dict):
        raise ValueError(  # the contract: a wrong action is a ValueError
            f"{method}(): received a dict of actions, but the action space {space} is not a Dict "
            f"space; pass one action per env (a sequence of {num_envs})")
    counts = {k: len(v) if hasattr(v, "__len__") else None for k, v in actions.items()}
    if any(c != num_envs for c in counts.values()):
        raise ValueError(f"{method}(): expected {num_envs} actions per key ({per}), received {counts}")
    return [{k: v[i] for k, v in actions.items()} for i in range(num_envs)]


def _fixed_actions(space: spaces.Space, actions: Any, num_envs: int, method: str) -> np.ndarray:
    expected = (num_envs, *(space.shape or ()))  # a fixed leaf always has a shape
    if any(isinstance(a, dict) for a in (actions if isinstance(actions, (list, tuple)) else ())):
        raise ValueError(f"{method}(): received dict actions, but the action space {space} expects arrays: "
                         f"actions of shape {expected}")
    try:
        arr = actions if isinstance(actions, np.ndarray) else np.asarray(actions)
    except ValueError:  # ragged
        arr = np.asarray(actions, dtype=object)
    if arr.shape != expected:
        raise ValueError(f"{method}(): expected actions of shape {expected} for action space {space}, "
                         f"received shape {arr.shape}")
    dtype = np.dtype(space.dtype)
    if arr.dtype == dtype:
        return arr
    if not np.can_cast(arr.dtype, dtype, "same_kind"):
        raise ValueError(f"{method}(): actions of dtype {arr.dtype} cannot be cast safely to the action "
                         f"space's dtype {dtype} ({space})")
    try:
        return cast_exactly(arr, dtype)
    except ValueError as exc:
        raise ValueError(f"{method}(): actions for action space {space}: {exc}") from None
