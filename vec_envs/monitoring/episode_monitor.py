"""EpisodeMonitor: one env's episode statistics, and its monitor.csv when given a file."""
from __future__ import annotations

import time
from typing import Any, SupportsFloat

import gymnasium as gym

from vec_envs.monitoring.monitor_csv import MonitorCsv, monitor_path

__all__ = ["EpisodeMonitor"]

StepReturn = tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]
ResetReturn = tuple[Any, dict[str, Any]]


class EpisodeMonitor(gym.Wrapper):
    """Episode statistics: at the end of an episode ``info["episode"] = {"r", "l", "t"}``
    (return, length, seconds since the monitor started), as Stable-Baselines3's Monitor.

    With ``filename``, each episode is also a row of a CSV in SB3's ``monitor.csv`` format
    (a ``#{"t_start": ..., "env_id": ...}`` line, then ``r,l,t``). ``make_vec_env`` puts it
    under the env's wrappers (``monitor_dir``); ``vec_envs.wrappers.atari.make_atari_env`` puts it
    right on the emulator, where ``r`` is the real game score and ``l`` counts emulator
    frames.

    Example:
        >>> import os, tempfile
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     env = EpisodeMonitor(gym.make("CartPole-v1"), os.path.join(folder, "0.monitor.csv"))
        ...     _ = env.reset(seed=0)
        ...     env.close()
        ...     os.listdir(folder)
        ['0.monitor.csv']
    """

    def __init__(self, env: gym.Env, filename: str | None = None) -> None:
        super().__init__(env)
        self.t_start = time.time()
        self.episode_returns: list[float] = []
        self.episode_lengths: list[int] = []
        self._return, self._length = 0.0, 0
        self._log: MonitorCsv | None = None
        if filename is not None:
            env_id = self.env.spec.id if self.env.spec is not None else None
            self._log = MonitorCsv(monitor_path(filename), self.t_start, env_id)

    def reset(self, **kwargs: Any) -> ResetReturn:
        self._return, self._length = 0.0, 0
        return self.env.reset(**kwargs)

    def step(self, action: Any) -> StepReturn:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._return += float(reward)
        self._length += 1
        if terminated or truncated:
            info = dict(info, episode=self._end_episode())
        return obs, reward, terminated, truncated, info

    def _end_episode(self) -> dict[str, Any]:
        episode = {"r": round(self._return, 6), "l": self._length, "t": round(time.time() - self.t_start, 6)}
        self.episode_returns.append(self._return)
        self.episode_lengths.append(self._length)
        if self._log is not None:
            self._log.write_row(episode)
        return dict(episode)

    def close(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None
        super().close()
