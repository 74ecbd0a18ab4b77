"""VecFrameStack: each observation becomes the last ``n_stack`` ones, stacked on the channels."""
from __future__ import annotations

from typing import Any

import numpy as np

from vec_envs.arguments import check_int
from vec_envs.autoreset import AutoresetMode
from vec_envs.spaces.batching import create_batch, get_row, make_writer
from vec_envs.types import VecEnvIndices, VecEnvObs, VecEnvRecvReturn, VecEnvStepReturn
from vec_envs.vec_env_base import VecEnvBase
from vec_envs.vec_env_wrapper import VecEnvWrapper
from vec_envs.wrappers.stacked_observations import ChannelsOrder, StackedObservations

__all__ = ["VecFrameStack"]


class VecFrameStack(VecEnvWrapper):
    """Stacks the last ``n_stack`` observations of each env along the channel axis.

    ``(84, 84, 1)`` frames become ``(84, 84, n_stack)``; RGB ``(H, W, 3)`` frames become
    ``(H, W, 3 * n_stack)`` (oldest first); channels-first ``(C, H, W)`` frames are stacked
    on axis 0. A new episode starts from a zeroed history; ``infos[i]["terminal_observation"]``
    is stacked with the history of the episode it ends. Dict spaces are stacked per key.
    When the history clears follows the autoreset mode: same-step, at the row that ends
    an episode (it holds the new episode's first observation); next-step, at the reset row
    after it (the ending row is stacked with its episode's history); disabled, at the
    agent's ``reset_envs`` / ``reset_single_env``.

    Args:
        venv: the VecEnv to wrap (Box observations of rank >= 1, or a Dict of them).
        n_stack: how many observations to stack.
        channels_order: "last", "first", or None to infer it like SB3 ("last" unless the
            space is a uint8 image whose smallest dimension comes first); a dict gives
            one order per key of a Dict space.

    Example:
        >>> import gymnasium as gym
        >>> from vec_envs import DummyVecEnv
        >>> venv = VecFrameStack(DummyVecEnv([lambda: gym.make("CartPole-v1")] * 8), n_stack=4)
        >>> venv.reset().shape        # Atari frames (84, 84, 1) give (8, 84, 84, 4)
        (8, 16)
    """

    def __init__(self, venv: VecEnvBase, n_stack: int, channels_order: ChannelsOrder = None) -> None:
        self.n_stack = check_int("VecFrameStack: n_stack", n_stack)
        self.stacked_obs = StackedObservations(venv.num_envs, self.n_stack, venv.observation_space,
                                               channels_order)
        super().__init__(venv, observation_space=self.stacked_obs.stacked_observation_space)

    def reset(self) -> VecEnvObs:
        return self.stacked_obs.reset(self.venv.reset())

    def _starts(self, dones: np.ndarray, env_ids: np.ndarray | None = None) -> np.ndarray:
        """The rows whose history clears: the ends (same-step), the reset rows (next-step), none (disabled)."""
        if self.autoreset_mode is AutoresetMode.SAME_STEP:
            return dones
        if self._reset_rows is None:
            return np.zeros_like(dones)
        return self._reset_rows.of_step(dones) if env_ids is None else self._reset_rows.of_recv(env_ids, dones)

    def step_wait(self, timeout: float | None = None) -> VecEnvStepReturn:
        obs, rewards, dones, infos = self.venv.step_wait(timeout)
        terminal = {int(i): infos[i]["terminal_observation"] for i in np.flatnonzero(dones)
                    if "terminal_observation" in infos[i]}
        stacked, stacked_terminal = self.stacked_obs.update(obs, self._starts(dones), terminal)
        for i, last in stacked_terminal.items():
            infos[i]["terminal_observation"] = last
        return stacked, rewards, dones, infos

    def recv(self, timeout: float | None = None) -> VecEnvRecvReturn:
        """The next batch, each env stacked with its own history (one per env id)."""
        obs, rewards, dones, infos, env_ids = self.venv.recv(timeout)
        terminal = {int(j): infos[j]["terminal_observation"] for j in np.flatnonzero(dones)
                    if "terminal_observation" in infos[j]}
        stacked, stacked_terminal = self.stacked_obs.update_envs(env_ids, obs, self._starts(dones, env_ids), terminal,
                                                                 self._take_fresh(env_ids))
        for j, last in stacked_terminal.items():
            infos[j]["terminal_observation"] = last
        return stacked, rewards, dones, infos, env_ids

    def reset_single_env(self, index: int) -> Any:
        return self.stacked_obs.reset_env(index, self.venv.reset_single_env(index))

    def reset_envs(self, indices: VecEnvIndices = None, seed: Any = None, options: Any = None) -> VecEnvObs:
        rows = self.venv.reset_envs(indices, seed=seed, options=options)
        env_ids = self._env_ids(indices)
        stacked = create_batch(self.observation_space, len(env_ids))
        write = make_writer(self.observation_space, stacked)
        for j, i in enumerate(env_ids.tolist()):
            write(j, self.stacked_obs.reset_env(i, get_row(rows, j)))
        return stacked
