"""VecMonitor: episode returns, lengths and times in ``infos``, and optionally a monitor.csv."""
from __future__ import annotations

import os
import sys
import time
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from vec_envs.errors import VecEnvError
from vec_envs.monitoring.monitor_csv import MonitorCsv, monitor_path
from vec_envs.types import VecEnvIndices, VecEnvObs, VecEnvRecvReturn, VecEnvStepReturn
from vec_envs.vec_env_base import VecEnvBase
from vec_envs.vec_env_wrapper import VecEnvWrapper

__all__ = ["VecMonitor", "monitor_path"]  # monitor_path: defined in monitor_csv.py

ALREADY_MONITORED = ("VecMonitor: env(s) {envs} are wrapped in Stable-Baselines3's Monitor, whose "
                     "info['episode'] this VecMonitor overwrites with its own counts; keep one of the two")
MISSING_INFO_KEY = ("VecMonitor: info_keywords names {key!r}, but the info of env {index} at the end of "
                    "its episode has only the keys {keys}")


class VecMonitor(VecEnvWrapper):
    """Adds ``infos[i]["episode"] = {"r": return, "l": length, "t": seconds}`` at every
    episode end, and writes one CSV row per episode when ``filename`` is given.

    ``t`` is the time since this wrapper was built. The CSV is the ``monitor.csv`` format
    the baselines / SB3 tools read (``load_results``): a first line ``#`` + JSON with
    ``t_start`` and ``env_id``, a header ``r,l,t`` (+ ``info_keywords``), one row per
    episode, flushed at once. ``reset()`` restarts the counts of every env, ``reset_envs``
    and ``reset_single_env`` those of the envs they reset. Under next-step autoreset the
    row after an episode's end is its reset, not a step: it counts in no episode.

    Args:
        venv: the VecEnv to wrap.
        filename: a directory (writes ``monitor.csv`` in it) or a file name (``.monitor.csv``
            is appended unless present); None writes no file.
        info_keywords: keys of the final info of an episode to copy into the episode
            record and the CSV.

    Example:
        >>> import gymnasium as gym
        >>> from vec_envs import DummyVecEnv
        >>> venv = VecMonitor(DummyVecEnv([lambda: gym.make("CartPole-v1")]))  # or (..., "logs/")
        >>> obs, dones = venv.reset(), [False]
        >>> while not dones[0]:
        ...     obs, rewards, dones, infos = venv.step([0])
        >>> sorted(infos[0]["episode"])
        ['l', 'r', 't']
    """

    def __init__(self, venv: VecEnvBase, filename: str | os.PathLike | None = None,
                 info_keywords: Sequence[str] = ()) -> None:
        super().__init__(venv)
        _warn_if_monitored(venv)
        self.info_keywords = tuple(info_keywords)
        self.t_start = time.time()
        self.episode_returns = np.zeros(self.num_envs, np.float64)
        self.episode_lengths = np.zeros(self.num_envs, np.int64)
        self.episode_count = 0
        self.results_writer: MonitorCsv | None = None
        if filename is not None:
            self.results_writer = MonitorCsv(monitor_path(filename), self.t_start, self._env_id(),
                                             self.info_keywords)

    def _env_id(self) -> str | None:
        try:
            spec = self.venv.get_attr("spec", indices=0)[0]
        except (AttributeError, VecEnvError):
            return None
        return getattr(spec, "id", None)

    def reset(self) -> VecEnvObs:
        obs = self.venv.reset()
        self.episode_returns[:] = 0.0
        self.episode_lengths[:] = 0
        return obs

    def reset_single_env(self, index: int) -> Any:
        obs = self.venv.reset_single_env(index)
        self.episode_returns[index] = 0.0
        self.episode_lengths[index] = 0
        return obs

    def reset_envs(self, indices: VecEnvIndices = None, seed: Any = None, options: Any = None) -> VecEnvObs:
        obs = self.venv.reset_envs(indices, seed=seed, options=options)
        env_ids = self._env_ids(indices)
        self.episode_returns[env_ids] = 0.0
        self.episode_lengths[env_ids] = 0
        return obs

    def step_wait(self, timeout: float | None = None) -> VecEnvStepReturn:
        obs, rewards, dones, infos = self.venv.step_wait(timeout)
        reset = None if self._reset_rows is None else self._reset_rows.of_step(dones)
        if reset is not None and reset.any():  # next-step reset rows: no step of any episode
            self.episode_returns[~reset] += rewards[~reset]
            self.episode_lengths[~reset] += 1
        else:
            self.episode_returns += rewards
            self.episode_lengths += 1
        for i in np.flatnonzero(dones):
            infos[i]["episode"] = self._end_episode(int(i), infos[i])
        return obs, rewards, dones, infos

    def recv(self, timeout: float | None = None) -> VecEnvRecvReturn:
        """The next batch, with each env's episode counted on its own rows."""
        obs, rewards, dones, infos, env_ids = self.venv.recv(timeout)
        fresh = self._take_fresh(env_ids)
        if self._reset_rows is not None:  # next-step reset rows start the env's episode too
            fresh = fresh | self._reset_rows.of_recv(env_ids, dones)
        self.episode_returns[env_ids[fresh]] = 0.0  # a reset row starts the env's episode
        self.episode_lengths[env_ids[fresh]] = 0
        stepped = env_ids[~fresh]
        self.episode_returns[stepped] += rewards[~fresh]
        self.episode_lengths[stepped] += 1
        for j in np.flatnonzero(dones):
            infos[j]["episode"] = self._end_episode(int(env_ids[j]), infos[j])
        return obs, rewards, dones, infos, env_ids

    def _end_episode(self, i: int, info: dict[str, Any]) -> dict[str, Any]:
        episode = {"r": round(float(self.episode_returns[i]), 6), "l": int(self.episode_lengths[i]),
                   "t": round(time.time() - self.t_start, 6)}
        for key in self.info_keywords:
            if key not in info:
                raise KeyError(MISSING_INFO_KEY.format(key=key, index=i, keys=sorted(info)))
            episode[key] = info[key]
        self.episode_returns[i] = 0.0
        self.episode_lengths[i] = 0
        self.episode_count += 1
        if self.results_writer is not None:
            self.results_writer.write_row(episode)
        return episode

    def close(self) -> None:
        try:
            if self.results_writer is not None:
                self.results_writer.close()
        finally:
            super().close()


def _warn_if_monitored(venv: VecEnvBase) -> None:
    """A UserWarning naming the envs wrapped in SB3's ``Monitor``, as SB3's VecMonitor warns.

    Envs wrapped in it were built by code that imported SB3's module: when it is not
    imported, no env has it (and SB3 is not imported for the question)."""
    module = sys.modules.get("stable_baselines3.common.monitor")
    if module is None:
        return
    try:
        wrapped = venv.env_is_wrapped(module.Monitor)
    except (AttributeError, NotImplementedError, VecEnvError):
        return
    envs = [i for i, is_wrapped in enumerate(wrapped) if is_wrapped]
    if envs:
        warnings.warn(ALREADY_MONITORED.format(envs=envs), UserWarning, stacklevel=3)
