"""MultiAgentVecEnv: a VecEnv of packed PettingZoo envs seen with one row per agent."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium import spaces

from vec_envs.autoreset import AutoresetMode, mode_name
from vec_envs.multiagent.agent_rows import AgentRows, RowBatch, first_infos
from vec_envs.multiagent.parallel_env_adapter import ACTIVE
from vec_envs.spaces.checks import with_placeholders
from vec_envs.types import VecEnvIndices, VecEnvObs, VecEnvRecvReturn, VecEnvStepReturn
from vec_envs.vec_env_base import VecEnvBase

__all__ = ["MultiAgentVecEnv"]

NO_SINGLE_RESET = ("MultiAgentVecEnv.reset_single_env(): row {index} is agent {agent!r} of env {env}, whose "
                   "agents reset together, on their own when none is left; call reset() to reset every env")
SAME_STEP_ONLY = ("{where}: autoreset_mode={mode!r} is refused for multi-agent rows: an env resets when no agent of "
                  "it is left, and its rows that ended before (agents out of play: zeros, reward 0, done False) "
                  "would have no last row to show at a later step, nor a reset row of their own; use "
                  "autoreset_mode='same_step' (the default), where each agent's end is its row's done with "
                  "terminal_observation")


class MultiAgentVecEnv(VecEnvBase):
    """Every agent of every env as one row: ``num_envs = n_envs * len(possible_agents)``.

    Made by ``make_multiagent_vec_env``: ``venv`` is any backend over ``n_envs``
    ParallelEnvAdapters. Rows are env-major, agents in ``possible_agents`` order;
    ``row_agents[i]`` is ``(env_index, agent_name)``; ``active[i]`` says whether row i's
    next action counts. An agent's row follows the single-agent contract (see docs/contract.md,
    "Multi-agent rows"): done when the agent leaves, zeros and ``infos[i]["active"] =
    False`` until its env resets, which happens in the step where no agent is left.

    ``seed``, ``set_options``, ``get_attr``, ``set_attr``, ``env_method``,
    ``env_is_wrapped`` and ``render`` act per env (``indices`` name envs); ``recv``
    returns and ``send`` takes every row of an env together (``batch_size`` rows =
    the backend's ``batch_size`` envs times the agents).

    Example:
        >>> from mpe2 import simple_spread_v3
        >>> from vec_envs.multiagent import make_multiagent_vec_env
        >>> with make_multiagent_vec_env(simple_spread_v3.parallel_env, n_envs=2) as venv:
        ...     obs = venv.reset()
        ...     obs, rewards, dones, infos = venv.step(np.zeros(venv.num_envs, np.int64))
        >>> obs.shape, venv.row_agents[4]
        ((6, 18), (1, 'agent_1'))
    """

    def __init__(self, venv: VecEnvBase, agents: Sequence[str], observation_space: spaces.Space,
                 action_space: spaces.Space) -> None:
        if venv.autoreset_mode is not AutoresetMode.SAME_STEP:
            raise ValueError(SAME_STEP_ONLY.format(where="MultiAgentVecEnv", mode=mode_name(venv.autoreset_mode)))
        self.venv = venv
        self.layout = AgentRows(agents, venv.num_envs)
        self.n_envs = venv.num_envs
        self.agents = self.layout.agents
        count = self.n_envs * self.layout.n_agents
        super().__init__(count, observation_space, action_space, venv.batch_size * self.layout.n_agents)
        self.row_agents = self.layout.row_agents
        self.active = np.ones(count, np.bool_)
        self._packed_actions = (self.layout.n_agents, *(action_space.shape or ()))

    # ----------------------------------------------------------------- hooks
    def _reset(self, seeds: list[int | None] | None, options: list[dict[str, Any]] | None) -> VecEnvObs:
        packed: Any = self.venv.reset()  # the adapters' Dict
        self.reset_infos = first_infos(self.layout, self.venv.reset_infos)
        self.active = packed["status"][:, :, ACTIVE].reshape(self.num_envs) != 0
        return packed["obs"].reshape(self.num_envs, *packed["obs"].shape[2:])

    def step_async(self, actions: Any) -> None:
        """Start a step with one action per row (``n_envs * len(agents)``, env-major)."""
        self._check_count(actions, "step_async", self.num_envs)
        super().step_async(actions)

    def send(self, actions: Any, env_ids: Any) -> None:
        """Step the envs of rows ``env_ids`` (every row of each, in any order) with ``actions[j]``
        for row ``env_ids[j]``."""
        self._check_count(actions, "send", len(env_ids) if hasattr(env_ids, "__len__") else None)
        super().send(actions, env_ids)

    def _check_count(self, actions: Any, method: str, expected: int | None) -> None:
        """ValueError when ``actions`` is not one per row (the message says what a row is)."""
        if expected is None or not hasattr(actions, "__len__") or isinstance(actions, dict) \
                or len(actions) == expected:
            return
        raise ValueError(f"{method}(): expected {expected} actions, one per row (env-major: env e, agent a "
                         f"is row e * {self.layout.n_agents} + a, agents {self.agents}), received {len(actions)}")

    def _action_owner(self, index: int) -> str:
        env, agent = self.row_agents[index]
        return f"row {index} (env {env}, agent {agent!r})"

    def _ignored_actions(self, env_ids: np.ndarray | None) -> np.ndarray | None:
        """The rows out of play: their actions are ignored, so any value passes."""
        active = self.active if env_ids is None else self.active[env_ids]
        return None if active.all() else ~active

    def _step_async(self, actions: np.ndarray) -> None:
        actions = self._in_range(actions, ~self.active)
        self.venv.step_async(actions.reshape(self.n_envs, *self._packed_actions))

    def _in_range(self, actions: np.ndarray, ignored: np.ndarray) -> np.ndarray:
        """``actions`` with those of rows out of play in range, for the backend's check."""
        return with_placeholders(self.action_space, actions, ignored) if ignored.any() else actions

    def _step_wait(self, timeout: float | None) -> VecEnvStepReturn:
        packed, _, env_dones, env_infos = self.venv.step_wait(timeout)
        obs, rewards, dones, active, infos, _ = self._unpack(packed, env_dones, env_infos, None)
        self.active = active
        return obs, rewards, dones, infos

    def _unpack(self, packed: Any, env_dones: np.ndarray, env_infos: list[dict[str, Any]],
                env_ids: np.ndarray | None) -> RowBatch:
        batch = self.layout.unpack(packed, env_dones, env_infos, env_ids)
        for row, info in batch[5].items():
            self.reset_infos[row] = info
        return batch

    def _reset_single_env(self, index: int, seed: int | None) -> Any:
        env, agent = self.row_agents[index]
        raise NotImplementedError(NO_SINGLE_RESET.format(index=index, agent=agent, env=env))

    # ------------------------------------------------------- asynchronous batches
    def _async_reset(self, seeds: list[int | None] | None, options: list[dict[str, Any]] | None) -> None:
        self.venv.async_reset()

    def _recv(self, count: int, timeout: float | None) -> VecEnvRecvReturn:
        packed, _, env_dones, env_infos, env_ids = self.venv.recv(timeout)
        obs, rewards, dones, active, infos, _ = self._unpack(packed, env_dones, env_infos, env_ids)
        rows = self.layout.rows_of(env_ids)
        self.active[rows] = active
        return obs, rewards, dones, infos, rows

    def _send(self, actions: np.ndarray, env_ids: np.ndarray) -> None:
        envs, order = self.layout.envs_of(env_ids, "send")
        actions = self._in_range(actions[order], ~self.active[env_ids[order]])
        self.venv.send(actions.reshape(len(envs), *self._packed_actions), envs)

    # ------------------------------------------------------- per env
    def seed(self, seed: int | Sequence[int] | None = None) -> list[int | None]:
        """Seed the envs at the next ``reset()``: env e gets ``seed + e`` (or ``seed[e]``, one
        per env). Returns each row's seed (its env's)."""
        self._check_open("seed")
        env_seeds = self.venv.seed(seed)
        return [env_seeds[env] for env, _ in self.row_agents]

    def set_options(self, options: dict[str, Any] | Sequence[dict[str, Any] | None] | None = None) -> None:
        """Reset options for the next ``reset()``: one dict, or one per env."""
        self._check_open("set_options")
        self.venv.set_options(options)

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        """``attr_name`` of each ParallelEnv named by ``indices`` (envs, not rows)."""
        self._check_idle("get_attr")
        return self.venv.get_attr(attr_name, indices)

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        self._check_idle("set_attr")
        self.venv.set_attr(attr_name, value, indices)

    def env_method(self, method_name: str, *method_args: Any, indices: VecEnvIndices = None,
                   **method_kwargs: Any) -> list[Any]:
        self._check_idle("env_method")
        return self.venv.env_method(method_name, *method_args, indices=indices, **method_kwargs)

    def env_is_wrapped(self, wrapper_class: type, indices: VecEnvIndices = None) -> list[bool]:
        self._check_idle("env_is_wrapped")
        return self.venv.env_is_wrapped(wrapper_class, indices)

    def get_images(self) -> list[np.ndarray]:
        """One frame per env (``render`` tiles them: one tile per env)."""
        self._check_idle("get_images")
        return self.venv.get_images()

    def close_extras(self) -> None:
        self.venv.close()

    def __repr__(self) -> str:
        return f"MultiAgentVecEnv(n_envs={self.n_envs}, agents={self.agents}, {self.venv!r})"

