"""ParallelEnvAdapter: one PettingZoo ParallelEnv as one gymnasium env that packs every agent.

A backend steps the adapter as it steps any env; what each agent sees, earns and whether
it is still in play travel together in one Dict observation (so through the backend's
shared memory), with the agents along the first axis in ``possible_agents`` order:

- ``obs`` ``(A, *shape)``: each agent's observation; zeros for an agent not in play.
- ``rewards`` float32 ``(A,)``, ``dones`` / ``truncated`` bool ``(A,)``: what the last
  step gave each agent (``truncated`` is ``truncated and not terminated``).
- ``terminal_obs`` ``(A, *shape)``: the last observation of each agent that left in the
  last step (zeros elsewhere).
- ``active`` bool ``(A,)``: the agents whose next action counts (those in ``env.agents``).

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

__all__ = ["ParallelEnvAdapter", "ROW_SPACES", "check_parallel_env"]

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
    from pettingzoo.utils.env import AECEnv, ParallelEnv

    if isinstance(env, ParallelEnv):
        return
    fix = AEC_FIX if isinstance(env, AECEnv) else ""
    raise TypeError(NOT_PARALLEL.format(what=f"a {type(env).__name__}", fix=fix))


def _common_space(env: Any, kind: str) -> spaces.Space:
    """The one ``kind`` ("observation" / "action") space of every agent; ValueError naming
    the first agent whose space differs."""
    get = getattr(env, f"{kind}_space")
    first = env.possible_agents[0]
    expected = get(first)
    for agent in env.possible_agents:
        space = get(agent)
        if space != expected:
            raise ValueError(SPACES_DIFFER.format(kind=kind, agent=agent, space=space, first=first,
                                                  expected=expected))
    if not isinstance(expected, ROW_SPACES):
        raise ValueError(NOT_A_ROW.format(agent=first, kind=kind, space=expected))
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
        >>> obs["obs"].shape, obs["active"].tolist()
        ((3, 18), [True, True, True])
        >>> obs, *_ = env.step(np.zeros(3, np.int64))
        >>> obs["rewards"].shape
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
        flags = spaces.Box(0, 1, (count,), np.bool_)
        self.observation_space = spaces.Dict({
            "obs": agent_obs, "rewards": spaces.Box(-np.inf, np.inf, (count,), np.float32),
            "dones": flags, "truncated": flags, "active": flags, "terminal_obs": agent_obs})
        self.action_space = batch_space(self.agent_action_space, count)
        self.render_mode = getattr(env, "render_mode", None)
        self.metadata = getattr(env, "metadata", {})
        self._agent_obs = agent_obs

    def _blank(self) -> dict[str, np.ndarray]:
        count = len(self.possible_agents)
        obs = np.zeros(self._agent_obs.shape, self._agent_obs.dtype)
        return {"obs": obs, "rewards": np.zeros(count, np.float32), "dones": np.zeros(count, np.bool_),
                "truncated": np.zeros(count, np.bool_), "active": np.zeros(count, np.bool_),
                "terminal_obs": np.zeros_like(obs)}

    def _put_reset(self, out: dict[str, np.ndarray], obs: dict[str, Any], infos: dict[str, Any],
                   info: dict[str, Any], key: str) -> None:
        """The first observations of an episode into ``out``; non-empty infos under ``key``."""
        slot = self._slot
        for agent in self.env.agents:
            a = slot[agent]
            out["obs"][a] = obs[agent]
            out["active"][a] = True
        agent_infos = {agent: i for agent, i in infos.items() if i}
        if agent_infos:
            info[key] = agent_infos

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        obs, infos = self.env.reset(seed=seed, options=options)
        out, info = self._blank(), {}
        self._put_reset(out, obs, infos, info, "agent_infos")
        return out, info

    def step(self, action: np.ndarray) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        slot, env = self._slot, self.env
        acting = list(env.agents)
        obs, rewards, terminated, truncated, infos = env.step({agent: action[slot[agent]] for agent in acting})
        out, info = self._blank(), {}
        in_play = env.agents
        for agent in in_play:
            a = slot[agent]
            out["obs"][a] = obs[agent]
            out["active"][a] = True
        for agent in acting:
            a = slot[agent]
            out["rewards"][a] = rewards.get(agent, 0.0)
            if agent not in in_play:  # left in this step
                out["dones"][a] = True
                out["truncated"][a] = truncated.get(agent, False) and not terminated.get(agent, False)
                if agent in obs:
                    out["terminal_obs"][a] = obs[agent]
        agent_infos = {agent: i for agent, i in infos.items() if i}
        if agent_infos:
            info["agent_infos"] = agent_infos
        if not in_play:
            self._put_reset(out, *env.reset(), info, "reset_agent_infos")
        return out, 0.0, False, False, info

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
