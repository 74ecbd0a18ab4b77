"""Atari in one room: ale-py's games, the DeepMind preprocessing, ``make_atari_env``,
``ALEVecEnv`` (ale-py's C++ vector engine) and ALE's snapshots.

- ``games.py``: ``import_ale`` (the one import of ale-py) and ``resolve_game`` (the one way
  a game is named, for ale-py and gymnasium alike);
- ``deepmind_wrappers.py``: the preprocessing of one env: ``make_atari``, its gymnasium
  wrappers and ``wrap_deepmind``;
- ``make_atari_env.py``: ``make_atari_env``, those envs on any backend, or the same options
  on ``ALEVecEnv``;
- ``ale_vec_env.py``: ``ALEVecEnv``, with its options (``ale_options.py``) and its per-env
  scores and infos (``episode_tracker.py``);
- ``ale_snapshot.py``: exact snapshots of one ALE emulator, for planning on any backend.

``vec_envs.wrappers.atari`` is where users import the preprocessing (docs/contract.md); it re-exports it from here.
"""
from __future__ import annotations

from vec_envs.ale.ale_options import AtariOptions
from vec_envs.ale.ale_vec_env import ALEVecEnv, EngineLimitError
from vec_envs.ale.deepmind_wrappers import make_atari, wrap_deepmind
from vec_envs.ale.games import AtariGame, atari_games, import_ale, resolve_game
from vec_envs.ale.make_atari_env import make_atari_env

__all__ = ["ALEVecEnv", "AtariGame", "AtariOptions", "EngineLimitError", "atari_games", "import_ale",
           "make_atari", "make_atari_env", "resolve_game", "wrap_deepmind"]
