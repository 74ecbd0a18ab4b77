"""to_gymnasium: any VecEnv behind gymnasium's vector API (``gymnasium.vector.VectorEnv``)."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space, iterate

from vec_envs.arguments import resolve_autoreset_mode
from vec_envs.autoreset import mode_name
from vec_envs.errors import VecEnvError
from vec_envs.rendering.frames import gather_frames
from vec_envs.spaces.batching import copy_obs, get_row, make_writer
from vec_envs.types import Info, VecEnvObs
from vec_envs.vec_env_base import VecEnvBase

__all__ = ["GymnasiumVectorEnv", "to_gymnasium"]

OTHER_MODE = ("to_gymnasium(autoreset_mode={asked!r}): this {cls} resets its envs with autoreset_mode="
              "{own!r}, and the adapter shows the VecEnv's own mode (the envs are reset where they are "
              "stepped); build the VecEnv with autoreset_mode={asked_name!r}, e.g. "
              "SubprocVecEnv(env_fns, autoreset_mode={asked_name!r}), and call to_gymnasium(venv)")
BAD_MASK = ("reset(options={{'reset_mask': ...}}): reset_mask must be a numpy bool array of shape ({n},) with "
            "at least one True, received {value!r}")


class GymnasiumVectorEnv(VectorEnv):
    """A VecEnv seen through gymnasium's vector API, in the VecEnv's own autoreset mode.

    ``step`` returns ``(obs, rewards, terminations, truncations, infos)``, as
    ``SyncVectorEnv(..., autoreset_mode=...)`` does over the same env fns, for the mode the
    VecEnv was built with (``venv.autoreset_mode``, also ``metadata["autoreset_mode"]``):

    - ``AutoresetMode.SAME_STEP`` (default): an env whose episode ended is already reset,
      its row of ``obs`` is the new episode's first observation, ``infos["final_obs"][i]``
      / ``infos["final_info"][i]`` hold the last observation and info of the old one
      (masks ``_final_obs`` / ``_final_info``) and the reset's info is in ``infos`` itself.
      gymnasium's vector wrappers (``RecordEpisodeStatistics``, the reward wrappers, ...)
      accept it; its observation wrappers (``NormalizeObservation``...) refuse it.
    - ``AutoresetMode.NEXT_STEP``: an env whose episode ended returns its last observation
      and info; at the next step its action is ignored and it returns the new episode's
      first observation, reward 0, flags False and the reset's info. Every gymnasium
      vector wrapper accepts it. The VecEnv resets the env in its own step loop.
    - ``AutoresetMode.DISABLED``: an env whose episode ended returns its last observation
      and stays ended until ``reset(options={"reset_mask": mask})`` resets the envs of
      ``mask`` (``venv.reset_envs``; the others report their current observation).

    An env whose worker was replaced (``on_error="restart"``) ends its episode too,
    terminated, with ``env_restarted`` and ``error`` in its info: same-step, with the new
    episode's first observation and no ``final_obs`` / ``final_info`` (their masks False:
    nothing survived the worker); next-step and disabled, with its last known observation,
    then its reset at the next step (next-step) or at the agent's reset (disabled).

    Rewards keep the VecEnv's float32.

    Args:
        venv: any VecEnv (a backend or a stack of our wrappers); closing this closes it.
        autoreset_mode: None (the VecEnv's own), or that same mode as a check (an
            ``AutoresetMode``, its value or ``"same_step"`` / ``"next_step"`` /
            ``"disabled"``); another mode is a ValueError saying how to build the VecEnv.

    Example:
        >>> import gymnasium as gym
        >>> from vec_envs import DummyVecEnv
        >>> envs = GymnasiumVectorEnv(DummyVecEnv([lambda: gym.make("CartPole-v1")] * 3))
        >>> obs, infos = envs.reset(seed=42)
        >>> obs, rewards, terminations, truncations, infos = envs.step(np.array([1, 0, 1]))
        >>> envs.metadata["autoreset_mode"], rewards
        (<AutoresetMode.SAME_STEP: 'SameStep'>, array([1., 1., 1.], dtype=float32))
        >>> envs.close()
    """

    def __init__(self, venv: VecEnvBase, autoreset_mode: AutoresetMode | str | None = None) -> None:
        if not isinstance(venv, VecEnvBase):
            raise TypeError(f"to_gymnasium(): expected a vec_envs VecEnv (VecEnvBase), received "
                            f"{type(venv).__name__}; for a gymnasium env use gymnasium.make_vec")
        mode = _autoreset_mode(venv, autoreset_mode)
        self.venv = venv
        self.num_envs = venv.num_envs
        self.single_observation_space = venv.observation_space
        self.single_action_space = venv.action_space
        self.observation_space = batch_space(venv.observation_space, venv.num_envs)
        self.action_space = batch_space(venv.action_space, venv.num_envs)
        self.render_mode = _render_mode(venv)
        self.metadata = {"autoreset_mode": mode,
                         "render_modes": [] if self.render_mode is None else [self.render_mode]}
        self._split_actions = isinstance(venv.action_space, spaces.Tuple)
        self._same_step = mode is AutoresetMode.SAME_STEP
        self._obs: VecEnvObs | None = None  # the last batch returned (the rows a masked reset keeps)

    def reset(self, *, seed: int | Sequence[int | None] | None = None,
              options: dict[str, Any] | None = None) -> tuple[VecEnvObs, dict[str, Any]]:
        """Reset every env; ``seed`` (an int: env i gets ``seed + i``; or one per env) and
        ``options`` (given to every env's ``reset``) for this reset only, as in gymnasium.
        ``options["reset_mask"]`` (a bool array, one per env) resets those envs only
        (``venv.reset_envs``); the others keep their current observation."""
        if isinstance(options, dict) and "reset_mask" in options:
            return self._reset_masked(seed, options)
        if options is not None:
            self.venv.set_options(options)
        if seed is not None:
            super().reset(seed=seed if isinstance(seed, int) else None)
            self.venv.seed(seed if isinstance(seed, int) else cast("list[int]", list(seed)))
        self._obs = obs = self.venv.reset()
        return obs, self._batch_infos(self.venv.reset_infos)

    def _reset_masked(self, seed: Any, options: dict[str, Any]) -> tuple[VecEnvObs, dict[str, Any]]:
        """gymnasium's ``reset(options={"reset_mask": mask, ...})``: the envs of ``mask`` only."""
        options = dict(options)
        mask = options.pop("reset_mask")
        if not (isinstance(mask, np.ndarray) and mask.dtype == np.bool_ and mask.shape == (self.num_envs,)
                and mask.any()):
            raise ValueError(BAD_MASK.format(n=self.num_envs, value=mask))
        if self._obs is None:
            raise ValueError("reset(options={'reset_mask': ...}): reset every env first (reset() without a mask)")
        ids = np.flatnonzero(mask)
        if seed is not None and not isinstance(seed, (int, np.integer)):
            seed = [list(seed)[i] for i in ids]
        rows = self.venv.reset_envs(ids.tolist(), seed=seed, options=options or None)
        obs = copy_obs(self._obs)
        write = make_writer(self.single_observation_space, obs)
        for j, i in enumerate(ids.tolist()):
            write(i, get_row(rows, j))
        self._obs = obs
        infos: list[Info] = [{} for _ in range(self.num_envs)]
        for i in ids.tolist():
            infos[i] = dict(self.venv.reset_infos[i])
        return obs, self._batch_infos(infos)

    def step(self, actions: Any) -> tuple[VecEnvObs, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """One action per env (batched as ``action_space``), autoreset as ``metadata`` says."""
        if self._split_actions:
            actions = list(iterate(self.action_space, actions))
        obs, rewards, dones, infos = self.venv.step(actions)
        self._obs = obs
        truncations = np.zeros(self.num_envs, np.bool_)
        if not self._same_step:  # the rows are gymnasium's already: the flags split
            for i in np.flatnonzero(dones).tolist():
                truncations[i] = infos[i].pop("TimeLimit.truncated", False)
            return obs, rewards, dones & ~truncations, truncations, self._batch_infos(infos)
        batched: dict[str, Any] = {}
        for i in np.flatnonzero(dones):
            if infos[i].get("env_restarted"):  # its worker was replaced: no final observation survived it
                infos[i] = {**self.venv.reset_infos[i], **infos[i]}
                continue
            final_info = dict(infos[i])
            final_obs = final_info.pop("terminal_observation", None)
            truncations[i] = final_info.pop("TimeLimit.truncated", False)
            batched = self._add_info(batched, {"final_obs": final_obs, "final_info": final_info}, int(i))
            infos[i] = self.venv.reset_infos[i]
        return obs, rewards, dones & ~truncations, truncations, self._batch_infos(infos, batched)

    def _batch_infos(self, infos: list[Info], batched: dict[str, Any] | None = None) -> dict[str, Any]:
        batched = {} if batched is None else batched
        for i, info in enumerate(infos):
            if info:
                batched = self._add_info(batched, info, i)
        return batched

    def render(self) -> tuple[np.ndarray, ...] | None:
        """One frame per env (the envs need ``render_mode="rgb_array"``)."""
        return tuple(gather_frames(self.venv, "render()"))

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """``name(*args, **kwargs)`` on every env; an attribute that is not callable is returned."""
        values = self.venv.get_attr(name)
        if not callable(values[0]):
            return tuple(values)
        return tuple(self.venv.env_method(name, *args, **kwargs))

    def get_attr(self, name: str) -> tuple[Any, ...]:
        """The attribute ``name`` of every env."""
        return tuple(self.venv.get_attr(name))

    def set_attr(self, name: str, values: Any) -> None:
        """Set ``name`` on every env: one value for all, or a list / tuple of one per env."""
        if isinstance(values, (list, tuple)) and len(values) == self.num_envs:
            for i, value in enumerate(values):
                self.venv.set_attr(name, value, indices=i)
        else:
            self.venv.set_attr(name, values)

    def close_extras(self, **kwargs: Any) -> None:
        """Close the VecEnv (workers joined, shared memory released)."""
        self.venv.close()

    def __repr__(self) -> str:
        return f"GymnasiumVectorEnv({self.venv!r}, autoreset_mode={self.metadata['autoreset_mode'].value!r})"


def _render_mode(venv: VecEnvBase) -> str | None:
    try:
        return venv.get_attr("render_mode", indices=0)[0]
    except (AttributeError, VecEnvError):
        return None


def _autoreset_mode(venv: VecEnvBase, asked: Any) -> AutoresetMode:
    """The VecEnv's own mode; ``asked`` (if given) must be that one."""
    own: AutoresetMode = venv.autoreset_mode
    if asked is None:
        return own
    mode = resolve_autoreset_mode(asked, "to_gymnasium()")
    if mode is not own:
        raise ValueError(OTHER_MODE.format(asked=asked, cls=type(venv).__name__, own=mode_name(own),
                                           asked_name=mode_name(mode)))
    return mode


def to_gymnasium(venv: VecEnvBase, autoreset_mode: AutoresetMode | str | None = None) -> GymnasiumVectorEnv:
    """``venv`` behind gymnasium's vector API (see ``GymnasiumVectorEnv``).

    Example:
        >>> import gymnasium as gym
        >>> from vec_envs import DummyVecEnv
        >>> envs = gym.wrappers.vector.RecordEpisodeStatistics(
        ...     to_gymnasium(DummyVecEnv([lambda: gym.make("CartPole-v1")] * 2)))
        >>> obs, infos = envs.reset(seed=0)
        >>> envs.close()
        >>> envs = gym.wrappers.vector.NormalizeObservation(to_gymnasium(   # next-step, as the wrapper needs
        ...     DummyVecEnv([lambda: gym.make("CartPole-v1")] * 2, autoreset_mode="next_step")))
        >>> obs, infos = envs.reset(seed=0)
        >>> envs.metadata["autoreset_mode"]
        <AutoresetMode.NEXT_STEP: 'NextStep'>
        >>> envs.close()
    """
    return GymnasiumVectorEnv(venv, autoreset_mode)
