"""Atari on ale-py's C++ vector engine: ``ALEVecEnv``."""
from __future__ import annotations

from vec_envs.ale.ale_options import AtariOptions
from vec_envs.ale.ale_vec_env import ALEVecEnv, EngineLimitError

__all__ = ["ALEVecEnv", "AtariOptions", "EngineLimitError"]
