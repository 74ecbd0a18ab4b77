"""Envs that each do one thing wrong once vectorized, at module level so that spawned workers
import them (``check_env`` must find each one's fault, and only it)."""
from __future__ import annotations

import threading
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

__all__ = ["CountingEnv", "WrapsUint8", "BeyondFloat32", "GlobalRandom", "OwnTerminalObservation",
           "UnpicklableInfo", "RoundedToFloat32", "FloatFrames", "unpicklable_factory"]


class CountingEnv(gym.Env):
    """A seeded random walk of 3 float32 values; episodes of 10 steps (truncated)."""

    observation_space = spaces.Box(-100.0, 100.0, (3,), np.float32)
    action_space = spaces.Discrete(2)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict]:
        super().reset(seed=seed)
        self.t = 0
        self.pos = self.np_random.uniform(-1, 1, 3).astype(np.float32)
        return self.pos.copy(), {}

    def step(self, action: int) -> tuple[Any, float, bool, bool, dict]:
        self.t += 1
        self.pos += np.float32(action - 0.5) * self.np_random.uniform(0, 1, 3).astype(np.float32)
        return self.pos.copy(), float(action), False, self.t >= 10, {}


class WrapsUint8(CountingEnv):
    """Declares a uint8 Box; at its 4th step returns 300 in it."""

    observation_space = spaces.Box(0, 255, (3,), np.uint8)

    def reset(self, **kwargs: Any) -> tuple[Any, dict]:
        super().reset(**kwargs)
        return np.zeros(3, np.int64), {}

    def step(self, action: int) -> tuple[Any, float, bool, bool, dict]:
        _, reward, terminated, truncated, info = super().step(action)
        return np.array([self.t, 300 if self.t == 4 else 0, 1]), reward, terminated, truncated, info


class BeyondFloat32(CountingEnv):
    """Declares a float32 Box; returns float64 observations, one of them 1e39 at step 2."""

    observation_space = spaces.Box(-np.inf, np.inf, (3,), np.float32)

    def step(self, action: int) -> tuple[Any, float, bool, bool, dict]:
        obs, reward, terminated, truncated, info = super().step(action)
        out = obs.astype(np.float64)
        out[2] = 1e39 if self.t == 2 else 0.5
        return out, reward, terminated, truncated, info


class GlobalRandom(CountingEnv):
    """Adds a draw from NumPy's global generator to its reward."""

    def step(self, action: int) -> tuple[Any, float, bool, bool, dict]:
        obs, reward, terminated, truncated, info = super().step(action)
        return obs, reward + float(np.random.random()), terminated, truncated, info


class OwnTerminalObservation(CountingEnv):
    """Puts its own ``terminal_observation`` in its info at the end of an episode."""

    def step(self, action: int) -> tuple[Any, float, bool, bool, dict]:
        obs, reward, terminated, truncated, info = super().step(action)
        return obs, reward, terminated, truncated, ({"terminal_observation": obs} if truncated else info)


class UnpicklableInfo(CountingEnv):
    """Returns a lock in its info every step."""

    def step(self, action: int) -> tuple[Any, float, bool, bool, dict]:
        obs, reward, terminated, truncated, _ = super().step(action)
        return obs, reward, terminated, truncated, {"lock": threading.Lock()}


def unpicklable_factory() -> Any:
    """A factory that captures a lock: cloudpickle cannot send it to a spawned worker."""
    lock = threading.Lock()

    def make() -> gym.Env:
        with lock:
            return CountingEnv()

    return make


class RoundedToFloat32(CountingEnv):
    """Declares a float32 Box; returns float64 observations that float32 rounds."""

    def reset(self, **kwargs: Any) -> tuple[Any, dict]:
        obs, info = super().reset(**kwargs)
        return obs.astype(np.float64) + 0.1, info

    def step(self, action: int) -> tuple[Any, float, bool, bool, dict]:
        obs, reward, terminated, truncated, info = super().step(action)
        return obs.astype(np.float64) + 0.1, reward, terminated, truncated, info


class FloatFrames(CountingEnv):
    """Made with render_mode='rgb_array', but its frames are float64."""

    render_mode = "rgb_array"

    def render(self) -> Any:
        return np.zeros((4, 6, 3), np.float64)
