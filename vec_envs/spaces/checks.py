"""Values checked against a space: casts that lose nothing, nested action structures and
the range of discrete actions.

Every backend stores observations and actions through these checks, so a value the
space's dtype cannot hold (``300`` or ``-1`` for ``uint8``, ``1.5`` for an integer
space, ``1+2j`` for a real one) or an action shaped unlike its space is an error, never
a silent wrap-around. A discrete action out of its space's range (``5`` for
``Discrete(2)``, ``-1`` for ``MultiBinary``) is refused in the caller's process, before
any env steps, naming the env; Box actions are checked for shape and dtype only (their
bounds are the env's or a wrapper's to enforce).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from gymnasium import spaces

from vec_envs.spaces.nested import FIXED_SIZE_LEAVES, iter_leaves, map_leaves, path_text

__all__ = ["cast_exactly", "check_action", "check_actions", "check_env_actions", "env_owner", "with_placeholders"]

#: names the owner of the action at a place of the batch, for the messages ("env 3")
Owner = Callable[[int], str]
#: the actions nobody reads (a bool each), or a function returning them, or None
Ignored = np.ndarray | Callable[[], np.ndarray | None] | None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) < 80 else text[:77] + "..."


def _lost(arr: np.ndarray, cast: np.ndarray) -> np.ndarray:
    """Elements of ``arr`` whose value ``cast`` does not hold (True where lost)."""
    if arr.dtype.kind == "c" and cast.dtype.kind != "c":  # a real dtype holds no imaginary part
        return (arr.imag != 0) | _lost(arr.real, cast)
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
    rounding, complex ``3+0j`` -> float32) passes; a value out of range, a fraction for
    an integer dtype, NaN for an integer dtype, an imaginary part for a real dtype, or
    text raise, naming the value and the dtype.

    Example:
        >>> cast_exactly([3, 255], np.dtype(np.uint8))
        array([  3, 255], dtype=uint8)
        >>> cast_exactly([300, -1], np.dtype(np.uint8))
        Traceback (most recent call last):
        ValueError: value 300 does not fit dtype uint8 (values [300, -1])
        >>> cast_exactly([1 + 2j, 3], np.dtype(np.float32))
        Traceback (most recent call last):
        ValueError: value (1+2j) does not fit dtype float32 (values [(1+2j), (3+0j)])
    """
    arr = value if isinstance(value, np.ndarray) else np.asarray(value)
    if arr.dtype == dtype:
        return arr
    if arr.dtype.kind not in "biufc":
        raise ValueError(f"value {_short(value)} of dtype {arr.dtype} cannot be stored as dtype {dtype}")
    if np.can_cast(arr.dtype, dtype, "safe"):
        return arr.astype(dtype)
    with np.errstate(invalid="ignore", over="ignore"):
        cast = (arr.real if arr.dtype.kind == "c" and dtype.kind != "c" else arr).astype(dtype)
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
    arr = action if isinstance(action, np.ndarray) else np.asarray(action)
    dtype = np.dtype(space.dtype)
    if arr.dtype != dtype and not np.can_cast(arr.dtype, dtype, "same_kind"):
        raise ValueError(f"action{path_text(path)} {_short(action)} of dtype {arr.dtype} cannot be cast safely "
                         f"to the action space's dtype {dtype} ({space})")
    try:
        arr = cast_exactly(arr, dtype)
    except ValueError as exc:
        raise ValueError(f"action{path_text(path)} for action space {space}: {exc}") from None
    if _outside(space, arr[None]) is not None:
        raise ValueError(f"action{path_text(path)} {_short(action)} is outside the action space {space} "
                         f"(expected {_range_text(space)})")


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


def env_owner(index: int) -> str:
    """Who acts at place ``index`` of a batch of one action per env: ``"env 3"``."""
    return f"env {index}"


def check_actions(space: spaces.Space, actions: Any, num_envs: int, method: str = "step_async",
                  per: str = "one per env", owner: Owner = env_owner, ignored: Ignored = None) -> Any:
    """One action per env, checked against ``space``, in the form backends step with.

    Fixed-size spaces give one array ``(num_envs, *shape)`` in the space's dtype (a
    value that dtype cannot hold, or a float for an integer space, is refused), and a
    discrete action (``Discrete`` with its ``start``, ``MultiDiscrete``, ``MultiBinary``)
    outside the space's range is refused naming its ``owner(j)`` (``"env j"``), unless
    ``ignored[j]`` (an action nobody reads: its range is not checked; ``ignored`` may be a
    function returning it, called only when an action is out of range). A Dict space takes
    a list of per-env dicts or one dict of batches (split per env); every per-env action
    of a Dict / Tuple space must match its structure, dtypes and ranges
    (``check_action``). Errors are ``ValueError`` naming the method, what came and what
    was expected (``per`` says whose actions they are, for the message).

    Example:
        >>> check_actions(spaces.Discrete(3), [0, 2], num_envs=2)
        array([0, 2])
        >>> check_actions(spaces.Discrete(3), [0, 5], num_envs=2)
        Traceback (most recent call last):
        ValueError: step_async(): action 5 for env 1 is outside the action space Discrete(3) (expected an int ...)
        >>> check_actions(spaces.Discrete(3), {"a": [0, 1]}, num_envs=2)
        Traceback (most recent call last):
        ValueError: step_async(): received a dict of actions, but the action space Discrete(3) is not a Dict ...
    """
    if _in_range(space, actions, num_envs):
        return actions
    arr = _as_batch(space, actions, num_envs, method, per, owner)
    _check_range(space, arr, method, owner, ignored)
    return arr


def _in_range(space: spaces.Space, actions: Any, num_envs: int) -> bool:
    """Are ``actions`` the usual batch, checked in one look: an array of the space's dtype and
    shape, of a Box, or of a Discrete from 0 in int64 with every action in range?"""
    if type(actions) is not np.ndarray or actions.dtype != space.dtype or space.shape is None \
            or actions.shape != (num_envs, *space.shape):
        return False
    if type(space) is spaces.Box:
        return True
    return type(space) is spaces.Discrete and actions.dtype == np.int64 and int(space.start) == 0 \
        and num_envs > 0 and int(actions.view(np.uint64).max()) < int(space.n)  # a negative wraps to the top


def _as_batch(space: spaces.Space, actions: Any, num_envs: int, method: str, per: str, owner: Owner) -> Any:
    """``actions`` as one array (fixed-size spaces) or a list of checked per-env actions."""
    if type(actions) is np.ndarray and actions.dtype == space.dtype and space.shape is not None \
            and actions.ndim == len(space.shape) + 1 and actions.shape[1:] == space.shape \
            and len(actions) == num_envs:
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
                raise ValueError(f"{method}(): {owner(i)}: {exc}") from None
    return actions


def _check_range(space: spaces.Space, arr: Any, method: str, owner: Owner, ignored: Ignored) -> None:
    """ValueError naming the first action of the batch ``arr`` outside a discrete space's
    range whose place is not ``ignored``."""
    if not isinstance(space, FIXED_SIZE_LEAVES):
        return  # Dict / Tuple: checked per env, leaf by leaf
    outside = _outside(space, arr)
    if outside is None:
        return
    if callable(ignored):
        ignored = ignored()
    if ignored is not None:
        outside = outside & ~ignored
    if outside.any():
        j = int(np.flatnonzero(outside)[0])
        raise ValueError(f"{method}(): action {_short(arr[j].tolist())} for {owner(j)} is outside the action "
                         f"space {space} (expected {_range_text(space)})")


def check_env_actions(space: spaces.Space, actions: Any, env_ids: np.ndarray, method: str = "send",
                      owner: Owner = env_owner, ignored: Ignored = None) -> Any:
    """``check_actions`` for the envs ``env_ids`` (one action each); a wrong count names them,
    an action out of range names its env (``owner(env_ids[j])``).

    Example:
        >>> check_env_actions(spaces.Discrete(3), [2], np.array([5]))
        array([2])
        >>> check_env_actions(spaces.Discrete(3), [0, 1], np.array([5]))
        Traceback (most recent call last):
        ValueError: send(): expected 1 actions (one per env of env_ids [5]), received 2
        >>> check_env_actions(spaces.Discrete(3), [3], np.array([5]))
        Traceback (most recent call last):
        ValueError: send(): action 3 for env 5 is outside the action space Discrete(3) (expected an int from 0 to 2)
    """
    if _in_range(space, actions, len(env_ids)):
        return actions

    def owner_of(j: int) -> str:
        return owner(int(env_ids[j]))

    try:
        arr = _as_batch(space, actions, len(env_ids), method, "one per env", owner_of)
    except ValueError:  # checked again for the message, which names env_ids
        per = f"one per env of env_ids {env_ids.tolist()}"
        arr = _as_batch(space, actions, len(env_ids), method, per, owner_of)
    _check_range(space, arr, method, owner_of, ignored)
    return arr


def _outside(space: spaces.Space, arr: np.ndarray) -> np.ndarray | None:
    """Where ``arr`` (a batch of actions in the space's dtype) leaves a discrete space's
    range: a bool per action; None when every action is inside (and for Box spaces)."""
    if not arr.size:
        return None
    if isinstance(space, spaces.Discrete):  # any integer dtype: shifted to 0 in int64, negatives wrap to the top
        n = int(space.n)
        wide = arr.astype(np.int64, copy=False)
        unsigned = (wide if space.start == 0 else wide - np.int64(space.start)).view(np.uint64)
        return None if unsigned.max() < n else unsigned >= n
    if isinstance(space, spaces.MultiBinary):
        unsigned = arr.view(np.dtype(f"u{arr.dtype.itemsize}")) if arr.dtype.kind == "i" else arr
        return None if unsigned.max() <= 1 else _per_action(unsigned > 1)
    if isinstance(space, spaces.MultiDiscrete):
        outside = (arr < space.start) | (arr > space.start + (space.nvec - 1))
        return _per_action(outside) if outside.any() else None
    return None


def _per_action(outside: np.ndarray) -> np.ndarray:
    """A bool per action (first axis) from a bool per value."""
    return np.any(outside.reshape(len(outside), -1), axis=1)


def _range_text(space: spaces.Space) -> str:
    if isinstance(space, spaces.Discrete):
        return f"an int from {space.start} to {space.start + space.n - 1}"
    if isinstance(space, spaces.MultiDiscrete):
        return f"values from {space.start.tolist()} to {(space.start + space.nvec - 1).tolist()}"
    return "0s and 1s"


def with_placeholders(space: spaces.Space, actions: np.ndarray, ignored: np.ndarray) -> np.ndarray:
    """``actions`` with those at ``ignored`` set to the space's first action (its ``start``,
    0 for MultiBinary) when a discrete one is out of range: a copy, valid for any check
    after this one; ``actions`` itself when nothing had to change.

    Example:
        >>> with_placeholders(spaces.Discrete(3, start=1), np.array([-1, 2]), np.array([True, False]))
        array([1, 2])
    """
    outside = _outside(space, actions)
    if outside is None or not (outside & ignored).any():
        return actions
    fixed = actions.copy()
    fixed[outside & ignored] = getattr(space, "start", 0)
    return fixed


def _split_dict_of_batches(space: spaces.Space, actions: dict, num_envs: int, method: str,
                           per: str) -> list[dict]:
    if not isinstance(space, spaces.Dict):
        raise ValueError(  # the contract: a wrong action is a ValueError
            f"{method}(): received a dict of actions, but the action space {space} is not a Dict "
            f"space; pass one action per env (a sequence of {num_envs})")
    counts = {k: _batch_count(space.spaces.get(k), v) for k, v in actions.items()}
    if any(c != num_envs for c in counts.values()):
        raise ValueError(f"{method}(): expected {num_envs} actions per key ({per}), received {counts}")
    return [{k: _row(space.spaces.get(k), v, i) for k, v in actions.items()} for i in range(num_envs)]


def _row(space: spaces.Space | None, batch: Any, i: int) -> Any:
    """Action ``i`` of ``batch``, a batch of ``space`` (None: a key the space lacks, which
    ``check_action`` refuses by name)."""
    if space is None:
        return batch[i]
    return map_leaves(lambda _, part: part[i], space, batch)


def _batch_count(space: spaces.Space | None, batch: Any) -> int | None:
    """How many actions ``batch``, a batch of ``space`` as gymnasium batches it (a Dict or
    Tuple space's batch is a dict or tuple of batches), holds: the length its leaves
    share; None when they differ, a leaf has no length or the nesting is not the space's."""
    if space is None:
        return len(batch) if hasattr(batch, "__len__") else None
    try:
        counts = map_leaves(lambda _, part: len(part), space, batch)
    except (KeyError, IndexError, TypeError):
        return None
    lengths = {count for _, count in iter_leaves(counts)}
    return lengths.pop() if len(lengths) == 1 else None


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
        hint = f"; reshape them: actions.reshape{expected}" if arr.size == np.prod(expected) else ""
        raise ValueError(f"{method}(): expected actions of shape {expected} for action space {space}, "
                         f"received shape {arr.shape}{hint}")
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
