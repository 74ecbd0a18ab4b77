"""The envs the benchmarks step, built by name, and the workloads made of them.

A module of its own so that worker processes (spawn, forkserver, Ray actors) import the
env factories by reference instead of receiving them pickled by value. W1..W6 are sized
for a laptop (8, 16 or 64 envs); M1, M3, M4, M5 for a 16-64 core machine, on the same envs;
S16 is CartPole-v1 x 16, a size between W1's and W2's for the scaling plot; I1 (CartPole
with an info every step) and MA (simple_spread_v3, a row per agent) are the workloads of
the ``infos`` and ``multiagent`` commands.

The synthetic envs of known cost (stragglers, waiting, zero-cost) are ``vec_envs.timing.synthetic``'s.

Example:
    >>> WORKLOADS["W4"].title
    'ALE/Breakout-v5 (frameskip 1) + AtariPreprocessing 84x84 gray skip 4 + frame stack 4 x 8'
    >>> env = make_env("busy", index=0, spin_per_ms=1_000)
    >>> obs, info = env.reset(seed=0)
    >>> obs, reward, terminated, truncated, info = env.step(0)
    >>> obs
    array([1., 1., 1., 1.], dtype=float32)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from vec_envs.ale.games import import_ale
from vec_envs.timing.synthetic import StragglerEnv, WaitingEnv, ZeroCostEnv, calibrate_spin

__all__ = ["ENVS", "WORKLOADS", "Workload", "InfoEveryStep", "StragglerEnv", "WaitingEnv", "ZeroCostEnv",
           "SyntheticFrameEnv", "cartpole", "cartpole_with_infos", "spread", "make_env", "make_ale", "make_pong",
           "calibrate_spin"]

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
    """An env that returns one small info every step, as ALE's envs do with ``lives``.

    Example:
        >>> env = InfoEveryStep(gym.make("CartPole-v1"))
        >>> _ = env.reset(seed=0)
        >>> env.step(0)[4]
        {'lives': 3}
    """

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, _ = self.env.step(action)
        return obs, reward, terminated, truncated, {"lives": 3}


def cartpole_with_infos() -> gym.Env:
    """CartPole-v1 returning ``{"lives": 3}`` every step."""
    return InfoEveryStep(gym.make("CartPole-v1"))


def cartpole() -> gym.Env:
    """CartPole-v1 (importable by reference from worker processes)."""
    return gym.make("CartPole-v1")


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


def make_ale(env_id: str, **kwargs: Any) -> gym.Env:
    """``gym.make`` of an ALE id, with ale-py's envs registered in this process."""
    import_ale()
    return gym.make(env_id, **kwargs)


def make_pong() -> gym.Env:
    """ALE/Pong-v5 with frame skip 4 and 84x84 gray frames (no sticky actions)."""
    env = make_ale("ALE/Pong-v5", frameskip=1, repeat_action_probability=0.0)
    return gym.wrappers.AtariPreprocessing(env, frame_skip=4, screen_size=84, grayscale_obs=True,
                                           grayscale_newaxis=True)


def make_env(env: str, index: int = 0, spin_per_ms: int = 25_000, episode_length: int = 500) -> gym.Env:
    """Build env ``index`` of a batch of ``env`` (the same env for every method).

    Args:
        env: a key of ``ENVS``.
        index: the env's place in the batch (seeds the straggler work of ``busy``).
        spin_per_ms: ``busy`` only: loop iterations per millisecond of work.
        episode_length: ``zero`` only: steps per episode.

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
    if env == "waiting":
        return WaitingEnv(seed=index)
    if env == "cartpole-info":
        return cartpole_with_infos()
    if env == "zero":
        return ZeroCostEnv(episode_length)
    raise ValueError(f"make_env(): unknown env {env!r}; expected one of {list(ENVS)}")


@dataclass(frozen=True)
class Workload:
    """``num_envs`` copies of one env of this module.

    Attributes:
        key: short name on the command line (``W1`` .. ``W6``, ``M1`` .. ``M5``; ``I1`` and ``MA`` for the
            infos and multi-agent commands).
        env: the env's key in ``ENVS``.
        num_envs: envs in the batch.
        frame_stack: frames stacked over the batch after stepping (0: none).
    """

    key: str
    env: str
    num_envs: int
    frame_stack: int = 0

    @property
    def title(self) -> str:
        """What the table heading says."""
        stack = f" + frame stack {self.frame_stack}" if self.frame_stack else ""
        return f"{ENVS[self.env]}{stack} x {self.num_envs}"

    @property
    def many_core(self) -> bool:
        """Sized for a 16-64 core machine (the M workloads)."""
        return self.key.startswith("M")


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
