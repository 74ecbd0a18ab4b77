"""StackedObservations: the last ``n_stack`` observations of every env, along the channels."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from gymnasium import spaces

from vec_envs.spaces.describe import is_image_space

__all__ = ["StackedObservations", "ChannelsOrder", "is_channels_first"]

#: "first", "last", None (infer from the space) or, for a Dict space, one of those per key.
ChannelsOrder = str | None | Mapping[str, str | None]
CHANNELS_ORDERS = ("first", "last")
BAD_CHANNELS_ORDER = "channels_order{where} must be None, 'first' or 'last', received {value!r}"
UNSTACKABLE = ("frame stacking needs a Box observation space of rank >= 1 (or a Dict of them); "
               "observation{where} is {space}")


def is_channels_first(space: spaces.Box, channels_order: str | None = None, where: str = "") -> bool:
    """Whether the channel axis of ``space`` is its first axis.

    ``None`` infers it like SB3: an image space whose smallest dimension is the first
    is channels-first (CHW); everything else is channels-last (HWC, or a flat vector).
    """
    if channels_order is None:
        return is_image_space(space) and int(np.argmin(space.shape)) == 0
    if channels_order not in CHANNELS_ORDERS:
        raise ValueError(BAD_CHANNELS_ORDER.format(where=where, value=channels_order))
    return channels_order == "first"


def _axis_index(ndim: int, axis: int, part: slice) -> tuple:
    index = [slice(None)] * ndim
    index[axis] = part
    return tuple(index)


class StackedObservations:
    """A rolling history of observations, stacked along the channel axis.

    The stacked observation of one env is its last ``n_stack`` observations
    concatenated along the channel axis, oldest first (an RGB frame contributes its 3
    channels as one block). The history is shifted in place; an env whose episode ended
    starts again from zeros; its terminal observation is stacked with the history of
    the episode it ends. Dict spaces get one history per key.

    Args:
        num_envs: number of envs.
        n_stack: number of observations stacked.
        observation_space: the space of one env's observation (Box, or Dict of Box).
        channels_order: "first", "last", None (infer), or a dict of those per key.

    Example:
        >>> stack = StackedObservations(2, 4, spaces.Box(0, 255, (84, 84, 1), np.uint8))
        >>> stack.reset(np.zeros((2, 84, 84, 1), np.uint8)).shape
        (2, 84, 84, 4)
    """

    def __init__(self, num_envs: int, n_stack: int, observation_space: spaces.Space,
                 channels_order: ChannelsOrder = None, where: str = "") -> None:
        self.num_envs, self.n_stack = num_envs, n_stack
        self.sub: dict[str, StackedObservations] | None = None
        self.stacked_observation_space: spaces.Dict | spaces.Box
        if isinstance(observation_space, spaces.Dict):
            self._init_dict(observation_space, channels_order, where)
        elif isinstance(observation_space, spaces.Box) and len(observation_space.shape) >= 1:
            self._init_box(observation_space, channels_order, where)
        else:
            raise ValueError(UNSTACKABLE.format(where=where, space=observation_space))

    def _init_dict(self, space: spaces.Dict, channels_order: ChannelsOrder, where: str) -> None:
        orders = channels_order if isinstance(channels_order, Mapping) else dict.fromkeys(space.spaces,
                                                                                           channels_order)
        unknown = [key for key in orders if key not in space.spaces]
        if unknown:
            raise ValueError(f"channels_order has keys {unknown} that the observation space lacks "
                             f"(valid keys: {list(space.spaces)})")
        self.sub = {key: StackedObservations(self.num_envs, self.n_stack, sub, orders.get(key),
                                             f"{where}[{key!r}]")
                    for key, sub in space.spaces.items()}
        self.stacked_observation_space = spaces.Dict(
            {key: stack.stacked_observation_space for key, stack in self.sub.items()})

    @staticmethod
    def compute_stacking(n_stack: int, observation_space: spaces.Box,
                         channels_order: str | None = None) -> tuple[bool, int, tuple[int, ...], int]:
        """Where ``n_stack`` observations of ``observation_space`` are stacked, as SB3's
        ``StackedObservations.compute_stacking`` says it: ``(channels_first,
        stack_dimension, stacked_shape, repeat_axis)``, the stacking axis of a batch (1 or
        -1) and of one observation (0 or -1), and the stacked observation's shape.

        Example:
            >>> StackedObservations.compute_stacking(4, spaces.Box(0, 255, (3, 84, 84), np.uint8))
            (True, 1, (12, 84, 84), 0)
        """
        channels_first = is_channels_first(observation_space, channels_order)
        repeat_axis = 0 if channels_first else -1
        stacked_shape = list(observation_space.shape)
        stacked_shape[repeat_axis] *= n_stack
        return channels_first, 1 if channels_first else -1, tuple(stacked_shape), repeat_axis

    def _init_box(self, space: spaces.Box, channels_order: Any, where: str) -> None:
        if isinstance(channels_order, Mapping):
            raise ValueError(BAD_CHANNELS_ORDER.format(where=where, value=channels_order)
                             + " (a dict is for Dict observation spaces)")
        self.channels_first = is_channels_first(space, channels_order, where)
        axis = 0 if self.channels_first else len(space.shape) - 1
        c = space.shape[axis]
        low = np.concatenate([space.low] * self.n_stack, axis=axis)
        high = np.concatenate([space.high] * self.n_stack, axis=axis)
        self.stacked_observation_space = spaces.Box(low, high, dtype=space.dtype)
        self.stacked_obs = np.zeros((self.num_envs, *low.shape), space.dtype)
        self._flat = self.stacked_obs.reshape(-1)  # a view: the buffer is C-contiguous
        self._shift = c * int(np.prod(space.shape[axis + 1:], dtype=np.int64))
        ndim = len(space.shape) + 1
        self._newest = _axis_index(ndim, axis + 1, slice(-c, None))
        self._newest_row = _axis_index(ndim - 1, axis, slice(-c, None))

    def reset(self, obs: Any) -> Any:
        """Start every env's history from ``obs`` (a batch); returns the stacked batch."""
        if self.sub is not None:
            return {key: stack.reset(obs[key]) for key, stack in self.sub.items()}
        self.stacked_obs[...] = 0
        self.stacked_obs[self._newest] = obs
        return self.stacked_obs.copy()

    def reset_env(self, index: int, obs: Any) -> Any:
        """Start env ``index``'s history from its single observation ``obs``."""
        if self.sub is not None:
            return {key: stack.reset_env(index, obs[key]) for key, stack in self.sub.items()}
        row = self.stacked_obs[index]
        row[...] = 0
        row[self._newest_row] = obs
        return row.copy()

    def update(self, obs: Any, dones: np.ndarray, terminal: Mapping[int, Any]) -> tuple[Any, dict[int, Any]]:
        """Push a batch of observations.

        Args:
            obs: the batch returned by a step.
            dones: which envs ended an episode (their history is zeroed first).
            terminal: env index -> terminal observation, for the envs that ended.

        Returns:
            The stacked batch (a fresh array) and env index -> stacked terminal observation.
        """
        if self.sub is not None:
            return self._update_dict(obs, dones, terminal)
        buf = self.stacked_obs
        self._shift_in_place()
        stacked_terminal = {}
        for i, last in terminal.items():
            row = buf[i].copy()
            row[self._newest_row] = last
            stacked_terminal[i] = row
        buf[dones] = 0
        buf[self._newest] = obs
        return buf.copy(), stacked_terminal

    def update_envs(self, env_ids: np.ndarray, obs: Any, dones: np.ndarray, terminal: Mapping[int, Any],
                    fresh: np.ndarray) -> tuple[Any, dict[int, Any]]:
        """Push one observation into the histories of envs ``env_ids`` only (a ``recv``).

        Row j of ``obs``, ``dones`` and ``fresh`` (an env's first row since an async reset:
        its history starts from zeros, like ``reset``) belongs to env ``env_ids[j]``;
        ``terminal`` maps rows to terminal observations. Returns the stacked rows and
        row -> stacked terminal observation, as ``update`` does for the whole batch.
        """
        if self.sub is not None:
            return self._update_dict(obs, dones, terminal, lambda stack, o, d, t: stack.update_envs(
                env_ids, o, d, t, fresh))
        rows = self.stacked_obs[env_ids]  # a copy: shifted, then written back
        flat, shift = rows.reshape(len(rows), -1), self._shift
        flat[:, :-shift] = flat[:, shift:]
        stacked_terminal = {}
        for j, last in terminal.items():
            row = rows[j].copy()
            row[self._newest_row] = last
            stacked_terminal[j] = row
        rows[dones | fresh] = 0
        rows[self._newest] = obs
        self.stacked_obs[env_ids] = rows
        return rows, stacked_terminal

    def _shift_in_place(self) -> None:
        """Move every stack one observation towards the oldest slot.

        The stack axis is the first or the last axis of an observation, so in the flat
        C-order buffer this is one move by ``_shift`` elements (a memmove, where shifting
        a strided channel axis would copy through a temporary). The newest slot of each
        env receives garbage (the next env's oldest slot, or nothing); ``update`` writes
        the new observation over it.
        """
        flat, shift = self._flat, self._shift
        flat[:-shift] = flat[shift:]

    def _update_dict(self, obs: Any, dones: np.ndarray, terminal: Mapping[int, Any],
                     update: Callable[..., tuple[Any, dict[int, Any]]] = lambda stack, o, d, t: stack.update(o, d, t),
                     ) -> tuple[Any, dict[int, Any]]:
        stacked, stacked_terminal = {}, {i: dict(last) for i, last in terminal.items()}
        for key, stack in (self.sub or {}).items():
            stacked[key], parts = update(stack, obs[key], dones, {i: last[key] for i, last in terminal.items()})
            for i, part in parts.items():
                stacked_terminal[i][key] = part
        return stacked, stacked_terminal
