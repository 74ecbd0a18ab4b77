"""The Atari preprocessing where users import it: ``make_atari_env``, ``make_atari``,
``wrap_deepmind``, the single-env wrappers and ``EpisodeMonitor``.

They live in the Atari room, ``vec_envs.ale`` (``deepmind_wrappers.py``, ``make_atari_env.py``),
beside ``ALEVecEnv``, because ``make_atari_env`` builds either from the same options.

Example:
    >>> from vec_envs.wrappers import VecFrameStack
    >>> with VecFrameStack(make_atari_env("Breakout", n_envs=2, seed=0), n_stack=4) as venv:
    ...     venv.reset().shape
    (2, 84, 84, 4)
"""
from __future__ import annotations

from vec_envs.ale.deepmind_wrappers import (
    ClipRewardEnv,
    EpisodicLifeEnv,
    FireResetEnv,
    MaxAndSkipEnv,
    NoopResetEnv,
    WarpFrame,
    make_atari,
    wrap_deepmind,
)
from vec_envs.ale.make_atari_env import make_atari_env
from vec_envs.monitoring.episode_monitor import EpisodeMonitor

__all__ = [
    "NoopResetEnv",
    "FireResetEnv",
    "EpisodicLifeEnv",
    "MaxAndSkipEnv",
    "WarpFrame",
    "ClipRewardEnv",
    "EpisodeMonitor",
    "make_atari",
    "wrap_deepmind",
    "make_atari_env",
]
