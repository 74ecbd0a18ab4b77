"""VecCheckNan: stop (or warn) at the first NaN / inf going into or coming out of the envs."""
from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from vec_envs.spaces.nested import iter_leaves, path_text
from vec_envs.types import VecEnvIndices, VecEnvObs, VecEnvRecvReturn, VecEnvStepReturn
from vec_envs.vec_env_base import VecEnvBase
from vec_envs.vec_env_wrapper import VecEnvWrapper

__all__ = ["VecCheckNan"]

FOUND = "{field} of env {index} contains {kind} {when}"
ALSO = " (envs with {kind}: {indices})"


def _bad_rows(leaf: Any, check_inf: bool) -> tuple[str, np.ndarray] | None:
    """``(kind, env indices)`` of the first kind of bad value in a batch leaf, else None."""
    try:
        arr = leaf if isinstance(leaf, np.ndarray) else np.asarray(leaf)
    except ValueError:  # ragged (a space with no fixed shape): nothing numeric to check
        return None
    if arr.dtype.kind not in "fc" or arr.ndim == 0:
        return None
    if np.isfinite(arr).all() if check_inf else not np.isnan(arr).any():
        return None
    rows = arr.reshape(len(arr), -1)
    nan_rows = np.flatnonzero(np.isnan(rows).any(axis=1))
    if len(nan_rows):
        return "NaN", nan_rows
    return "inf", np.flatnonzero(np.isinf(rows).any(axis=1))


class VecCheckNan(VecEnvWrapper):
    """Checks the actions before each step, and the observations (including
    ``infos[i]["terminal_observation"]``) and rewards after each reset / step, for NaN
    and (with ``check_inf``) infinite values.

    A finding names the field, the env and the moment, e.g.
    ``observation['pos'] of env 3 contains NaN after step``.

    Args:
        venv: the VecEnv to wrap.
        raise_exception: raise ``ValueError`` (True) or warn (False).
        warn_once: with warnings, warn only at the first finding.
        check_inf: also look for +inf / -inf.

    Example:
        >>> import gymnasium as gym
        >>> from vec_envs import DummyVecEnv
        >>> venv = VecCheckNan(DummyVecEnv([lambda: gym.make("Pendulum-v1")] * 4))
        >>> _ = venv.reset()
        >>> venv.step(np.full((4, 1), np.nan))
        Traceback (most recent call last):
        ValueError: action of env 0 contains NaN before step (envs with NaN: [0, 1, 2, 3])
        >>> venv.close()
    """

    def __init__(self, venv: VecEnvBase, raise_exception: bool = True, warn_once: bool = True,
                 check_inf: bool = True) -> None:
        super().__init__(venv)
        self.raise_exception, self.warn_once, self.check_inf = raise_exception, warn_once, check_inf
        self._user_warned = False

    def step_async(self, actions: Any) -> None:
        self._check_action_values(actions, "before step")
        self.venv.step_async(actions)

    def _check_action_values(self, actions: Any, when: str, env_ids: np.ndarray | None = None) -> None:
        """Actions as a batch (array, dict of batches) or one per env (list of dicts, ...);
        row j is env ``env_ids[j]`` (env j if None)."""
        if isinstance(actions, (np.ndarray, dict)):
            self._check_batch("action", actions, when, env_ids)
            return
        try:
            batch = np.asarray(actions)
        except ValueError:  # ragged: per-env actions of different shapes
            batch = None
        if batch is not None and batch.dtype != object:
            self._check_batch("action", batch, when, env_ids)
            return
        for j, action in enumerate(actions):
            index = j if env_ids is None or len(env_ids) != len(actions) else int(env_ids[j])
            self._check_single(index, "action", action, when)

    def step_wait(self, timeout: float | None = None) -> VecEnvStepReturn:
        obs, rewards, dones, infos = self.venv.step_wait(timeout)
        self._check_batch("observation", obs, "after step")
        self._check_batch("reward", rewards, "after step")
        for i in np.flatnonzero(dones):
            if "terminal_observation" in infos[i]:
                self._check_single(int(i), "terminal_observation", infos[i]["terminal_observation"], "after step")
        return obs, rewards, dones, infos

    def send(self, actions: Any, env_ids: Any) -> None:
        self._check_action_values(actions, "before send", np.asarray(env_ids))
        self.venv.send(actions, env_ids)

    def recv(self, timeout: float | None = None) -> VecEnvRecvReturn:
        obs, rewards, dones, infos, env_ids = self.venv.recv(timeout)
        self._check_batch("observation", obs, "after recv", env_ids)
        self._check_batch("reward", rewards, "after recv", env_ids)
        for j in np.flatnonzero(dones):
            if "terminal_observation" in infos[j]:
                self._check_single(int(env_ids[j]), "terminal_observation", infos[j]["terminal_observation"],
                                   "after recv")
        return obs, rewards, dones, infos, env_ids

    def reset(self) -> VecEnvObs:
        obs = self.venv.reset()
        self._check_batch("observation", obs, "after reset")
        return obs

    def reset_single_env(self, index: int) -> Any:
        obs = self.venv.reset_single_env(index)
        self._check_single(index % self.num_envs, "observation", obs, "after reset_single_env")
        return obs

    def reset_envs(self, indices: VecEnvIndices = None, seed: Any = None, options: Any = None) -> VecEnvObs:
        obs = self.venv.reset_envs(indices, seed=seed, options=options)
        self._check_batch("observation", obs, "after reset_envs", self._env_ids(indices))
        return obs

    def _check_batch(self, name: str, batch: Any, when: str, env_ids: np.ndarray | None = None) -> None:
        """Report bad values in a batch; row j is env ``env_ids[j]`` (env j if None)."""
        for path, leaf in iter_leaves(batch):
            found = _bad_rows(leaf, self.check_inf)
            if found is not None:
                kind, rows = found
                if env_ids is not None and env_ids.shape == (len(leaf),):
                    rows = env_ids[rows]
                message = FOUND.format(field=name + path_text(path), index=int(rows[0]), kind=kind, when=when)
                if len(rows) > 1:
                    message += ALSO.format(kind=kind, indices=rows.tolist())
                self._report(message)

    def _check_single(self, index: int, name: str, obs: Any, when: str) -> None:
        for path, leaf in iter_leaves(obs):
            found = _bad_rows([leaf], self.check_inf)
            if found is not None:
                self._report(FOUND.format(field=name + path_text(path), index=index, kind=found[0], when=when))

    def _report(self, message: str) -> None:
        if self.raise_exception:
            raise ValueError(message)
        if not (self.warn_once and self._user_warned):
            warnings.warn(message, UserWarning, stacklevel=4)
        self._user_warned = True
