"""from_gymnasium: any ``gymnasium.vector.VectorEnv`` as a VecEnv, in its own autoreset mode or same-step."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium.vector import AsyncVectorEnv, AutoresetMode, VectorEnv
from gymnasium.vector.utils import concatenate, create_empty_array

from vec_envs.arguments import resolve_autoreset_mode
from vec_envs.autoreset import mode_name
from vec_envs.interop.infos import split_infos
from vec_envs.interop.single_env import env_attr, is_wrapped
from vec_envs.spaces.batching import copy_obs, get_row, slice_batch, take_rows, write_rows
from vec_envs.types import Info, VecEnvIndices, VecEnvObs, VecEnvStepReturn
from vec_envs.vec_env_base import VecEnvBase

__all__ = ["FromGymnasiumVecEnv", "from_gymnasium"]

NEEDS_ENVS = ("FromGymnasiumVecEnv.{method}(indices={indices!r}): reaching some envs only needs the "
              "sub-envs themselves, which {cls} does not expose (SyncVectorEnv does); call it with "
              "indices=None for every env")
NO_STATES = ("FromGymnasiumVecEnv.{method}(): a gymnasium vector env gives no access to env states; "
             "build the envs with a vec_envs backend (DummyVecEnv, SubprocVecEnv) to plan")
ONE_OPTIONS = ("FromGymnasiumVecEnv.{method}(): received {options!r}, but a gymnasium vector env "
               "resets every env with the same options; give one dict for every env")
NO_CONVERSION = ("from_gymnasium(autoreset_mode={asked!r}): the gymnasium vector env resets its envs with "
                 "{own}; the VecEnv keeps that mode (autoreset_mode=None) or turns it into same-step "
                 "(autoreset_mode='same_step'); for {asked_name} build the gymnasium vector env with "
                 "autoreset_mode=AutoresetMode.{member}")


class FromGymnasiumVecEnv(VecEnvBase):
    """A ``gymnasium.vector.VectorEnv`` behind the VecEnv contract.

    By default the VecEnv has the vector env's own autoreset mode (its
    ``metadata["autoreset_mode"]``; next-step when absent): its rows pass through, an
    ended env's info gaining ``TimeLimit.truncated``, and ``reset_envs`` is gymnasium's
    ``reset(options={"reset_mask": ...})``. With ``autoreset_mode="same_step"`` a next-step
    or disabled vector env is turned into same-step: an env whose episode ended is reset
    in the same ``step`` (with gymnasium's ``reset(options={"reset_mask": dones})``), with
    ``infos[i]["terminal_observation"]`` and ``infos[i]["TimeLimit.truncated"]``. Over
    ``SyncVectorEnv`` the results are bit-identical to ``DummyVecEnv`` over the same env
    fns in the same mode.

    Args:
        vector_env: the gymnasium vector env; closing this closes it.
        autoreset_mode: None (its own), or ``"same_step"`` (SB3-style agents and
            ``to_sb3`` need it); another mode than its own is a ValueError.

    Example:
        >>> import gymnasium as gym
        >>> venv = FromGymnasiumVecEnv(gym.make_vec("CartPole-v1", num_envs=2, vectorization_mode="sync"))
        >>> venv.seed(0)
        [0, 1]
        >>> obs = venv.reset()
        >>> obs, rewards, dones, infos = venv.step(np.array([0, 1]))
        >>> obs.shape, rewards.dtype, dones.dtype
        ((2, 4), dtype('float32'), dtype('bool'))
        >>> venv.close()
    """

    def __init__(self, vector_env: VectorEnv, autoreset_mode: AutoresetMode | str | None = None) -> None:
        if not isinstance(vector_env, VectorEnv):
            raise TypeError(f"from_gymnasium(): expected a gymnasium.vector.VectorEnv, received "
                            f"{type(vector_env).__name__}")
        self.vector_env: Any = vector_env  # Sync / Async methods (get_attr, call, step_async) too
        own = vector_env.metadata.get("autoreset_mode", AutoresetMode.NEXT_STEP)
        mode = own if autoreset_mode is None else resolve_autoreset_mode(autoreset_mode, "from_gymnasium()")
        if mode not in (own, AutoresetMode.SAME_STEP):
            raise ValueError(NO_CONVERSION.format(asked=autoreset_mode, own=mode_name(own), asked_name=mode_name(mode),
                                                  member=mode.name))
        self._gym_mode = own  # the vector env's mode: same-step rows, or rows reset by mask here
        super().__init__(vector_env.num_envs, vector_env.single_observation_space,
                         vector_env.single_action_space, autoreset_mode=mode)
        self._actions: Any = None
        self._asynchronous = isinstance(vector_env, AsyncVectorEnv)

    def _reset(self, seeds: list[int | None] | None, options: list[dict[str, Any]] | None) -> VecEnvObs:
        obs, infos = self.vector_env.reset(seed=seeds, options=None if options is None else options[0])
        self.reset_infos = split_infos(infos, self.num_envs)
        return obs

    def set_options(self, options: dict[str, Any] | Sequence[dict[str, Any] | None] | None = None) -> None:
        """Options for the next ``reset()``: one dict, as gymnasium passes them to every env."""
        super().set_options(options)
        if self._options and any(entry != self._options[0] for entry in self._options):
            self._options = None
            raise ValueError(ONE_OPTIONS.format(method="set_options", options=options))

    def _reset_single_env(self, index: int, seed: int | None) -> Any:
        obs, reset_infos = self._reset_masked(np.arange(self.num_envs) == index, seed)
        self.reset_infos[index] = reset_infos[index]
        return copy_obs(get_row(obs, index))

    def _reset_envs(self, indices: list[int], seeds: list[int | None], options: list[dict[str, Any]]) -> VecEnvObs:
        if any(entry != options[0] for entry in options):
            raise ValueError(ONE_OPTIONS.format(method="reset_envs", options=options))
        mask = np.zeros(self.num_envs, np.bool_)
        mask[indices] = True
        every: list[int | None] = [None] * self.num_envs
        for i, seed in zip(indices, seeds):
            every[i] = seed
        obs, reset_infos = self._reset_masked(mask, every, options[0])
        for i in indices:
            self.reset_infos[i] = reset_infos[i]
        return take_rows(obs, np.asarray(indices, np.int64))

    def _reset_masked(self, mask: np.ndarray, seed: int | None | list[int | None] = None,
                      options: dict[str, Any] | None = None) -> tuple[VecEnvObs, list[Info]]:
        seeds = seed if isinstance(seed, list) else [seed if m else None for m in mask]
        obs, infos = self.vector_env.reset(seed=seeds, options={**(options or {}), "reset_mask": mask})
        return obs, split_infos(infos, self.num_envs)

    def _step_async(self, actions: Any) -> None:
        self._actions = self._batch_actions(actions)
        if self._asynchronous:
            self.vector_env.step_async(self._actions)

    def _batch_actions(self, actions: Any) -> Any:
        if isinstance(actions, np.ndarray):
            return actions
        out: Any = create_empty_array(self.action_space, self.num_envs)
        return concatenate(self.action_space, actions, out)

    def _step_wait(self, timeout: float | None) -> VecEnvStepReturn:
        if self._asynchronous:
            result = self.vector_env.step_wait(timeout=timeout)
        else:
            result = self.vector_env.step(self._actions)
        obs, rewards, terminations, truncations, batched = result
        dones = np.logical_or(terminations, truncations)
        if self._gym_mode == AutoresetMode.SAME_STEP:
            infos = self._same_step_infos(batched, dones, terminations, truncations)
        elif self.autoreset_mode != AutoresetMode.SAME_STEP:  # its own mode: the rows are ours already
            infos = split_infos(batched, self.num_envs)
            for i in np.flatnonzero(dones).tolist():
                infos[i]["TimeLimit.truncated"] = bool(truncations[i] and not terminations[i])
        else:
            obs, infos = self._reset_ended(obs, split_infos(batched, self.num_envs), dones, terminations,
                                           truncations)
        return obs, np.asarray(rewards, np.float32), dones, infos

    def _same_step_infos(self, batched: dict[str, Any], dones: np.ndarray, terminations: np.ndarray,
                         truncations: np.ndarray) -> list[Info]:
        final_obs = batched.pop("final_obs", None)
        final_infos = split_infos(batched.pop("final_info", {}), self.num_envs)
        batched.pop("_final_obs", None)
        batched.pop("_final_info", None)
        infos = split_infos(batched, self.num_envs)
        for i in np.flatnonzero(dones):
            self.reset_infos[i] = infos[i]
            infos[i] = _terminal_info(final_infos[i], None if final_obs is None else final_obs[i],
                                      terminations[i], truncations[i])
        return infos

    def _reset_ended(self, obs: VecEnvObs, infos: list[Info], dones: np.ndarray, terminations: np.ndarray,
                     truncations: np.ndarray) -> tuple[VecEnvObs, list[Info]]:
        """Reset the envs whose episode ended (next-step / disabled modes) in this step."""
        ended = [int(i) for i in np.flatnonzero(dones)]
        if not ended:
            return obs, infos
        final_obs = {i: copy_obs(get_row(obs, i)) for i in ended}  # before the reset (copy=False shares obs)
        reset_obs, reset_infos = self._reset_masked(dones.copy())
        for i in ended:
            infos[i] = _terminal_info(infos[i], final_obs[i], terminations[i], truncations[i])
            write_rows(obs, i, slice_batch(reset_obs, i, i + 1))
            self.reset_infos[i] = reset_infos[i]
        return obs, infos

    # ------------------------------------------------------------ env access
    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        self._check_open("get_attr")
        values = self.vector_env.get_attr(attr_name)
        return [values[i] for i in self._indices(indices, "get_attr")]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        self._check_open("set_attr")
        chosen = set(self._indices(indices, "set_attr"))
        if len(chosen) == self.num_envs:
            self.vector_env.set_attr(attr_name, value)
            return
        current = self.vector_env.get_attr(attr_name)
        self.vector_env.set_attr(attr_name, [value if i in chosen else current[i] for i in range(self.num_envs)])

    def env_method(self, method_name: str, *method_args: Any, indices: VecEnvIndices = None,
                   **method_kwargs: Any) -> list[Any]:
        self._check_open("env_method")
        chosen = self._indices(indices, "env_method")
        if indices is None:
            return list(self.vector_env.call(method_name, *method_args, **method_kwargs))
        envs = self._sub_envs("env_method", indices)
        return [env_attr(envs[i], method_name)(*method_args, **method_kwargs) for i in chosen]

    def env_is_wrapped(self, wrapper_class: type, indices: VecEnvIndices = None) -> list[bool]:
        self._check_open("env_is_wrapped")
        envs = self._sub_envs("env_is_wrapped", indices)
        return [is_wrapped(envs[i], wrapper_class) for i in self._indices(indices, "env_is_wrapped")]

    def _sub_envs(self, method: str, indices: VecEnvIndices) -> list[Any]:
        envs = getattr(self.vector_env, "envs", None)
        if envs is None:
            raise NotImplementedError(NEEDS_ENVS.format(method=method, indices=indices,
                                                        cls=type(self.vector_env).__name__))
        return list(envs)

    def get_images(self) -> list[np.ndarray]:
        self._check_open("get_images")
        frames = self.vector_env.render()
        if frames is None:
            raise ValueError(f"get_images(): the gymnasium vector env returned no frames "
                             f"(render_mode={self.vector_env.render_mode!r}); make its envs with "
                             "render_mode='rgb_array'")
        return [np.asarray(frame) for frame in frames]

    def _get_states(self, indices: list[int]) -> list[Any]:
        raise NotImplementedError(NO_STATES.format(method="get_states"))

    def _set_states(self, states: list[Any], indices: list[int]) -> None:
        raise NotImplementedError(NO_STATES.format(method="set_states"))

    def _step_batch(self, actions: Any, states: list[Any] | None, dts: list[int],
                    return_states: bool) -> tuple[VecEnvObs, list[tuple]]:
        raise NotImplementedError(NO_STATES.format(method="step_batch"))

    def close_extras(self) -> None:
        self.vector_env.close()

    def __repr__(self) -> str:
        return f"FromGymnasiumVecEnv({self.vector_env!r})"


def _terminal_info(info: Info, final_obs: Any, terminated: bool, truncated: bool) -> Info:
    info = dict(info)
    info["terminal_observation"] = final_obs
    info["TimeLimit.truncated"] = bool(truncated and not terminated)
    return info


def from_gymnasium(vector_env: VectorEnv, autoreset_mode: AutoresetMode | str | None = None) -> FromGymnasiumVecEnv:
    """``vector_env`` as a VecEnv, in its own autoreset mode or same-step (see ``FromGymnasiumVecEnv``).

    Example:
        >>> import gymnasium as gym
        >>> from vec_envs.wrappers import VecNormalize
        >>> venv = VecNormalize(from_gymnasium(gym.make_vec("CartPole-v1", num_envs=2)))
        >>> venv.reset().shape
        (2, 4)
        >>> venv.close()
    """
    return FromGymnasiumVecEnv(vector_env, autoreset_mode)
