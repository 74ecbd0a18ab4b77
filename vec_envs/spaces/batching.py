"""Batch buffers for gymnasium spaces: one NumPy array per leaf, shaped (num_envs, *shape).

Box, Discrete, MultiDiscrete and MultiBinary are leaves; Dict and Tuple nest them to any
depth. A space with no fixed size (Text, Graph, Sequence, ...) is batched as a plain list.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium import spaces

from vec_envs.spaces.checks import cast_exactly
from vec_envs.spaces.nested import FIXED_SIZE_LEAVES, is_fixed_size, iter_leaves, map_leaves, path_text
from vec_envs.types import VecEnvObs

__all__ = [
    "BatchBuffers",
    "ObservationError",
    "is_fixed_size",  # defined in nested.py, re-exported for the importers of this module
    "iter_leaves",  # idem
    "batch_of_one",
    "create_batch",
    "make_writer",
    "get_row",
    "copy_obs",
    "slice_batch",
    "take_rows",
    "write_rows",
    "copy_row",
]


class ObservationError(ValueError):
    """An observation that does not fit its space (shape, structure, or a value its dtype cannot hold)."""


Allocate = Callable[[tuple, np.dtype], np.ndarray]


def leaf_shape(space: spaces.Space) -> tuple[int, ...]:
    """The shape of a fixed-size leaf space (Box, Discrete, MultiDiscrete, MultiBinary)."""
    if space.shape is None:
        raise ValueError(f"{space} has no fixed shape: it is not a fixed-size leaf space")
    return space.shape


def create_batch(space: spaces.Space, n: int, allocate: Allocate | None = None) -> VecEnvObs:
    """Buffers for ``n`` observations of ``space``; ``allocate(shape, dtype)`` makes each leaf."""
    alloc = allocate or (lambda shape, dtype: np.zeros(shape, dtype))

    def leaf_batch(leaf: spaces.Space) -> Any:
        if isinstance(leaf, FIXED_SIZE_LEAVES):
            return alloc((n, *leaf_shape(leaf)), np.dtype(leaf.dtype))
        return [None] * n
    return map_leaves(leaf_batch, space)


def _leaf_writer(space: spaces.Space, batch: Any, path: tuple) -> Callable[[int, Any], None]:
    if not isinstance(space, FIXED_SIZE_LEAVES):
        def write_any(i: int, obs: Any) -> None:
            batch[i] = obs
        return write_any
    shape, dtype = leaf_shape(space), np.dtype(space.dtype)

    def write(i: int, obs: Any) -> None:
        if type(obs) is np.ndarray and obs.shape == shape and (obs.dtype is dtype or obs.dtype == dtype):
            batch[i] = obs  # the usual case: nothing to check or cast
            return
        got = _shape(obs)
        if got != shape:
            raise ObservationError(
                f"observation{path_text(path)} has shape {got}, but the observation "
                f"space {space} expects shape {shape}"
            )
        try:
            batch[i] = cast_exactly(obs, dtype)
        except ValueError as exc:
            raise ObservationError(f"observation{path_text(path)}: {exc} (observation space {space})") from None
    return write


def _shape(obs: Any) -> tuple | None:
    if isinstance(obs, np.ndarray):
        return obs.shape
    try:
        return np.shape(obs)
    except ValueError:  # ragged nested lists
        return None


def _container_writer(space: spaces.Dict | spaces.Tuple, batch: Any, path: tuple) -> Callable[[int, Any], None]:
    subspaces = dict(space.spaces) if isinstance(space, spaces.Dict) else dict(enumerate(space.spaces))
    keys = list(subspaces)
    writers = [make_writer(sub, batch[k], path + (k,)) for k, sub in subspaces.items()]
    kind = "dict" if isinstance(space, spaces.Dict) else "tuple"

    def write(i: int, obs: Any) -> None:
        try:
            parts = [obs[k] for k in keys]
        except (KeyError, IndexError, TypeError):
            raise ObservationError(
                f"observation{path_text(path)} is {type(obs).__name__} {_short(obs)}, but the "
                f"observation space expects a {kind} with keys {keys}"
            ) from None
        for writer, part in zip(writers, parts):
            writer(i, part)
    return write


def _short(obs: Any) -> str:
    text = repr(obs)
    return text if len(text) < 80 else text[:77] + "..."


def make_writer(space: spaces.Space, batch: Any, path: tuple = ()) -> Callable[[int, Any], None]:
    """Return ``write(i, obs)`` storing one env's observation in row ``i`` of ``batch``.

    The observation's shape is checked against the space (a wrong shape raises
    ``ValueError`` naming both shapes, never a silent broadcast); the dtype is cast to
    the space's, and a value that dtype cannot hold (300 for uint8) raises ``ValueError``
    naming the value and the dtype, never wraps around.
    """
    if isinstance(space, (spaces.Dict, spaces.Tuple)):
        return _container_writer(space, batch, path)
    return _leaf_writer(space, batch, path)


def get_row(batch: VecEnvObs, i: int) -> Any:
    """The observation of env ``i`` (views into ``batch`` for array leaves)."""
    if type(batch) is np.ndarray:
        return batch[i]  # the usual case: one leaf
    return map_leaves(lambda leaf: leaf[i], batch)


def copy_obs(obs: Any) -> Any:
    """A copy of a (batched or single) observation: ``np.copy`` per array leaf."""
    if type(obs) is np.ndarray:
        return obs.copy()  # the usual case: one leaf
    return map_leaves(lambda leaf: leaf.copy() if isinstance(leaf, (np.ndarray, list)) else leaf, obs)


def slice_batch(batch: VecEnvObs, start: int, stop: int) -> VecEnvObs:
    """Rows ``start:stop`` of every leaf (views for arrays)."""
    return map_leaves(lambda leaf: leaf[start:stop], batch)


def take_rows(batch: VecEnvObs, indices: np.ndarray) -> VecEnvObs:
    """Rows ``indices`` of every leaf, in that order (copies; a list for list leaves)."""
    if type(batch) is np.ndarray:  # the usual case: one leaf
        return batch[indices]
    return map_leaves(lambda leaf: [leaf[i] for i in indices] if isinstance(leaf, list) else leaf[indices], batch)


def write_rows(batch: VecEnvObs, start: int, rows: Any) -> None:
    """Copy the batch ``rows`` (shaped as ``batch``) into ``batch`` from row ``start`` on, leaf by leaf."""
    def write(leaf: Any, part: Any) -> None:
        leaf[start:start + len(part)] = part
    map_leaves(write, batch, rows)


def copy_row(dst: VecEnvObs, src: VecEnvObs, i: int) -> None:
    """Copy row ``i`` of the batch ``src`` into row ``i`` of ``dst`` (shaped alike), leaf by leaf."""
    if isinstance(dst, np.ndarray) and isinstance(src, np.ndarray):
        dst[i] = src[i]  # the usual case: one leaf
        return

    def copy(leaf: Any, part: Any) -> None:
        leaf[i] = part[i]
    map_leaves(copy, dst, src)


def batch_of_one(obs: Any) -> Any:
    """A batch holding the one observation ``obs`` (each leaf gains a leading axis of 1)."""
    return map_leaves(lambda leaf: np.asarray(leaf)[None], obs)


@dataclass
class BatchBuffers:
    """Where a batch of envs writes its step results: observations, rewards, dones and,
    when laid out, the terminal rows: the last observation of each env whose episode
    ended (``terminal_obs``) and whether a time limit ended it (``time_limit_truncated``).

    Terminal rows are laid out in shared memory only, so that an episode's end need not
    travel through a pipe (``EnvSlice`` writes them, ``with_terminal`` reads them).
    """

    obs: VecEnvObs
    rewards: np.ndarray
    dones: np.ndarray
    terminal_obs: VecEnvObs | None = None
    time_limit_truncated: np.ndarray | None = None

    @classmethod
    def allocate(cls, space: spaces.Space, n: int, allocate: Allocate | None = None,
                 terminal: bool = False) -> BatchBuffers:
        """Fresh buffers for ``n`` envs (``allocate(shape, dtype)`` makes each array), with
        terminal rows if ``terminal``."""
        alloc = allocate or (lambda shape, dtype: np.zeros(shape, dtype))
        buffers = cls(create_batch(space, n, alloc), alloc((n,), np.dtype(np.float32)),
                      alloc((n,), np.dtype(np.bool_)))
        if terminal:
            buffers.terminal_obs = create_batch(space, n, alloc)
            buffers.time_limit_truncated = alloc((n,), np.dtype(np.bool_))
        return buffers

    def view(self, start: int, stop: int) -> BatchBuffers:
        """The buffers of envs ``start:stop`` (views into these)."""
        terminal = self.terminal_obs
        return BatchBuffers(slice_batch(self.obs, start, stop), self.rewards[start:stop], self.dones[start:stop],
                            None if terminal is None else slice_batch(terminal, start, stop),
                            None if self.time_limit_truncated is None else self.time_limit_truncated[start:stop])
