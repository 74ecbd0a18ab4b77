"""NextStepStepper: gymnasium's next-step autoreset over a VecEnv, through recv/send.

In next-step mode (gymnasium's ``AutoresetMode.NEXT_STEP``) an env whose episode ends
returns its last observation at that step; at the next step its action is ignored and it
returns the new episode's first observation, reward 0, ``terminated`` and ``truncated``
False and the reset's info. Our VecEnvs reset such an env in the same step (its row holds
the new episode's first observation, ``infos[i]["terminal_observation"]`` the last one),
so the stepper returns the last observation at once and keeps the first one for the next
step, and during that next step it must not step the env at all: a lock-step ``step``
cannot leave an env out, ``send`` can. It sends each step's actions to the envs that are
not held back and receives exactly those, one row at a time, so the VecEnv must have
``batch_size=1``.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector.utils import iterate

from vec_envs.spaces.batching import copy_obs, create_batch, get_row, make_writer, take_rows
from vec_envs.types import Info, VecEnvObs
from vec_envs.vec_env_base import VecEnvBase

__all__ = ["NEEDS_BATCH_SIZE_1", "NextStepStepper"]

NEEDS_BATCH_SIZE_1 = (
    "to_gymnasium(autoreset_mode=NEXT_STEP): the VecEnv has batch_size={batch_size}, expected 1. After an "
    "episode ends, next-step autoreset leaves that env out of the next step, which only recv/send "
    "one env at a time can do; build the VecEnv with batch_size=1 (every backend takes it), e.g. "
    "to_gymnasium(DummyVecEnv(env_fns, batch_size=1), autoreset_mode='NextStep')")

StepRows = tuple[VecEnvObs, np.ndarray, np.ndarray, np.ndarray, list[Info]]


class NextStepStepper:
    """Resets and steps ``venv`` with next-step autoreset (see the module docstring).

    Args:
        venv: a VecEnv with ``batch_size=1``.
        action_space: the batched action space (to pick the actions of the envs stepped).

    Example:
        >>> import gymnasium as gym
        >>> from gymnasium.vector.utils import batch_space
        >>> from vec_envs import DummyVecEnv
        >>> venv = DummyVecEnv([lambda: gym.make("CartPole-v1", max_episode_steps=2)] * 2, batch_size=1)
        >>> stepper = NextStepStepper(venv, batch_space(venv.action_space, 2))
        >>> obs, infos = stepper.reset()
        >>> [stepper.step(np.zeros(2, int))[1].tolist() for _ in range(3)]  # ends, then reset rows
        [[1.0, 1.0], [1.0, 1.0], [0.0, 0.0]]
        >>> venv.close()
    """

    def __init__(self, venv: VecEnvBase, action_space: spaces.Space) -> None:
        if venv.batch_size != 1:
            raise ValueError(NEEDS_BATCH_SIZE_1.format(batch_size=venv.batch_size))
        self.venv = venv
        self.action_space = action_space
        self.num_envs = venv.num_envs
        self.held = np.zeros(self.num_envs, np.bool_)  # episode ended last step: next row is its reset
        self.reset_obs: list[Any] = [None] * self.num_envs
        self.reset_info: list[Info] = [{} for _ in range(self.num_envs)]
        self.obs = create_batch(venv.observation_space, self.num_envs)
        self.write = make_writer(venv.observation_space, self.obs)

    def reset(self) -> tuple[VecEnvObs, list[Info]]:
        """Reset every env (seeds and options as set on the VecEnv); the obs and reset infos."""
        self.venv.async_reset()
        self.held[:] = False
        infos: list[Info] = [{} for _ in range(self.num_envs)]
        for _ in range(self.num_envs):
            obs, _rewards, _dones, row_infos, env_ids = self.venv.recv()
            i = int(env_ids[0])
            self.write(i, get_row(obs, 0))
            infos[i] = row_infos[0]
        return copy_obs(self.obs), infos

    def step(self, actions: Any) -> StepRows:
        """One step: ``(obs, rewards, terminations, truncations, infos)`` with a list of infos."""
        rewards = np.zeros(self.num_envs, np.float32)
        terminations = np.zeros(self.num_envs, np.bool_)
        truncations = np.zeros(self.num_envs, np.bool_)
        infos: list[Info] = [{} for _ in range(self.num_envs)]
        for held in np.flatnonzero(self.held):
            self.write(int(held), self.reset_obs[held])
            infos[held], self.reset_obs[held] = self.reset_info[held], None
        stepped = np.flatnonzero(~self.held)
        self.held[:] = False
        if stepped.size:
            self.venv.send(self._actions_of(actions, stepped), stepped)
        for _ in range(stepped.size):
            obs, row_rewards, dones, row_infos, env_ids = self.venv.recv()
            i, info = int(env_ids[0]), row_infos[0]
            rewards[i] = row_rewards[0]
            if dones[0]:
                info = self._hold(i, get_row(obs, 0), info)
                truncations[i] = info.pop("TimeLimit.truncated", False)
                terminations[i] = not truncations[i]
            else:
                self.write(i, get_row(obs, 0))
            infos[i] = info
        return copy_obs(self.obs), rewards, terminations, truncations, infos

    def _hold(self, i: int, reset_obs: Any, info: Info) -> Info:
        """Env ``i`` ended its episode: write its last obs, keep its reset for the next step.
        An env whose worker was replaced has none: its row keeps its last known obs."""
        info = dict(info)
        if "terminal_observation" in info:
            self.write(i, info.pop("terminal_observation"))
        self.reset_obs[i] = copy_obs(reset_obs)
        self.reset_info[i] = dict(self.venv.reset_infos[i])
        self.held[i] = True
        return info

    def _actions_of(self, actions: Any, envs: np.ndarray) -> Any:
        if isinstance(self.action_space, spaces.Tuple):
            per_env = list(iterate(self.action_space, actions))
            return [per_env[i] for i in envs]
        return take_rows(actions if isinstance(actions, dict) else np.asarray(actions), envs)
