"""The one walker over nested spaces and observations.

Dict and Tuple spaces nest leaf spaces to any depth, and observations, batches and
buffers nest the same way as dicts and tuples of leaves. ``iter_leaves`` and
``map_leaves`` walk either kind; every module that needs a leaf-by-leaf operation calls
them instead of writing its own recursion.

Example:
    >>> import numpy as np
    >>> space = spaces.Dict({"pos": spaces.Box(-1, 1, (2,)), "cards": spaces.Tuple([spaces.Discrete(3)] * 2)})
    >>> [path_text(path) for path, _ in iter_leaves(space)]     # Dict keys sorted by gymnasium
    ["['cards'][0]", "['cards'][1]", "['pos']"]
    >>> batch = map_leaves(lambda leaf: np.zeros((4, *leaf.shape), leaf.dtype), space)
    >>> batch["pos"].shape, batch["cards"][1].dtype
    ((4, 2), dtype('int64'))
    >>> map_leaves(lambda leaf, row: leaf[row].shape, batch, {"pos": 0, "cards": (1, 2)})
    {'cards': ((), ()), 'pos': (2,)}
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from gymnasium import spaces

__all__ = ["FIXED_SIZE_LEAVES", "is_fixed_size", "iter_leaves", "map_leaves", "path_text"]

#: Leaf spaces whose every value is one NumPy array of one fixed shape and dtype.
FIXED_SIZE_LEAVES = (spaces.Box, spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary)

Path = tuple[Any, ...]  # Dict keys and Tuple positions from the root to a leaf


def _branches(tree: Any, of_spaces: bool, into_lists: bool) -> Iterable[tuple[Any, Any]] | None:
    """``(key, subtree)`` pairs of a Dict / Tuple space (``of_spaces``) or of a dict / tuple
    value (and list, ``into_lists``); None for a leaf."""
    if of_spaces:
        if isinstance(tree, spaces.Dict):
            return tree.spaces.items()
        return enumerate(tree.spaces) if isinstance(tree, spaces.Tuple) else None
    if isinstance(tree, dict):
        return tree.items()
    if isinstance(tree, tuple) or (into_lists and isinstance(tree, list)):
        return enumerate(tree)
    return None


def iter_leaves(tree: Any) -> Iterator[tuple[Path, Any]]:
    """Yield ``(path, leaf)`` for every leaf of a nested space or value, in a fixed order
    (Dict keys as stored). A space is walked through its Dict / Tuple spaces, a value
    through its dicts and tuples (a space inside a value is a leaf)."""
    return _iter(tree, (), isinstance(tree, spaces.Space))


def _iter(tree: Any, path: Path, of_spaces: bool) -> Iterator[tuple[Path, Any]]:
    branches = _branches(tree, of_spaces, False)
    if branches is None:
        yield path, tree
        return
    for key, sub in branches:
        yield from _iter(sub, (*path, key), of_spaces)


def map_leaves(fn: Callable[..., Any], tree: Any, *others: Any, into_lists: bool = False) -> Any:
    """``fn(leaf, *parts)`` for every leaf of ``tree``, nested as ``tree`` is.

    ``tree`` is a space (walked through its Dict / Tuple spaces) or a value (walked
    through its dicts and tuples). ``others`` are values of the same nesting whose
    matching parts go along (a part may be a whole subtree). Dicts and Dict spaces
    become dicts, tuples and Tuple spaces tuples (NamedTuples keep their type); with
    ``into_lists`` lists are walked too, else they are leaves (a batch of a space with
    no fixed size is a list).
    """
    return _map(fn, tree, others, isinstance(tree, spaces.Space), into_lists)


def _map(fn: Callable[..., Any], tree: Any, others: tuple, of_spaces: bool, into_lists: bool) -> Any:
    branches = _branches(tree, of_spaces, into_lists)
    if branches is None:
        return fn(tree, *others)
    mapped = {key: _map(fn, sub, tuple(other[key] for other in others), of_spaces, into_lists)
              for key, sub in branches}
    if isinstance(tree, (dict, spaces.Dict)):
        return mapped
    if isinstance(tree, list):
        return list(mapped.values())
    if hasattr(tree, "_fields"):  # a NamedTuple
        return type(tree)(*mapped.values())
    return tuple(mapped.values())


def is_fixed_size(space: spaces.Space) -> bool:
    """True when every observation of ``space`` fits one fixed-shape NumPy array per leaf."""
    return all(isinstance(leaf, FIXED_SIZE_LEAVES) for _, leaf in iter_leaves(space))


def path_text(path: Path) -> str:
    """A leaf's path as it indexes the observation, e.g. ``['pos'][0]``."""
    return "".join(f"[{key!r}]" for key in path)
