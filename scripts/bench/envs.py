"""The envs the benchmarks step, built by name (worker processes import the factories from here
by reference), and the workloads made of them: W1..W6 fit a laptop, M1, M3, M4, M5 a 16-64 core
machine; S16 sits between W1 and W2 for the scaling plot; I1 and MA serve the infos and multiagent commands.

Example:
    >>> WORKLOADS["W4"].title
    'ALE/Breakout-v5 (frameskip 1) + AtariPreprocessing 84x84 gray skip 4 + frame stack 4 x 8'
    >>> env = make_env("busy", index=0, spin_per_ms=1_000)
    >>> _ = env.reset(seed=0)
    >>> env.step(0)[0]
    array([1., 1., 1., 1.], dtype=float32)
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from vec_envs.ale.games import import_ale
from vec_envs.timing.synthetic import StragglerEnv, WaitingEnv, ZeroCostEnv, calibrate_spin

__all__ = ["ENVS", "WORKLOADS", "Workload", "InfoEveryStep", "StragglerEnv", "WaitingEnv", "ZeroCostEnv",
           "SyntheticFrameEnv", "spread", "make_env", "make_ale", "calibrate_spin"]

ENVS = {
    "cartpole": "CartPole-v1",
    "pong": "ALE/Pong-v5 (frame skip 4, 210x160x3 RGB)",
    "breakout": "ALE/Breakout-v5 (frameskip 1) + AtariPreprocessing 84x84 gray skip 4",
    "busy": "synthetic straggler env (0.2-2 ms pure-Python work per step)",
    "waiting": "synthetic waiting env (sleeps 0-2 ms per step)",
    "cartpole-info": "CartPole-v1 returning {'lives': 3} every step",
    "spread": "PettingZoo simple_spread_v3 (3 agents, 25-step episodes), a row per agent",
    "zero": "zero-cost env (a step does nothing)",
}


class InfoEveryStep(gym.Wrapper):
    """CartPole-v1 returning one small info every step, as ALE's envs do with ``lives``.

    Example:
        >>> env = InfoEveryStep()
        >>> _ = env.reset(seed=0)
        >>> env.step(0)[4]
        {'lives': 3}
    """

    def __init__(self) -> None:
        super().__init__(gym.make("CartPole-v1"))

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, _ = self.env.step(action)
        return obs, reward, terminated, truncated, {"lives": 3}


def spread() -> Any:
    """PettingZoo's ``simple_spread_v3`` ParallelEnv (mpe2): 3 agents, 25-step episodes."""
    from mpe2 import simple_spread_v3

    return simple_spread_v3.parallel_env(max_cycles=25)


class SyntheticFrameEnv(gym.Env):
    """84x84x1 uint8 frames cycled from a pre-drawn set: almost no work per step."""

    def __init__(self, episode_length: int = 1000, seed: int = 0) -> None:
        self.observation_space = spaces.Box(0, 255, (84, 84, 1), np.uint8)
        self.action_space = spaces.Discrete(6)
        self.frames = np.random.default_rng(seed).integers(0, 256, (16, 84, 84, 1), dtype=np.uint8)
        self.episode_length, self.t = episode_length, 0

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        self.t = 0
        return self.frames[0], {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        self.t += 1
        return self.frames[self.t % 16], float(self.t % 7 == 0), self.t >= self.episode_length, False, {}


def make_ale(env_id: str, preprocess: bool = False, **kwargs: Any) -> gym.Env:
    """``gym.make`` of an ALE id (ale-py's envs registered in this process); with ``preprocess``,
    frame skip 4 and 84x84 gray frames by ``AtariPreprocessing``."""
    import_ale()
    if not preprocess:
        return gym.make(env_id, **kwargs)
    return gym.wrappers.AtariPreprocessing(gym.make(env_id, frameskip=1, **kwargs), frame_skip=4, screen_size=84,
                                           grayscale_obs=True, grayscale_newaxis=True)


def make_env(env: str, index: int = 0, spin_per_ms: int = 25_000, episode_length: int = 500) -> gym.Env:
    """Env ``index`` of a batch of ``env`` (a key of ``ENVS``); ``index`` and ``spin_per_ms`` size the
    work of ``busy``, ``episode_length`` is ``zero``'s."""
    makers: dict[str, Callable[[], gym.Env]] = {
        "cartpole": lambda: gym.make("CartPole-v1"), "pong": lambda: make_ale("ALE/Pong-v5"),
        "breakout": lambda: make_ale("ALE/Breakout-v5", preprocess=True),
        "busy": lambda: StragglerEnv(seed=index, spin_per_ms=spin_per_ms), "waiting": lambda: WaitingEnv(seed=index),
        "cartpole-info": InfoEveryStep, "zero": lambda: ZeroCostEnv(episode_length)}
    if env not in makers:
        raise ValueError(f"make_env(): unknown env {env!r}; expected one of {list(ENVS)}")
    return makers[env]()


@dataclass(frozen=True)
class Workload:
    """``num_envs`` copies of the env ``env`` (a key of ``ENVS``), frames stacked over the batch
    after stepping when ``frame_stack`` > 0; ``key`` names it on the command line."""

    key: str
    env: str
    num_envs: int
    frame_stack: int = 0

    @property
    def title(self) -> str:
        stack = f" + frame stack {self.frame_stack}" if self.frame_stack else ""
        return f"{ENVS[self.env]}{stack} x {self.num_envs}"


WORKLOADS: dict[str, Workload] = {w.key: w for w in [
    Workload("W1", "cartpole", 8),
    Workload("W2", "cartpole", 64),
    Workload("W3", "pong", 8),
    Workload("W4", "breakout", 8, frame_stack=4),
    Workload("W5", "busy", 8),
    Workload("W6", "waiting", 16),
    Workload("I1", "cartpole-info", 8),
    Workload("MA", "spread", 8),
    Workload("M1", "cartpole", 256),
    Workload("M3", "pong", 32),
    Workload("M4", "breakout", 32, frame_stack=4),
    Workload("M5", "busy", 32),
    Workload("S16", "cartpole", 16),  # with W1, W2 and M1: CartPole-v1 at 8, 16, 64 and 256 envs (the scaling plot)
]}
