"""to_gymnasium: any VecEnv behind gymnasium's vector API (``gymnasium.vector.VectorEnv``)."""
from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any, cast

import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space, iterate

from vec_envs.arguments import resolve_autoreset_mode
from vec_envs.autoreset import mode_name
from vec_envs.errors import AlreadyPendingCallError, NoAsyncCallError, VecEnvError
from vec_envs.rendering.frames import gather_frames
from vec_envs.spaces.batching import copy_obs, get_row, make_writer
from vec_envs.spaces.nested import is_fixed_size, map_leaves
from vec_envs.types import Info, VecEnvObs
from vec_envs.vec_env_base import VecEnvBase

__all__ = ["GymnasiumVectorEnv", "to_gymnasium"]

OTHER_MODE = ("to_gymnasium(autoreset_mode={asked!r}): this {cls} resets its envs with autoreset_mode="
              "{own!r}, and the adapter shows the VecEnv's own mode (the envs are reset where they are "
              "stepped); build the VecEnv with autoreset_mode={asked_name!r}, e.g. "
              "SubprocVecEnv(env_fns, autoreset_mode={asked_name!r}), and call to_gymnasium(venv)")
#: gymnasium's own texts for a bad ``options["reset_mask"]`` (TypeError: not a bool array; ValueError: shape, no True)
MASK_NOT_ARRAY = "`options['reset_mask']` must be a numpy array, got {kind}"
MASK_SHAPE = "`options['reset_mask']` must have shape `({n},)`, got {shape}"
MASK_DTYPE = "`options['reset_mask']` must have `dtype=np.bool_`, got {dtype}"
MASK_EMPTY = "`options['reset_mask']` must contain a boolean array with at least one True value, got reset_mask={mask}"
FIRST_MASK = ("reset(options={'reset_mask': ...}): the envs have not been reset yet; reset every env first "
              "(reset(), or a mask of all True)")
#: gymnasium's own texts for the split calls out of order, with the fix
NOTHING_PENDING = "Calling `{method}` without any prior call to `{call}_async`. Call {call}_async() first"
PENDING = "Calling `{method}` while waiting for a pending call to `{call}` to complete; call {call}_wait() first"
CLOSE_PENDING = ("Calling `close` while waiting for a pending call to `{call}` to complete. Its results are "
                 "dropped and the envs closed")


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
        self._tuple_leaves = not is_fixed_size(venv.observation_space)  # some leaves batched as lists
        self._async_call: tuple | None = None  # reset_async's / step_async's, until its wait

    def reset(self, *, seed: int | Sequence[int | None] | None = None,
              options: dict[str, Any] | None = None) -> tuple[VecEnvObs, dict[str, Any]]:
        """Reset every env; ``seed`` (an int: env i gets ``seed + i``; or one per env) and
        ``options`` (given to every env's ``reset``) for this reset only, as in gymnasium.
        ``options["reset_mask"]`` (a bool array, one per env) resets those envs only
        (``venv.reset_envs``); the others keep their current observation."""
        if isinstance(options, dict) and "reset_mask" in options:
            return self._reset_masked(seed, options)
        self._prepare_reset(seed, options)
        self._obs = obs = self.venv.reset()
        return self._as_gymnasium(obs), self._batch_infos(self.venv.reset_infos)

    def _prepare_reset(self, seed: int | Sequence[int | None] | None, options: dict[str, Any] | None) -> None:
        """The seeds and options of the next reset, given to the VecEnv."""
        if options is not None:
            self.venv.set_options(options)
        if seed is not None:
            super().reset(seed=seed if isinstance(seed, int) else None)
            self.venv.seed(seed if isinstance(seed, int) else cast("list[int]", list(seed)))

    def _reset_masked(self, seed: Any, options: dict[str, Any]) -> tuple[VecEnvObs, dict[str, Any]]:
        """gymnasium's ``reset(options={"reset_mask": mask, ...})``: the envs of ``mask`` only."""
        options = dict(options)
        mask = _check_mask(options.pop("reset_mask"), self.num_envs)
        if self._obs is None:
            if not mask.all():
                raise ValueError(FIRST_MASK)
            return self.reset(seed=seed, options=options or None)
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
        return self._as_gymnasium(obs), self._batch_infos(infos)

    def step(self, actions: Any) -> tuple[VecEnvObs, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """One action per env (batched as ``action_space``), autoreset as ``metadata`` says."""
        return self._step_result(*self.venv.step(self._actions(actions)))

    # -------------------------------------------- AsyncVectorEnv's split calls
    def reset_async(self, seed: int | Sequence[int | None] | None = None,
                    options: dict[str, Any] | None = None) -> None:
        """Start ``reset(seed=, options=)``; ``reset_wait`` returns its ``(obs, infos)``.
        On a worker backend the envs reset meanwhile (a masked reset runs in ``reset_wait``)."""
        self._check_no_call("reset_async")
        started = False
        if not (isinstance(options, dict) and "reset_mask" in options):
            self._prepare_reset(seed, options)
            try:
                cast(Any, self.venv).reset_async()  # worker backends, and wrappers that keep reset as is
                started = True
            except (AttributeError, NotImplementedError):  # the reset runs in reset_wait
                pass
        self._async_call = ("reset", started, seed, options)

    def reset_wait(self, timeout: float | None = None) -> tuple[VecEnvObs, dict[str, Any]]:
        """The ``(obs, infos)`` of the reset ``reset_async`` started."""
        _, started, seed, options = self._take_call("reset_wait", "reset")
        if not started:
            return self.reset(seed=seed, options=options)
        self._obs = obs = cast(Any, self.venv).reset_wait(timeout)
        return self._as_gymnasium(obs), self._batch_infos(self.venv.reset_infos)

    def step_async(self, actions: Any) -> None:
        """Start a step with one action per env; ``step_wait`` returns its results."""
        self._check_no_call("step_async")
        self.venv.step_async(self._actions(actions))
        self._async_call = ("step",)

    def step_wait(self, timeout: float | None = None) -> tuple[VecEnvObs, np.ndarray, np.ndarray, np.ndarray,
                                                               dict[str, Any]]:
        """The results of the step ``step_async`` started (``EnvTimeoutError`` after ``timeout``
        seconds on a worker backend: the step stays pending)."""
        self._take_call("step_wait", "step", keep=True)
        result = self.venv.step_wait(timeout) if timeout is not None else self.venv.step_wait()
        self._async_call = None
        return self._step_result(*result)

    def _check_no_call(self, method: str) -> None:
        if self._async_call is not None:
            call = self._async_call[0]
            raise AlreadyPendingCallError(PENDING.format(method=method, call=call), call)

    def _take_call(self, method: str, call: str, keep: bool = False) -> tuple:
        pending = self._async_call
        if pending is None or pending[0] != call:
            raise NoAsyncCallError(NOTHING_PENDING.format(method=method, call=call), method)
        if not keep:
            self._async_call = None
        return pending

    # ---------------------------------------------------------------- helpers
    def _actions(self, actions: Any) -> Any:
        return list(iterate(self.action_space, actions)) if self._split_actions else actions

    def _as_gymnasium(self, obs: VecEnvObs) -> VecEnvObs:
        """A batch as gymnasium batches it: the envs' values of a space with no fixed size
        (``Graph``, ``Text``, a custom space) in a tuple, where the VecEnv keeps a list."""
        if not self._tuple_leaves:
            return obs
        return map_leaves(lambda leaf: tuple(leaf) if isinstance(leaf, list) else leaf, obs)

    def _step_result(self, obs: VecEnvObs, rewards: np.ndarray, dones: np.ndarray,
                     infos: list[Info]) -> tuple[VecEnvObs, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """gymnasium's step tuple from the VecEnv's."""
        self._obs = obs
        obs = self._as_gymnasium(obs)
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
        """``name(*args, **kwargs)`` on every env, called where the env runs (only what it
        returns comes back); an attribute that is not callable is returned as it is."""
        try:
            return tuple(self.venv.env_method(name, *args, **kwargs))
        except Exception as exc:  # noqa: BLE001 - re-raised below unless the attribute is no method
            error = exc
        try:
            values = self.venv.get_attr(name)
        except Exception:  # noqa: BLE001 - the method's own error is the one to see
            raise error from None
        if any(callable(value) for value in values):
            raise error
        return tuple(values)

    @property
    def np_random_seed(self) -> tuple[int, ...]:  # type: ignore[override]  # SyncVectorEnv's: one per env
        """The envs' own ``np_random_seed``, one per env, as ``SyncVectorEnv`` gives them."""
        return tuple(self.venv.get_attr("np_random_seed"))

    @property  # type: ignore[override]  # SyncVectorEnv's: one per env
    def np_random(self) -> tuple[np.random.Generator, ...]:
        """The envs' own random generators (copies, on a worker backend), one per env."""
        return tuple(self.venv.get_attr("np_random"))

    @np_random.setter
    def np_random(self, value: Any) -> None:
        raise AttributeError("np_random: the envs own their generators; seed them with reset(seed=...)")

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
        """Close the VecEnv (workers joined, shared memory released); a ``reset_async`` or
        ``step_async`` still waiting for its wait is dropped with a UserWarning, as gymnasium does."""
        if self._async_call is not None:
            warnings.warn(CLOSE_PENDING.format(call=self._async_call[0]), UserWarning, stacklevel=3)
            self._async_call = None
        self.venv.close()

    def __repr__(self) -> str:
        return f"GymnasiumVectorEnv({self.venv!r}, autoreset_mode={self.metadata['autoreset_mode'].value!r})"


def _check_mask(mask: Any, num_envs: int) -> np.ndarray:
    """``options["reset_mask"]`` checked as gymnasium's vector envs check it."""
    if not isinstance(mask, np.ndarray):
        raise TypeError(MASK_NOT_ARRAY.format(kind=type(mask)))
    if mask.shape != (num_envs,):
        raise ValueError(MASK_SHAPE.format(n=num_envs, shape=mask.shape))
    if mask.dtype != np.bool_:
        raise TypeError(MASK_DTYPE.format(dtype=mask.dtype))
    if not mask.any():
        raise ValueError(MASK_EMPTY.format(mask=mask))
    return mask


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
