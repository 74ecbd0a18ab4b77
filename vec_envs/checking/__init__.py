"""Checks of an env before it is vectorized: ``check_env`` runs an env factory briefly, alone and
through every backend and autoreset mode, and reports what the env would do wrong in a VecEnv
(values its batch cannot hold, rows that differ between backends, infos that collide or cannot
be sent, ...), each finding with what to change.

Example:
    >>> import gymnasium as gym
    >>> from functools import partial
    >>> if __name__ == "__main__":
    ...     print(check_env(partial(gym.make, "CartPole-v1"), steps=20).exit_status)
    0
"""
from __future__ import annotations

from vec_envs.checking.check_env import check_env
from vec_envs.checking.report import CheckReport, CheckRow, Finding

__all__ = ["check_env", "CheckReport", "CheckRow", "Finding"]
