"""Envs of known cost, for timing a VecEnv: one that costs nothing (what the VecEnv itself
costs), one that computes a random 0.2-2 ms per step (stragglers), one that waits a random
0-2 ms per step (I/O, a simulator over a socket, a rate-limited game). The random amounts
are drawn once from the env's seed and cycled, so every backend does the same work.

Example:
    >>> env = StragglerEnv(seed=3, spin_per_ms=1_000, episode_length=2)
    >>> _ = env.reset()
    >>> [env.step(0)[2] for _ in range(2)]
    [False, True]
    >>> env = WaitingEnv(seed=3, episode_length=2)
    >>> _ = env.reset()
    >>> env.step(0)[0]
    array([1., 1., 1., 1.], dtype=float32)
    >>> ZeroCostEnv(episode_length=2).reset()[0].shape
    (4,)
    >>> calibrate_spin(iterations=1_000, tries=1) > 0
    True
"""
from __future__ import annotations

import statistics
import time
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

__all__ = ["STRAGGLER_MS", "WAITING_MS", "spin", "calibrate_spin", "StragglerEnv", "WaitingEnv", "ZeroCostEnv"]

STRAGGLER_MS = (0.2, 2.0)
WAITING_MS = (0.0, 2.0)
EPISODE = 200
Step = tuple[np.ndarray, float, bool, bool, dict[str, Any]]


def spin(iterations: int) -> int:
    """Burn CPU in pure Python (the GIL is held throughout)."""
    total = 0
    for i in range(iterations):
        total += i
    return total


def calibrate_spin(iterations: int = 50_000, tries: int = 7) -> int:
    """Iterations of ``spin`` per millisecond on this machine (median of ``tries``)."""
    seconds = []
    for _ in range(tries):
        start = time.perf_counter()
        spin(iterations)
        seconds.append(time.perf_counter() - start)
    return max(1, int(iterations / (statistics.median(seconds) * 1000)))


class StragglerEnv(gym.Env):
    """Each step burns a random 0.2-2 ms of pure-Python CPU work, counted in loop iterations.

    Args:
        seed: seeds the per-step amounts (give each env of a batch its own; None: fresh entropy).
        spin_per_ms: loop iterations per millisecond (``calibrate_spin()`` once per run).
        episode_length: steps until the episode terminates.
    """

    observation_space = spaces.Box(-np.inf, np.inf, (4,), np.float32)
    action_space = spaces.Discrete(2)

    def __init__(self, seed: int | None = 0, spin_per_ms: int = 25_000, episode_length: int = EPISODE) -> None:
        self.amounts = (np.random.default_rng(seed).uniform(*STRAGGLER_MS, 4096) * spin_per_ms).astype(int).tolist()
        self.episode_length, self.steps, self.t = episode_length, 0, 0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(4, np.float32), {}

    def work(self, amount: Any) -> None:
        """One step's work."""
        spin(amount)

    def step(self, action: int) -> Step:
        self.work(self.amounts[self.steps % len(self.amounts)])
        self.steps, self.t = self.steps + 1, self.t + 1
        return np.full(4, self.t, np.float32), 1.0, self.t >= self.episode_length, False, {}


class WaitingEnv(StragglerEnv):
    """Each step sleeps a random 0-2 ms: wall time and almost no CPU (see ``StragglerEnv``)."""

    def __init__(self, seed: int | None = 0, episode_length: int = EPISODE) -> None:
        super().__init__(seed, 1, episode_length)
        self.amounts = (np.random.default_rng(seed).uniform(*WAITING_MS, 4096) / 1e3).tolist()

    def work(self, amount: Any) -> None:
        time.sleep(amount)


class ZeroCostEnv(gym.Env):
    """CartPole's spaces and a step that does nothing: what a VecEnv itself costs per step.

    Args:
        episode_length: steps until the episode is truncated (an episode end costs a reset).
    """

    observation_space = spaces.Box(-1.0, 1.0, (4,), np.float32)
    action_space = spaces.Discrete(2)

    def __init__(self, episode_length: int = 500) -> None:
        self.obs, self.t, self.episode_length = np.zeros(4, np.float32), 0, episode_length

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        self.t = 0
        return self.obs, {}

    def step(self, action: int) -> Step:
        self.t += 1
        return self.obs, 1.0, False, self.t >= self.episode_length, {}
