"""Checks of the arguments users pass to a VecEnv: env factories, indices, seeds, timeouts, ints.

Each check returns the argument in its one canonical form or raises an error that names
the method, what was received and what was expected; every backend and wrapper goes
through these, so the same mistake gets the same answer everywhere.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode

__all__ = ["backend_kwargs", "check_batch_size", "check_env_fns", "check_int", "check_timeout",
           "resolve_autoreset_mode", "resolve_index", "resolve_indices", "resolve_options", "resolve_seeds"]

INDICES_EXPECTED = "None, an int, a sequence of ints or a boolean mask of {n}"
ENV_FNS_EXPECTED = "a list of zero-argument env factories, one per env (e.g. [make_env] * 8)"


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def check_int(name: str, value: Any, minimum: int = 1, alternatives: str = "") -> int:
    """``value`` as an int if it is one (NumPy integers too, bools not) and ``>= minimum``.

    Args:
        name: the parameter, as the message names it (e.g. "VecFrameStack: n_stack").
        value: what the caller passed.
        minimum: the smallest value allowed.
        alternatives: other accepted values, for the message (e.g. "or 'auto'").

    Raises:
        ValueError: naming the parameter, what is expected and what was received.

    Example:
        >>> check_int("VecFrameStack: n_stack", 4)
        4
        >>> check_int("make_vec_env(): n_envs", 0)
        Traceback (most recent call last):
        ...
        ValueError: make_vec_env(): n_envs must be an int >= 1, received 0
    """
    if not _is_int(value) or value < minimum:
        expected = f"an int >= {minimum}" + (f" {alternatives}" if alternatives else "")
        raise ValueError(f"{name} must be {expected}, received {value!r}")
    return int(value)


def _is_bool(value: Any) -> bool:
    return isinstance(value, (bool, np.bool_))


def resolve_indices(indices: Any, num_envs: int, method: str) -> list[int]:
    """The env indices named by ``indices``, as a list of ints in ``0..num_envs - 1``.

    ``None`` means every env; an int (negative counts from the end) one env; a sequence
    of ints those envs in that order; a sequence or array of ``num_envs`` bools the envs
    where it is True.

    Example:
        >>> resolve_indices([True, False, True, False], 4, "get_attr")
        [0, 2]
        >>> resolve_indices(-1, 4, "get_attr")
        [3]
        >>> resolve_indices(1.0, 4, "get_attr")
        Traceback (most recent call last):
        TypeError: get_attr(): indices must be None, an int, ... of 4, received 1.0 (float)
    """
    if indices is None:
        return list(range(num_envs))
    expected = INDICES_EXPECTED.format(n=num_envs)
    if _is_int(indices):
        seq: list[Any] = [indices]
    elif isinstance(indices, (str, bytes, dict, set, slice)) or _is_bool(indices) or not hasattr(indices, "__len__"):
        raise TypeError(f"{method}(): indices must be {expected}, received {indices!r} ({type(indices).__name__})")
    else:
        seq = list(indices.ravel() if isinstance(indices, np.ndarray) else indices)
    if seq and all(_is_bool(i) for i in seq):
        if len(seq) != num_envs:
            raise ValueError(f"{method}(): a boolean mask of indices needs {num_envs} entries (one per env), "
                             f"received {len(seq)}")
        return [i for i, chosen in enumerate(seq) if chosen]
    for i in seq:
        if not _is_int(i):
            raise TypeError(f"{method}(): indices must be {expected}, received the entry {i!r} "
                            f"({type(i).__name__}) in {indices!r}")
        if not -num_envs <= i < num_envs:
            raise IndexError(f"{method}(): env index {i!r} is out of range for {num_envs} envs "
                             f"(valid: 0..{num_envs - 1})")
    return [int(i) % num_envs for i in seq]


def resolve_index(index: Any, num_envs: int, method: str) -> int:
    """One env index (an int; negative counts from the end) as an int in ``0..num_envs - 1``.

    Example:
        >>> resolve_index(-1, 4, "reset_single_env")
        3
    """
    if not _is_int(index):
        raise TypeError(f"{method}(): expected one env index (an int), received {index!r} ({type(index).__name__})")
    return resolve_indices(index, num_envs, method)[0]


def _check_seed(value: Any, what: str, method: str = "seed") -> int:
    if not _is_int(value):
        raise TypeError(f"{method}(): {what} must be an int >= 0 or None, received {value!r} "
                        f"({type(value).__name__})")
    if value < 0:
        raise ValueError(f"{method}(): {what} must be an int >= 0 or None, received {value!r}")
    return int(value)


def resolve_seeds(seed: Any, num_envs: int, method: str = "seed", per: str = "one per env") -> list[int | None]:
    """One seed per env: ``seed + i`` for an int, the entries of a sequence of ``num_envs``.
    ``method`` names the call in the messages, ``per`` whose seeds they are.

    Example:
        >>> resolve_seeds(7, 3)
        [7, 8, 9]
        >>> resolve_seeds(1.5, 3)
        Traceback (most recent call last):
        TypeError: seed(): seed must be an int >= 0 or None, received 1.5 (float)
        >>> resolve_seeds([1, 2], 3, "reset_envs", "one per env named")
        Traceback (most recent call last):
        ValueError: reset_envs(): expected 3 seeds (one per env named), received 2
    """
    if seed is None:
        seed = int(np.random.SeedSequence().generate_state(1)[0])
    if _is_int(seed) or _is_bool(seed) or not hasattr(seed, "__len__") or isinstance(seed, (str, bytes)):
        base = _check_seed(seed, "seed", method)
        return [base + i for i in range(num_envs)]
    seeds = [None if s is None else _check_seed(s, f"seed[{j}]", method) for j, s in enumerate(seed)]
    if len(seeds) != num_envs:
        raise ValueError(f"{method}(): expected {num_envs} seeds ({per}), received {len(seeds)}")
    return seeds


def resolve_options(options: Any, num_envs: int, method: str = "set_options") -> list[dict[str, Any]]:
    """One reset-options dict per env: ``options`` for each (a copy), or the entries of a
    list of ``num_envs`` dicts; None means ``{}`` (no options). ``method`` names the call
    in the messages.

    Example:
        >>> resolve_options({"level": 2}, 2)
        [{'level': 2}, {'level': 2}]
        >>> resolve_options([{}, {"level": 3}], 2)
        [{}, {'level': 3}]
        >>> resolve_options([{}], 2)
        Traceback (most recent call last):
        ValueError: set_options(): expected a dict for every env or a list of 2 (one per env), received a list of 1
    """
    if options is None or isinstance(options, dict):
        return [dict(options or {}) for _ in range(num_envs)]
    if not isinstance(options, (list, tuple)):
        raise TypeError(f"{method}(): expected a dict (for every env), a list of {num_envs} dicts or None, "
                        f"received {options!r} ({type(options).__name__})")
    if len(options) != num_envs:
        raise ValueError(f"{method}(): expected a dict for every env or a list of {num_envs} (one per env), "
                         f"received a {type(options).__name__} of {len(options)}")
    for i, entry in enumerate(options):
        if not (entry is None or isinstance(entry, dict)):
            raise TypeError(f"{method}(): env {i}'s options must be a dict or None, received {entry!r} "
                            f"({type(entry).__name__})")
    return [dict(entry or {}) for entry in options]


#: the names ``autoreset_mode`` takes, besides gymnasium's ``AutoresetMode`` members and their values
AUTORESET_MODES = {"same_step": AutoresetMode.SAME_STEP, "next_step": AutoresetMode.NEXT_STEP,
                   "disabled": AutoresetMode.DISABLED}


def resolve_autoreset_mode(value: Any, where: str) -> AutoresetMode:
    """``value`` as gymnasium's ``AutoresetMode``: ``"same_step"``, ``"next_step"``,
    ``"disabled"``, a member of ``AutoresetMode`` or its value (``"NextStep"``...).

    Example:
        >>> resolve_autoreset_mode("next_step", "DummyVecEnv")
        <AutoresetMode.NEXT_STEP: 'NextStep'>
        >>> resolve_autoreset_mode("SameStep", "DummyVecEnv")
        <AutoresetMode.SAME_STEP: 'SameStep'>
        >>> resolve_autoreset_mode("next", "DummyVecEnv")
        Traceback (most recent call last):
        ValueError: DummyVecEnv: autoreset_mode must be 'same_step', 'next_step' or 'disabled' ...
    """
    if isinstance(value, AutoresetMode):
        return value
    if isinstance(value, str):
        if value in AUTORESET_MODES:
            return AUTORESET_MODES[value]
        if value in AutoresetMode._value2member_map_:
            return AutoresetMode(value)
    raise ValueError(f"{where}: autoreset_mode must be 'same_step', 'next_step' or 'disabled' (or gymnasium's "
                     f"AutoresetMode.SAME_STEP / NEXT_STEP / DISABLED), received {value!r}")


def backend_kwargs(vec_env_kwargs: dict[str, Any] | None, autoreset_mode: Any, where: str) -> dict[str, Any]:
    """The backend's keyword arguments with ``autoreset_mode`` among them (when not None).

    Example:
        >>> backend_kwargs({"in_series": 2}, "next_step", "make_vec_env()")
        {'in_series': 2, 'autoreset_mode': 'next_step'}
        >>> backend_kwargs({"autoreset_mode": "disabled"}, "next_step", "make_vec_env()")
        Traceback (most recent call last):
        ValueError: make_vec_env(): autoreset_mode='next_step' and vec_env_kwargs={'autoreset_mode': 'disabled'} ...
    """
    kwargs = dict(vec_env_kwargs or {})
    if autoreset_mode is None:
        return kwargs
    if "autoreset_mode" in kwargs:
        raise ValueError(f"{where}: autoreset_mode={autoreset_mode!r} and vec_env_kwargs="
                         f"{{'autoreset_mode': {kwargs['autoreset_mode']!r}}} both set the mode; give it once")
    kwargs["autoreset_mode"] = autoreset_mode
    return kwargs


def check_batch_size(batch_size: Any, num_envs: int, cls: str) -> int:
    """``batch_size`` as an int (None: ``num_envs``); a ValueError for anything else.

    Example:
        >>> check_batch_size(None, 8, "DummyVecEnv"), check_batch_size(2, 8, "DummyVecEnv")
        (8, 2)
    """
    if batch_size is None:
        return num_envs
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) \
            or not 1 <= batch_size <= num_envs:
        raise ValueError(f"{cls}: batch_size must be an int in 1..{num_envs} (num_envs) or None, "
                         f"received {batch_size!r}")
    return int(batch_size)


def check_timeout(timeout: Any, name: str = "timeout") -> float | None:
    """``timeout`` as seconds (a number >= 0; 0 means "don't wait"), or None for no limit.

    Example:
        >>> check_timeout(0), check_timeout(None), check_timeout(2)
        (0.0, None, 2.0)
        >>> check_timeout("5")
        Traceback (most recent call last):
        TypeError: timeout must be a number of seconds >= 0 or None (no limit), received '5' (str)
    """
    if timeout is None:
        return None
    if _is_bool(timeout) or not isinstance(timeout, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a number of seconds >= 0 or None (no limit), "
                        f"received {timeout!r} ({type(timeout).__name__})")
    if math.isnan(timeout) or timeout < 0:
        raise ValueError(f"{name} must be a number of seconds >= 0 or None (no limit), received {timeout!r}")
    return None if math.isinf(timeout) else float(timeout)


def check_env_fns(env_fns: Any, cls_name: str, picklable: bool) -> list[Any]:
    """``env_fns`` as a list of factories, checked before any env or worker is made.

    Refused: an empty list, a single factory (not in a list), an entry that is not
    callable (an env instance, say), and with ``picklable`` (backends that ship the
    factories to other processes) a factory cloudpickle cannot pickle, named by its index.

    Example:
        >>> fns = check_env_fns([dict, dict], "DummyVecEnv", picklable=True)
        >>> len(fns)
        2
        >>> check_env_fns([], "SubprocVecEnv", picklable=True)
        Traceback (most recent call last):
        ValueError: SubprocVecEnv: env_fns is empty; expected a list of zero-argument env factories, ...
    """
    if callable(env_fns) or isinstance(env_fns, (str, bytes, dict)) or not isinstance(env_fns, Sequence):
        hint = " (a single factory: wrap it in a list, [make_env] * n)" if callable(env_fns) else ""
        raise TypeError(f"{cls_name}: env_fns must be {ENV_FNS_EXPECTED}, received {env_fns!r} "
                        f"({type(env_fns).__name__}){hint}")
    if len(env_fns) == 0:
        raise ValueError(f"{cls_name}: env_fns is empty; expected {ENV_FNS_EXPECTED}")
    for i, fn in enumerate(env_fns):
        if not callable(fn):
            raise TypeError(f"{cls_name}: env_fns[{i}] is a {type(fn).__name__}, not a factory; expected "
                            f"{ENV_FNS_EXPECTED}: pass the function that builds the env (e.g. "
                            f"lambda: gym.make(...)), not the env itself")
    if picklable:
        _check_picklable(env_fns, cls_name)
    return list(env_fns)


def _check_picklable(env_fns: Sequence[Any], cls_name: str) -> None:
    """Each distinct factory through cloudpickle, as the workers will receive it."""
    import cloudpickle

    seen: set[int] = set()
    for i, fn in enumerate(env_fns):
        if id(fn) in seen:
            continue
        seen.add(id(fn))
        try:
            cloudpickle.dumps(fn)
        except Exception as exc:
            raise TypeError(f"{cls_name}: env_fns[{i}] ({fn!r}) cannot be pickled to send it to a worker: "
                            f"{type(exc).__name__}: {exc}. Build what it captures (locks, open files, "
                            f"envs) inside the factory, or use DummyVecEnv") from exc
