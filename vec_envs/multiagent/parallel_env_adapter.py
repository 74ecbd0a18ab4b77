"""ParallelEnvAdapter: one PettingZoo ParallelEnv as one gymnasium env that packs every agent.

A backend steps the adapter as it steps any env; what each agent sees, earns and whether
it is still in play travel together in one Dict observation (so through the backend's
shared memory), with the agents along the first axis in ``possible_agents`` order:

- ``obs`` ``(A, *shape)``: each agent's observation; zeros for an agent not in play.
- ``terminal_obs`` ``(A, *shape)``: the last observation of each agent that left in the
  last step (zeros elsewhere).
- ``status`` float32 ``(A, 4)``, one column each (``STATUS_COLUMNS``): the reward the last
  step gave the agent; 1.0 where the agent left in it (done); 1.0 where it left truncated
  and not terminated; 1.0 where its next action counts (it is in ``env.agents``). One leaf
  rather than four: every leaf costs the backend a write and a copy per step.

The adapter never ends its own episode: when no agent is left it resets the ParallelEnv
in the same step (with no seed, so its random stream goes on) and returns the new
episode's observations alongside the last step's rewards and flags. Non-empty per-agent
infos go in its info: ``"agent_infos"`` (the step's) and ``"reset_agent_infos"`` (the
reset's), each a dict keyed by agent name.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector.utils import batch_space

from vec_envs.errors import own_check

__all__ = ["ParallelEnvAdapter", "ROW_SPACES", "STATUS_COLUMNS", "REWARD", "DONE", "TRUNCATED", "ACTIVE",
           "check_parallel_env"]

#: The columns of ``status``, by name.
STATUS_COLUMNS = ("reward", "done", "truncated", "active")
REWARD, DONE, TRUNCATED, ACTIVE = range(len(STATUS_COLUMNS))

#: Agent spaces whose values are one array of one fixed shape (what rows can hold).
ROW_SPACES = (spaces.Box, spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary)

NOT_PARALLEL = ("make_multiagent_vec_env(): parallel_env_fn returned {what}; expected a PettingZoo "
                "ParallelEnv{fix}")
AEC_FIX = (" (this is an AEC env: wrap it as pettingzoo.utils.conversions.aec_to_parallel(env), "
           "or use the package's parallel_env() constructor)")
SPACES_DIFFER = ("make_multiagent_vec_env(): every agent must have the same {kind} space (one row "
                 "each, one policy); agent {agent!r} has {space}, agent {first!r} has {expected}")
NOT_A_ROW = ("make_multiagent_vec_env(): agent {agent!r} has {kind} space {space}; agent rows hold "
             "Box, Discrete, MultiDiscrete or MultiBinary values")


def check_parallel_env(env: Any) -> None:
    """TypeError unless ``env`` is a PettingZoo ParallelEnv (an AEC env gets the fix)."""
    try:
        from pettingzoo.utils.env import AECEnv, ParallelEnv
    except ImportError as exc:
        raise ImportError('make_multiagent_vec_env() needs PettingZoo: pip install -e ".[multiagent]"') from exc

    if isinstance(env, ParallelEnv):
        return
    fix = AEC_FIX if isinstance(env, AECEnv) else ""
    raise own_check(TypeError(NOT_PARALLEL.format(what=f"a {type(env).__name__}", fix=fix)))


def _common_space(env: Any, kind: str) -> spaces.Space:
    """The one ``kind`` ("observation" / "action") space of every agent; ValueError naming
    the first agent whose space differs."""
    get = getattr(env, f"{kind}_space")
    first = env.possible_agents[0]
    expected = get(first)
    for agent in env.possible_agents:
        space = get(agent)
        if space != expected:
            raise own_check(ValueError(SPACES_DIFFER.format(kind=kind, agent=agent, space=space, first=first,
                                                            expected=expected)))
    if not isinstance(expected, ROW_SPACES):
        raise own_check(ValueError(NOT_A_ROW.format(agent=first, kind=kind, space=expected)))
    return expected


class ParallelEnvAdapter(gym.Env):
    """A PettingZoo ParallelEnv seen as one gymnasium env (see the module's docstring).

    Args:
        parallel_env_fn: a zero-argument factory returning a ParallelEnv.

    Public attributes the adapter lacks are looked up (and set) on the ParallelEnv, so
    ``get_attr``, ``set_attr`` and ``env_method`` on a backend reach it; the adapter's own
    (``reset``, ``step``, ``render``, ``close``, ``observation_space``, ``action_space``,
    ``possible_agents``, ``metadata``, ``render_mode``) are the adapter's; ``env`` is the
    ParallelEnv itself.

    Example:
        >>> from mpe2 import simple_spread_v3
        >>> env = ParallelEnvAdapter(simple_spread_v3.parallel_env)
        >>> obs, info = env.reset(seed=0)
        >>> obs["obs"].shape, obs["status"][:, ACTIVE].tolist()
        ((3, 18), [1.0, 1.0, 1.0])
        >>> obs, *_ = env.step(np.zeros(3, np.int64))
        >>> obs["status"][:, REWARD].shape
        (3,)
    """

    def __init__(self, parallel_env_fn: Callable[[], Any]) -> None:
        env = parallel_env_fn()
        check_parallel_env(env)
        self.env = env
        self.possible_agents = list(env.possible_agents)
        self._slot = {agent: a for a, agent in enumerate(self.possible_agents)}
        count = len(self.possible_agents)
        self.agent_observation_space = _common_space(env, "observation")
        self.agent_action_space = _common_space(env, "action")
        agent_obs = batch_space(self.agent_observation_space, count)
        self.observation_space = spaces.Dict({
            "obs": agent_obs, "terminal_obs": agent_obs,
            "status": spaces.Box(-np.inf, np.inf, (count, len(STATUS_COLUMNS)), np.float32)})
        self.action_space = batch_space(self.agent_action_space, count)
        self.render_mode = getattr(env, "render_mode", None)
        self.metadata = getattr(env, "metadata", {})
        # Written afresh at every step; the backend copies what an env returns before the next.
        shape: tuple[int, ...] = agent_obs.shape or ()
        dtype: Any = agent_obs.dtype
        self._out: dict[str, np.ndarray] = {
            "obs": np.zeros(shape, dtype), "terminal_obs": np.zeros(shape, dtype),
            "status": np.zeros((count, len(STATUS_COLUMNS)), np.float32)}

    def _cleared(self) -> dict[str, np.ndarray]:
        for array in self._out.values():
            array.fill(0)
        return self._out

    def _put_reset(self, out: dict[str, np.ndarray], obs: dict[str, Any], infos: dict[str, Any],
                   info: dict[str, Any], key: str) -> None:
        """The first observations of an episode into ``out``; non-empty infos under ``key``."""
        slot, agent_obs, status = self._slot, out["obs"], out["status"]
        for agent in self.env.agents:
            a = slot[agent]
            agent_obs[a] = obs[agent]
            status[a, ACTIVE] = 1.0
        agent_infos = {agent: i for agent, i in infos.items() if i}
        if agent_infos:
            info[key] = agent_infos

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        obs, infos = self.env.reset(seed=seed, options=options)
        out, info = self._cleared(), dict[str, Any]()
        self._put_reset(out, obs, infos, info, "agent_infos")
        return out, info

    def step(self, action: np.ndarray) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        slot, env = self._slot, self.env
        acting = list(env.agents)
        obs, rewards, terminated, truncated, infos = env.step({agent: action[slot[agent]] for agent in acting})
        out, info = self._cleared(), dict[str, Any]()
        agent_obs, status = out["obs"], out["status"]
        in_play = env.agents
        for agent in in_play:
            a = slot[agent]
            agent_obs[a] = obs[agent]
            status[a, ACTIVE] = 1.0
        for agent in acting:
            a = slot[agent]
            status[a, REWARD] = rewards.get(agent, 0.0)
            if agent not in in_play:  # left in this step
                self._put_leaving(a, obs.get(agent), terminated.get(agent, False), truncated.get(agent, False))
        agent_infos = {agent: i for agent, i in infos.items() if i}
        if agent_infos:
            info["agent_infos"] = agent_infos
        if not in_play:
            first_obs, first_infos = env.reset()
            self._put_reset(out, first_obs, first_infos, info, "reset_agent_infos")
        return out, 0.0, False, False, info

    def _put_leaving(self, a: int, last_obs: Any, terminated: bool, truncated: bool) -> None:
        """Agent ``a`` left in this step: done, how, and its last observation."""
        status = self._out["status"]
        status[a, DONE] = 1.0
        status[a, TRUNCATED] = float(truncated and not terminated)
        if last_obs is not None:
            self._out["terminal_obs"][a] = last_obs

    def render(self) -> Any:
        return self.env.render()

    def close(self) -> None:
        self.env.close()

    def set_wrapper_attr(self, name: str, value: Any, *, force: bool = True) -> bool:
        """Set ``name`` on the ParallelEnv unless the adapter has it (what ``set_attr`` calls)."""
        if hasattr(type(self), name) or name in self.__dict__:
            setattr(self, name, value)
        else:
            setattr(self.env, name, value)
        return True

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or "env" not in self.__dict__:
            raise AttributeError(f"{type(self).__name__} has no attribute {name!r}")
        return getattr(self.__dict__["env"], name)
