"""Small PettingZoo ParallelEnvs for the multi-agent tests, and the hand loop they are checked against."""
from __future__ import annotations

import functools
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo.utils.env import ParallelEnv

AGENTS = ["red", "green", "blue"]


class Relay(ParallelEnv):
    """Three agents whose episodes end at different, seed-dependent times.

    Each agent draws its own lifetime at reset (2-6 steps); at its last step it is
    terminated (even lifetimes) or truncated (odd ones) and leaves while the others go on.
    The env is over when none is left. Observations carry the step, the agent and a
    random draw; rewards depend on the action, so a wrong action routing shows.
    "green" reports a non-empty info on odd steps; every agent reports one at reset.
    """

    metadata = {"name": "relay_v0", "render_modes": ["rgb_array"]}

    def __init__(self, obs_shape: tuple[int, ...] = (3,), crash_at: int | None = None,
                 render_mode: str | None = None) -> None:
        self.possible_agents = list(AGENTS)
        self.agents: list[str] = []
        self._obs_space = spaces.Box(-np.inf, np.inf, obs_shape, np.float32)
        self._action_space = spaces.Discrete(3)
        self.crash_at = crash_at  # raise in step() when an action equals this value at step 3
        self.render_mode = render_mode
        self.rng = np.random.default_rng()
        self.t = 0
        self.lifetimes: dict[str, int] = {}

    def observation_space(self, agent: str) -> spaces.Space:
        return self._obs_space

    def action_space(self, agent: str) -> spaces.Space:
        return self._action_space

    def _obs(self, agent: str) -> np.ndarray:
        obs = np.zeros(self._obs_space.shape, np.float32)
        obs.flat[0] = self.t
        obs.flat[1] = AGENTS.index(agent)
        obs.flat[2] = self.rng.random()
        return obs

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.t = 0
        self.agents = list(self.possible_agents)
        self.lifetimes = {agent: int(self.rng.integers(2, 7)) for agent in self.agents}
        return {a: self._obs(a) for a in self.agents}, {a: {"lifetime": self.lifetimes[a]} for a in self.agents}

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        if set(actions) != set(self.agents):
            raise ValueError(f"actions for {sorted(actions)}, agents in play {sorted(self.agents)}")
        if self.crash_at is not None and self.t == 3 and self.crash_at in [int(a) for a in actions.values()]:
            raise RuntimeError("Relay: crash on purpose")
        self.t += 1
        rewards = {a: float(int(actions[a]) * (AGENTS.index(a) + 1)) + self.rng.random() for a in self.agents}
        ended = {a: self.t >= self.lifetimes[a] for a in self.agents}
        terminated = {a: ended[a] and self.lifetimes[a] % 2 == 0 for a in self.agents}
        truncated = {a: ended[a] and self.lifetimes[a] % 2 == 1 for a in self.agents}
        obs = {a: self._obs(a) for a in self.agents}
        infos = {a: ({"t": self.t} if a == "green" and self.t % 2 else {}) for a in self.agents}
        self.agents = [a for a in self.agents if not ended[a]]
        return obs, rewards, terminated, truncated, infos

    def lifetime(self, agent: str) -> int:
        return self.lifetimes[agent]

    def render(self) -> np.ndarray:
        frame = np.zeros((8, 8, 3), np.uint8)
        frame[:, :, 0] = self.t
        return frame


class Latecomer(Relay):
    """Relay whose "blue" agent is absent at reset and joins at step 2 with a fresh lifetime."""

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        obs, infos = super().reset(seed, options)
        self.agents.remove("blue")
        return {a: o for a, o in obs.items() if a != "blue"}, {a: i for a, i in infos.items() if a != "blue"}

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        obs, rewards, terminated, truncated, infos = super().step(actions)
        if self.t == 2 and "blue" not in self.agents:
            self.lifetimes["blue"] = self.t + 3
            self.agents.append("blue")
            obs["blue"] = self._obs("blue")
        return obs, rewards, terminated, truncated, infos


class MixedSpaces(Relay):
    """Relay whose "blue" agent sees a different observation space."""

    def observation_space(self, agent: str) -> spaces.Space:
        return spaces.Box(0, 1, (5,), np.float32) if agent == "blue" else self._obs_space


def relay(**kwargs: Any) -> functools.partial:
    return functools.partial(Relay, **kwargs)


def expected_step(env: Any, actions: np.ndarray, agents: list[str]) -> dict[str, Any]:
    """One step of one ParallelEnv by hand, as the rows of the API contract describe it."""
    count = len(agents)
    acting = list(env.agents)
    obs, rewards, terminated, truncated, infos = env.step({a: actions[agents.index(a)] for a in acting})
    shape = env.observation_space(agents[0]).shape
    out = {"obs": np.zeros((count, *shape), np.float32), "rewards": np.zeros(count, np.float32),
           "dones": np.zeros(count, bool), "active": np.zeros(count, bool),
           "terminal": {}, "truncated": {}, "infos": [{} for _ in agents]}
    for k, agent in enumerate(agents):
        if agent in acting:
            out["rewards"][k] = rewards[agent]
            out["infos"][k].update(infos.get(agent, {}))
        if agent in env.agents:
            out["obs"][k] = obs[agent]
            out["active"][k] = True
        elif agent in acting:
            out["dones"][k] = True
            out["terminal"][k] = obs[agent]
            out["truncated"][k] = bool(truncated[agent] and not terminated[agent])
    if not env.agents:
        first, _ = env.reset()
        for k, agent in enumerate(agents):
            if agent in env.agents:
                out["obs"][k] = first[agent]
                out["active"][k] = True
    return out
