"""Envs that return wrong things on purpose, for the fault and misuse tests (module level, so
spawned workers can import them)."""
from __future__ import annotations

import os
import time

import gymnasium as gym
import numpy as np
from gymnasium import spaces

#: what ``OutputEnv`` returns at a step, by name: (obs, reward, terminated, truncated, info)
GOOD = (np.zeros(2, np.uint8), 1.0, False, False, {})
BAD_STEP_OUTPUTS = {
    "reward-none": (GOOD[0], None, False, False, {}),
    "reward-text": (GOOD[0], "1.0", False, False, {}),
    "reward-array": (GOOD[0], np.ones(3), False, False, {}),
    "terminated-array": (GOOD[0], 1.0, np.array([True, False]), False, {}),
    "truncated-text": (GOOD[0], 1.0, False, "no", {}),
    "info-list": (GOOD[0], 1.0, False, False, []),
    "obs-out-of-range": (np.array([300, -1]), 1.0, False, False, {}),
    "obs-negative": (np.array([1, -1]), 1.0, False, False, {}),
    "obs-fraction": (np.array([1.5, 2.0]), 1.0, False, False, {}),
    "obs-nan": (np.array([np.nan, 2.0]), 1.0, False, False, {}),
    "obs-text": (np.array(["a", "b"]), 1.0, False, False, {}),
    "four-tuple": (GOOD[0], 1.0, False, {}),
}


class OutputEnv(gym.Env):
    """uint8 observations of shape (2,); at step ``t`` since reset (from 1) returns
    ``plan[t - 1]`` by name (``BAD_STEP_OUTPUTS``), a good step when the plan is used up."""

    def __init__(self, plan: tuple = (), reset_info: object = None):
        self.observation_space = spaces.Box(0, 255, (2,), np.uint8)
        self.action_space = spaces.Discrete(2)
        self.plan, self.reset_info, self.t = plan, reset_info, 0

    def reset(self, *, seed=None, options=None):
        self.t = 0
        return np.zeros(2, np.uint8), ({} if self.reset_info is None else self.reset_info)

    def step(self, action):
        self.t += 1
        name = self.plan[self.t - 1] if self.t <= len(self.plan) else "good"
        return GOOD if name == "good" else BAD_STEP_OUTPUTS[name]


class TextEnv(gym.Env):
    """Text observations (a space with no fixed size): ``e{index}-r`` at reset, then ``e{index}-{t}``."""

    def __init__(self, index: int = 0, length: int = 3):
        self.index, self.length, self.t = index, length, 0
        self.observation_space = spaces.Text(max_length=16)
        self.action_space = spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        self.t = 0
        return f"e{self.index}-r", {}

    def step(self, action):
        self.t += 1
        return f"e{self.index}-{self.t}", 1.0, self.t >= self.length, False, {}


class DictActionEnv(gym.Env):
    """Dict actions: a Discrete leaf and a Box (2,) leaf; the reward is the move."""

    def __init__(self):
        self.observation_space = spaces.Box(-1.0, 1.0, (1,), np.float32)
        self.action_space = spaces.Dict({"move": spaces.Discrete(3), "aim": spaces.Box(-1.0, 1.0, (2,), np.float32)})

    def reset(self, *, seed=None, options=None):
        return np.zeros(1, np.float32), {}

    def step(self, action):
        if set(action) != {"move", "aim"} or np.shape(action["aim"]) != (2,):
            raise AssertionError(f"the env received a malformed action {action!r}")
        return np.zeros(1, np.float32), float(action["move"]), False, False, {}


class UnpicklableInfoEnv(OutputEnv):
    """A good step whose info holds a lambda (which cannot be pickled) at step ``at``."""

    def __init__(self, at: int = 1):
        super().__init__()
        self.at = at

    def step(self, action):
        obs, reward, terminated, truncated, _ = super().step(action)
        return obs, reward, terminated, truncated, ({"callback": lambda: None} if self.t == self.at else {})


class SlowCloseEnv(OutputEnv):
    """``close()`` takes ``seconds`` (a hang, for the tests of close's deadline)."""

    def __init__(self, seconds: float = 3600.0):
        super().__init__()
        self.seconds = seconds

    def close(self):
        time.sleep(self.seconds)


class SlowStepEnv(OutputEnv):
    """Each step takes ``seconds`` (each reset ``reset_seconds``), asleep or, with ``busy``,
    computing; ``kill_at`` SIGKILLs its own process at that step."""

    def __init__(self, seconds: float = 0.0, kill_at: int = 0, reset_seconds: float = 0.0, busy: bool = False):
        super().__init__()
        self.seconds, self.kill_at, self.reset_seconds = seconds, kill_at, reset_seconds
        self.wait = _compute if busy else time.sleep

    def reset(self, *, seed=None, options=None):
        self.wait(self.reset_seconds)
        return super().reset(seed=seed, options=options)

    def step(self, action):
        result = super().step(action)
        if self.t == self.kill_at:
            os.kill(os.getpid(), 9)
        self.wait(self.seconds)
        return result


def _compute(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


class ForkingEnv(OutputEnv):
    """``reset()`` forks a helper process that sleeps ``seconds`` (it inherits what its
    process holds, as a simulator an env starts does) and exits with ``os._exit``."""

    def __init__(self, seconds: float = 40.0):
        super().__init__()
        self.seconds = seconds

    def reset(self, *, seed=None, options=None):
        if os.fork() == 0:
            time.sleep(self.seconds)
            os._exit(0)
        return super().reset(seed=seed, options=options)


class BigInfoEnv(OutputEnv):
    """Every step's info holds ``size`` float64 (``size * 8`` bytes): a message of any size."""

    def __init__(self, size: int = 131072):
        super().__init__()
        self.size = size

    def step(self, action):
        obs, reward, terminated, truncated, _ = super().step(action)
        return obs, reward, terminated, truncated, {"x": np.ones(self.size)}
