"""Small deterministic envs for the tests (module level, so spawned workers can import them)."""
from __future__ import annotations

import functools
import os
import time

import gymnasium as gym
import numpy as np
from gymnasium import spaces


class SeededEnv(gym.Env):
    """Random observations from the reset seed; the episode ends after ``length`` steps.

    Reward = action + step count. ``truncate=True`` ends episodes by truncation instead.
    """

    metadata = {"render_modes": ["rgb_array"]}

    def __init__(self, length: int = 5, truncate: bool = False, shape: tuple = (3,), render_mode=None):
        self.length, self.truncate = length, truncate
        self.observation_space = spaces.Box(-1.0, 1.0, shape, np.float32)
        self.action_space = spaces.Discrete(3)
        self.render_mode = render_mode
        self.t = 0
        self.rng = np.random.default_rng()
        self.resets = 0

    def _obs(self):
        return self.rng.uniform(-1, 1, self.observation_space.shape).astype(np.float32)

    def reset(self, *, seed=None, options=None):
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.t = 0
        self.resets += 1
        return self._obs(), {"reset_count": self.resets}

    def step(self, action):
        self.t += 1
        ended = self.t >= self.length
        info = {"t": self.t} if self.t % 2 == 0 else {}
        terminated, truncated = (False, ended) if self.truncate else (ended, False)
        return self._obs(), float(action) + self.t, terminated, truncated, info

    def render(self):
        value = int(self.rng.integers(0, 255)) if self.render_mode == "rgb_array" else None
        return None if value is None else np.full((6, 8, 3), value, np.uint8)

    def ping(self, x, scale=1):
        return ("pong", x * scale)


class QuietEnv(SeededEnv):
    """A SeededEnv whose step infos are all empty and whose reset info is empty on every
    other reset: an auto-reset must still replace the previous reset info."""

    def reset(self, *, seed=None, options=None):
        obs, info = super().reset(seed=seed, options=options)
        return obs, info if self.resets % 2 else {}

    def step(self, action):
        obs, reward, terminated, truncated, _ = super().step(action)
        return obs, reward, terminated, truncated, {}


class OptionsEnv(SeededEnv):
    """A SeededEnv whose reset info says which options it was reset with (None: none)."""

    def reset(self, *, seed=None, options=None):
        obs, info = super().reset(seed=seed, options=options)
        return obs, {**info, "options": options}


class DictObsEnv(gym.Env):
    """Nested Dict / Tuple observations over every leaf kind."""

    def __init__(self, length: int = 4):
        self.length = length
        self.observation_space = spaces.Dict({
            "pos": spaces.Box(-1.0, 1.0, (2, 2), np.float32),
            "nested": spaces.Dict({
                "count": spaces.Discrete(100),
                "pair": spaces.Tuple((spaces.MultiBinary(3), spaces.MultiDiscrete([4, 5]))),
            }),
        })
        self.action_space = spaces.Box(-1.0, 1.0, (2,), np.float32)
        self.rng = np.random.default_rng()
        self.t = 0

    def _obs(self):
        return {
            "pos": self.rng.uniform(-1, 1, (2, 2)).astype(np.float32),
            "nested": {
                "count": int(self.rng.integers(0, 100)),
                "pair": (self.rng.integers(0, 2, 3).astype(np.int8), self.rng.integers(0, 4, 2)),
            },
        }

    def reset(self, *, seed=None, options=None):
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.t = 0
        return self._obs(), {}

    def step(self, action):
        self.t += 1
        return self._obs(), float(np.sum(action)), self.t >= self.length, False, {}


class OldApiEnv:
    """An env written against the old gym API: 4-tuple step, reset() -> obs, seed()."""

    def __init__(self, length: int = 3):
        self.length = length
        self.observation_space = spaces.Box(0.0, 100.0, (1,), np.float32)
        self.action_space = spaces.Discrete(2)
        self.offset = 0
        self.t = 0

    def seed(self, seed=None):
        self.offset = 0 if seed is None else seed
        return [seed]

    def reset(self):
        self.t = 0
        return np.array([self.offset], np.float32)

    def step(self, action):
        self.t += 1
        done = self.t >= self.length
        info = {"TimeLimit.truncated": True} if done and self.length > 2 else {}
        return np.array([self.offset + self.t], np.float32), 1.0, done, info

    def render(self, mode="human"):
        return np.zeros((4, 4, 3), np.uint8)

    def close(self):
        pass


class ColorEnv(gym.Env):
    """Renders a solid frame of its own color, with a marker pixel pattern."""

    metadata = {"render_modes": ["rgb_array"]}

    def __init__(self, color=(255, 0, 0), size=(40, 60)):
        self.color, self.size = color, size
        self.render_mode = "rgb_array"
        self.observation_space = spaces.Box(0, 255, (1,), np.uint8)
        self.action_space = spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        return np.zeros(1, np.uint8), {}

    def step(self, action):
        return np.zeros(1, np.uint8), 0.0, False, False, {}

    def render(self):
        frame = np.empty((*self.size, 3), np.uint8)
        frame[:] = self.color
        frame[: self.size[0] // 4, : self.size[1] // 4] = (255, 255, 255)
        return frame


class FaultyEnv(SeededEnv):
    """Fails in ``where`` ("init", "reset", "step", "render", "close", "kill", "exit",
    "hang"); step failures come after ``after`` successful steps."""

    def __init__(self, where: str, after: int = 2, length: int = 1000):
        if where == "init":
            raise RuntimeError("FaultyEnv refuses to be built")
        super().__init__(length=length, render_mode="rgb_array")
        self.where, self.after, self.steps = where, after, 0

    def reset(self, *, seed=None, options=None):
        if self.where == "reset":
            raise RuntimeError("FaultyEnv fails in reset")
        return super().reset(seed=seed, options=options)

    def step(self, action):
        self.steps += 1
        if self.steps > self.after:
            self._fail()
        return super().step(action)

    def _fail(self):
        if self.where == "step":
            raise RuntimeError("FaultyEnv fails in step")
        if self.where == "kill":
            os.kill(os.getpid(), 9)
        if self.where == "exit":
            os._exit(7)
        if self.where == "hang":
            time.sleep(3600)

    def render(self):
        if self.where == "render":
            raise RuntimeError("FaultyEnv fails in render")
        return super().render()

    def close(self):
        if self.where == "close":
            raise RuntimeError("FaultyEnv fails in close")


class BadShapeEnv(SeededEnv):
    """Returns an observation of the wrong shape from step ``after`` on."""

    def __init__(self, after: int = 1):
        super().__init__(length=1000)
        self.after, self.steps = after, 0

    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        self.steps += 1
        if self.steps >= self.after:
            obs = np.zeros(2, np.float32)
        return obs, reward, terminated, truncated, info


class BatchEnv(gym.Env):
    """An env that is itself a vectorised simulator: ``n`` SeededEnvs in a VecEnv of
    ``vec_env`` ("subproc" or "dummy") built in its own process; actions and observations
    carry a row per inner env, the reward is their sum."""

    def __init__(self, vec_env: str = "subproc", n: int = 2, context=None):
        from vec_envs import DummyVecEnv, SubprocVecEnv

        fns = [functools.partial(SeededEnv, length=4 + k) for k in range(n)]
        self.venv = SubprocVecEnv(fns, in_series=1, context=context) if vec_env == "subproc" else DummyVecEnv(fns)
        self.observation_space = spaces.Box(-1.0, 1.0, (n, 3), np.float32)
        self.action_space = spaces.MultiDiscrete([3] * n)

    def reset(self, *, seed=None, options=None):
        if seed is not None:
            self.venv.seed(seed)
        return self.venv.reset(), {}

    def step(self, action):
        obs, rewards, dones, _ = self.venv.step(np.asarray(action))
        return obs, float(rewards.sum()), False, False, {}

    def pids(self):
        """This process and the processes it started."""
        import psutil

        me = psutil.Process()
        return [me.pid] + [p.pid for p in me.children(recursive=True)]

    def close(self):
        self.venv.close()


class WaitingEnv(gym.Env):
    """Each step takes a random 0-``max_ms`` ms, sleeping (an env that waits on I/O) or,
    with ``busy``, computing; observations count the env's steps."""

    observation_space = spaces.Box(0, np.inf, (1,), np.float32)
    action_space = spaces.Discrete(2)

    def __init__(self, max_ms: float = 2.0, busy: bool = False):
        self.max_s, self.busy, self.t = max_ms / 1000, busy, 0
        self.rng = np.random.default_rng()

    def reset(self, *, seed=None, options=None):
        self.rng = np.random.default_rng(seed)
        self.t = 0
        return np.zeros(1, np.float32), {}

    def step(self, action):
        seconds = self.rng.uniform(0, self.max_s)
        if self.busy:
            end = time.perf_counter() + seconds
            while time.perf_counter() < end:
                pass
        else:
            time.sleep(seconds)
        self.t += 1
        return np.full(1, self.t, np.float32), 1.0, False, False, {}
