"""The workloads of ``scripts/benchmark.py``: the envs it steps and how each is built.

A module of its own so that worker processes (spawn, forkserver, Ray actors) import the
env factories by name instead of receiving them pickled by value.

Example:
    >>> env = make_env("W5", index=0, spin_per_ms=25_000)   # doctest: +SKIP
    >>> obs, info = env.reset(seed=0)
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

import gymnasium as gym
import numpy as np
from gymnasium import spaces

__all__ = ["Workload", "WORKLOADS", "StragglerEnv", "make_env", "calibrate_spin"]


@dataclass(frozen=True)
class Workload:
    """One benchmark workload: ``num_envs`` copies of one env.

    Attributes:
        key: short name used on the command line (``W1`` .. ``W5``).
        title: what the table heading says.
        num_envs: batch size.
        frame_stack: frames stacked over the batch after stepping (0: none).
        target: the goal for "best of ours / gymnasium SyncVectorEnv".
    """

    key: str
    title: str
    num_envs: int
    frame_stack: int = 0
    target: float = 1.0


WORKLOADS: dict[str, Workload] = {w.key: w for w in [
    Workload("W1", "CartPole-v1 x 8", 8, target=1.5),
    Workload("W2", "CartPole-v1 x 64", 64, target=1.5),
    Workload("W3", "ALE/Pong-v5 (frameskip 4, 210x160x3 RGB) x 8", 8, target=2.0),
    Workload("W4", "ALE/Breakout-v5 (frameskip 1) + AtariPreprocessing 84x84 gray skip 4 "
                   "+ frame stack 4 x 8", 8, frame_stack=4, target=1.9),
    Workload("W5", "synthetic straggler env (0.2-2 ms pure-Python work per step) x 8", 8,
             target=1.9),
]}

STRAGGLER_MS = (0.2, 2.0)
STRAGGLER_EPISODE = 200


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
    return int(iterations / (statistics.median(seconds) * 1000))


class StragglerEnv(gym.Env):
    """Each step burns a random 0.2-2 ms of pure-Python CPU work: a mix of stragglers.

    The work per step is a count of loop iterations, drawn once from ``seed`` and cycled,
    so every method does exactly the same work whatever the CPU contention.

    Args:
        seed: seeds the per-step amounts of work (give each env of a batch its own).
        spin_per_ms: loop iterations per millisecond (``calibrate_spin()`` once per run).
        episode_length: steps until the episode terminates.

    Example:
        >>> env = StragglerEnv(seed=3, spin_per_ms=25_000)   # doctest: +SKIP
        >>> obs, reward, terminated, truncated, info = env.step(0)
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

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self._t = 0
        return np.zeros(4, np.float32), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        spin(self._work[self._steps % len(self._work)])
        self._steps += 1
        self._t += 1
        obs = np.full(4, self._t, np.float32)
        return obs, 1.0, self._t >= self._episode_length, False, {}


def _make_ale(env_id: str, **kwargs: object) -> gym.Env:
    try:
        import ale_py
    except ImportError as exc:
        raise ImportError(f'{env_id} needs ale-py: pip install -e ".[atari]"') from exc
    gym.register_envs(ale_py)
    return gym.make(env_id, **kwargs)


def make_env(workload: str, index: int = 0, spin_per_ms: int = 25_000) -> gym.Env:
    """Build env ``index`` of ``workload`` (the same env for every method).

    Args:
        workload: ``W1`` .. ``W5``.
        index: the env's place in the batch (seeds the straggler work of W5).
        spin_per_ms: W5 only: loop iterations per millisecond of work.

    Returns:
        The gymnasium env, wrapped as ``gym.make`` wraps it.
    """
    if workload in ("W1", "W2"):
        return gym.make("CartPole-v1")
    if workload == "W3":
        return _make_ale("ALE/Pong-v5")
    if workload == "W4":
        env = _make_ale("ALE/Breakout-v5", frameskip=1)
        return gym.wrappers.AtariPreprocessing(env, frame_skip=4, screen_size=84, grayscale_obs=True,
                                               grayscale_newaxis=True)
    if workload == "W5":
        return StragglerEnv(seed=index, spin_per_ms=spin_per_ms)
    raise ValueError(f"make_env(): unknown workload {workload!r}; expected one of {list(WORKLOADS)}")
