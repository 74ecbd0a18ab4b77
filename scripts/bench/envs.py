"""The envs the benchmarks step, built by name.

A module of its own so that worker processes (spawn, forkserver, Ray actors) import the
env factories by reference instead of receiving them pickled by value.

Example:
    >>> env = make_env("busy", index=0, spin_per_ms=1_000)
    >>> obs, info = env.reset(seed=0)
    >>> obs, reward, terminated, truncated, info = env.step(0)
    >>> obs
    array([1., 1., 1., 1.], dtype=float32)
"""
from __future__ import annotations

import statistics
import time
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

__all__ = ["ENVS", "StragglerEnv", "make_env", "make_ale", "calibrate_spin"]

ENVS = {
    "cartpole": "CartPole-v1",
    "pong": "ALE/Pong-v5 (frame skip 4, 210x160x3 RGB)",
    "breakout": "ALE/Breakout-v5 (frameskip 1) + AtariPreprocessing 84x84 gray skip 4",
    "busy": "synthetic straggler env (0.2-2 ms pure-Python work per step)",
}
STRAGGLER_MS = (0.2, 2.0)
STRAGGLER_EPISODE = 200


def spin(iterations: int) -> int:
    """Burn CPU in pure Python (the GIL is held throughout)."""
    total = 0
    for i in range(iterations):
        total += i
    return total


def calibrate_spin(iterations: int = 50_000, tries: int = 7) -> int:
    """Iterations of ``spin`` per millisecond on this machine (median of ``tries``).

    Example:
        >>> calibrate_spin(iterations=1_000, tries=1) > 0
        True
    """
    seconds = []
    for _ in range(tries):
        start = time.perf_counter()
        spin(iterations)
        seconds.append(time.perf_counter() - start)
    return max(1, int(iterations / (statistics.median(seconds) * 1000)))


class StragglerEnv(gym.Env):
    """Each step burns a random 0.2-2 ms of pure-Python CPU work: a mix of stragglers.

    The work per step is a count of loop iterations, drawn once from ``seed`` and cycled,
    so every method does exactly the same work whatever the CPU contention.

    Args:
        seed: seeds the per-step amounts of work (give each env of a batch its own).
        spin_per_ms: loop iterations per millisecond (``calibrate_spin()`` once per run).
        episode_length: steps until the episode terminates.

    Example:
        >>> env = StragglerEnv(seed=3, spin_per_ms=1_000, episode_length=2)
        >>> _ = env.reset()
        >>> [env.step(0)[2] for _ in range(2)]
        [False, True]
    """

    def __init__(self, seed: int = 0, spin_per_ms: int = 25_000,
                 episode_length: int = STRAGGLER_EPISODE) -> None:
        self.observation_space = spaces.Box(-np.inf, np.inf, (4,), np.float32)
        self.action_space = spaces.Discrete(2)
        low, high = STRAGGLER_MS
        millis = np.random.default_rng(seed).uniform(low, high, 4096)
        self._work = (millis * spin_per_ms).astype(int).tolist()
        self._episode_length = episode_length
        self._steps = 0
        self._t = 0

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        self._t = 0
        return np.zeros(4, np.float32), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        spin(self._work[self._steps % len(self._work)])
        self._steps += 1
        self._t += 1
        obs = np.full(4, self._t, np.float32)
        return obs, 1.0, self._t >= self._episode_length, False, {}


def make_ale(env_id: str, **kwargs: Any) -> gym.Env:
    """``gym.make`` of an ALE id, with ale-py's envs registered in this process."""
    try:
        import ale_py
    except ImportError as exc:
        raise ImportError(f'{env_id} needs ale-py: pip install -e ".[atari]"') from exc
    gym.register_envs(ale_py)
    return gym.make(env_id, **kwargs)


def make_env(env: str, index: int = 0, spin_per_ms: int = 25_000) -> gym.Env:
    """Build env ``index`` of a batch of ``env`` (the same env for every method).

    Args:
        env: a key of ``ENVS``.
        index: the env's place in the batch (seeds the straggler work of ``busy``).
        spin_per_ms: ``busy`` only: loop iterations per millisecond of work.

    Returns:
        The gymnasium env, wrapped as ``gym.make`` wraps it.
    """
    if env == "cartpole":
        return gym.make("CartPole-v1")
    if env == "pong":
        return make_ale("ALE/Pong-v5")
    if env == "breakout":
        atari = make_ale("ALE/Breakout-v5", frameskip=1)
        return gym.wrappers.AtariPreprocessing(atari, frame_skip=4, screen_size=84,
                                               grayscale_obs=True, grayscale_newaxis=True)
    if env == "busy":
        return StragglerEnv(seed=index, spin_per_ms=spin_per_ms)
    raise ValueError(f"make_env(): unknown env {env!r}; expected one of {list(ENVS)}")
