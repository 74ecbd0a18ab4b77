"""Small deterministic envs for the wrapper tests (module level: workers must import them)."""
from __future__ import annotations

from collections.abc import Sequence

import gymnasium as gym
import numpy as np
from gymnasium import spaces


def frame_value(t: int, channel: int, env_offset: int = 0) -> int:
    """The pixel value FrameEnv shows at step ``t`` in ``channel`` (never 0)."""
    return 1 + env_offset + 10 * t + channel


class FrameEnv(gym.Env):
    """Image frames whose every pixel tells the step and the channel: ``frame_value(t, c)``.

    Episodes last ``length`` steps (``t`` = 0 at reset); the reward of step ``t`` is ``t``,
    its info ``{"step": t}``.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 15}

    def __init__(self, length: int = 4, shape: Sequence[int] = (4, 5, 3), channels_first: bool = False,
                 env_offset: int = 0):
        self.length, self.channels_first, self.env_offset = length, channels_first, env_offset
        self.frame_shape = tuple(shape)
        self.observation_space = spaces.Box(0, 255, self.frame_shape, np.uint8)
        self.action_space = spaces.Discrete(2)
        self.render_mode = "rgb_array"
        self.t = 0

    def _frame(self) -> np.ndarray:
        axis = 0 if self.channels_first else 2
        channels = self.frame_shape[axis]
        values = np.array([frame_value(self.t, c, self.env_offset) for c in range(channels)], np.uint8)
        shape = [1, 1, 1]
        shape[axis] = channels
        return np.broadcast_to(values.reshape(shape), self.frame_shape).copy()

    def _obs(self):
        return self._frame()

    def reset(self, *, seed=None, options=None):
        self.t = 0
        return self._obs(), {}

    def step(self, action):
        self.t += 1
        return self._obs(), float(self.t), self.t >= self.length, False, {"step": self.t}

    def render(self):
        frame = np.zeros((10, 14, 3), np.uint8)
        frame[:, :, 0] = min(255, 20 * self.t)
        return frame


class DictFrameEnv(FrameEnv):
    """FrameEnv's frame under "image", plus a float vector ``[t, -t]`` under "vec"."""

    def __init__(self, length: int = 4, shape: Sequence[int] = (4, 5, 3)):
        super().__init__(length, shape)
        self.observation_space = spaces.Dict({
            "image": spaces.Box(0, 255, tuple(shape), np.uint8),
            "vec": spaces.Box(-np.inf, np.inf, (2,), np.float32),
        })

    def _obs(self) -> dict:
        return {"image": self._frame(), "vec": np.array([self.t, -self.t], np.float32)}


class ScriptedEnv(gym.Env):
    """Plays ``rewards`` in order; an episode ends after each step listed in ``ends``
    (steps counted from 0 over the env's life; a seeded reset restarts the script).

    Observations are random (seeded at reset) with shape ``shape``, scaled by ``scale``
    and shifted by ``shift``, so their statistics are far from 0 / 1.
    """

    def __init__(self, rewards: Sequence[float], ends: Sequence[int] = (), shape: Sequence[int] = (3,),
                 scale: float = 5.0, shift: float = 2.0):
        self.rewards, self.ends = list(rewards), set(ends)
        self.scale, self.shift = scale, shift
        self.observation_space = spaces.Box(-np.inf, np.inf, tuple(shape), np.float32)
        self.action_space = spaces.Discrete(2)
        self.rng = np.random.default_rng(0)
        self.k = 0

    def _obs(self) -> np.ndarray:
        noise = self.rng.standard_normal(self.observation_space.shape)
        return (noise * self.scale + self.shift).astype(np.float32)

    def reset(self, *, seed=None, options=None):
        if seed is not None:
            self.rng = np.random.default_rng(seed)
            self.k = 0
        return self._obs(), {}

    def step(self, action):
        reward = self.rewards[self.k % len(self.rewards)]
        done = self.k in self.ends
        self.k += 1
        return self._obs(), float(reward), done, False, {}


class NanEnv(gym.Env):
    """Dict observations {"pos": float (2,), "count": int}; from step ``bad_step`` on, the
    field ``field`` ("pos", "reward" or "terminal") holds ``value`` (NaN or inf);
    ``bad_step=0`` with field "pos" makes the reset observation bad too."""

    def __init__(self, bad_step: int = 10**9, field: str = "pos", value: float = float("nan"), length: int = 100):
        self.bad_step, self.field, self.value, self.length = bad_step, field, value, length
        self.observation_space = spaces.Dict({
            "pos": spaces.Box(-np.inf, np.inf, (2,), np.float32),
            "count": spaces.Discrete(1000),
        })
        self.action_space = spaces.Box(-1.0, 1.0, (1,), np.float32)
        self.t = 0

    def _obs(self, bad: bool) -> dict:
        pos = np.full(2, self.value if bad else 0.5, np.float32)
        return {"pos": pos, "count": self.t}

    def reset(self, *, seed=None, options=None):
        self.t = 0
        return self._obs(self.bad_step <= 0 and self.field == "pos"), {}

    def step(self, action):
        self.t += 1
        bad = self.t >= self.bad_step
        done = self.t >= self.length
        obs = self._obs(bad and (self.field == "pos" or (self.field == "terminal" and done)))
        reward = self.value if bad and self.field == "reward" else 1.0
        return obs, reward, done, False, {}
