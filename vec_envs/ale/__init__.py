"""Atari in one room: ale-py's games, ``ALEVecEnv`` (its C++ vector engine) and ALE's snapshots.

- ``games.py``: ``import_ale`` (the one import of ale-py) and ``resolve_game`` (the one way
  a game is named, for ale-py and gymnasium alike);
- ``ale_vec_env.py``: ``ALEVecEnv``, with its options (``ale_options.py``) and its per-env
  scores and infos (``episode_tracker.py``);
- ``ale_snapshot.py``: exact snapshots of one ALE emulator, for planning on any backend.
"""
from __future__ import annotations

from vec_envs.ale.ale_options import AtariOptions
from vec_envs.ale.ale_vec_env import ALEVecEnv, EngineLimitError
from vec_envs.ale.games import AtariGame, atari_games, import_ale, resolve_game

__all__ = ["ALEVecEnv", "AtariGame", "AtariOptions", "EngineLimitError", "atari_games", "import_ale",
           "resolve_game"]
