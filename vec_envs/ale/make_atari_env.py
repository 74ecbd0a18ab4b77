"""``make_atari_env``: ``n_envs`` Atari games with the DeepMind preprocessing, as one VecEnv.

On a backend that steps Python envs (``SubprocVecEnv`` by default) every env is
``make_atari`` -> ``EpisodeMonitor`` -> ``wrap_deepmind``: the monitor sits right on the
emulator, so ``info["episode"]`` reports the real game score (before reward clipping)
once per real game over, not at every lost life. A backend that preprocesses in its own
engine (``ALEVecEnv``, whose class sets ``preprocesses_atari``) gets the same options
by name instead of env factories.
"""
from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable
from typing import Any

import gymnasium as gym

from vec_envs.ale.deepmind_wrappers import make_atari, wrap_deepmind
from vec_envs.ale.games import resolve_game
from vec_envs.arguments import backend_kwargs, check_int
from vec_envs.monitoring.episode_monitor import EpisodeMonitor
from vec_envs.vec_env_base import VecEnvBase

__all__ = ["make_atari_env"]


def _build_atari_env(env_id: str, env_kwargs: dict[str, Any], wrapper_kwargs: dict[str, Any],
                     monitor_file: str | None) -> gym.Env:
    """One env of ``make_atari_env`` (module level: picklable by reference for any
    worker start method; ``make_atari`` imports ale_py in the worker itself)."""
    env = make_atari(env_id, **env_kwargs)
    env = EpisodeMonitor(env, monitor_file)
    return wrap_deepmind(env, **wrapper_kwargs)


def _env_fns(env_id: str, n_envs: int, env_kwargs: dict[str, Any], wrapper_kwargs: dict[str, Any],
             monitor_dir: str | None) -> list[Callable[[], gym.Env]]:
    """One picklable factory per env; env i writes ``<monitor_dir>/<i>.monitor.csv`` if given."""
    if monitor_dir is not None:
        os.makedirs(monitor_dir, exist_ok=True)
    monitor_files = [None if monitor_dir is None else os.path.join(monitor_dir, f"{i}.monitor.csv")
                     for i in range(n_envs)]
    return [functools.partial(_build_atari_env, env_id, env_kwargs, wrapper_kwargs, monitor_file)
            for monitor_file in monitor_files]


def _subproc_vec_env() -> Callable[..., VecEnvBase]:
    """The default backend, imported when it is the one used."""
    from vec_envs.subproc.subproc_vec_env import SubprocVecEnv

    return SubprocVecEnv


def _check_kwargs(fn: Callable[..., Any], kwargs: dict[str, Any], what: str) -> None:
    try:
        inspect.signature(fn).bind(None, **kwargs)
    except TypeError as exc:
        raise TypeError(f"make_atari_env: {what} {sorted(kwargs)} do not fit {fn.__name__}(): "
                        f"{exc}") from None


def _make_engine_venv(vec_env_cls: Any, rom: str, num_envs: int, seed: int | None,
                      vec_env_kwargs: dict[str, Any] | None, wrapper_kwargs: dict[str, Any],
                      env_kwargs: dict[str, Any], monitor_dir: str | None) -> VecEnvBase:
    """``make_atari_env`` for a backend that preprocesses in its own engine (``ALEVecEnv``):
    the same options, by name, without Python env factories."""
    if monitor_dir is not None:
        raise ValueError(f"make_atari_env: monitor_dir is not available with {vec_env_cls.__name__} (its envs "
                         f"are C++ emulators, no Python env writes a CSV); each game's real score is in "
                         f"infos[i]['episode'], or use vec_env_cls=SubprocVecEnv for per-env monitor files")
    kwargs = {**env_kwargs, **wrapper_kwargs, **(vec_env_kwargs or {})}
    return vec_env_cls(rom, num_envs, seed=seed, **kwargs)


def make_atari_env(env_id: str, n_envs: int = 1, seed: int | None = 0,
                   vec_env_cls: Callable[..., VecEnvBase] | None = None,
                   vec_env_kwargs: dict[str, Any] | None = None,
                   wrapper_kwargs: dict[str, Any] | None = None,
                   env_kwargs: dict[str, Any] | None = None,
                   monitor_dir: str | None = None, autoreset_mode: Any = None) -> VecEnvBase:
    """``n_envs`` preprocessed Atari envs as one VecEnv (no frame stacking: add
    ``VecFrameStack``).

    Every env reports ``infos[i]["episode"] = {"r", "l", "t"}`` at a real game over, with
    ``r`` the real game score (unclipped, summed over all lives).

    Args:
        env_id: a game name or Atari env id, by the rules of ``vec_envs.ale.games.resolve_game``:
            ``"Breakout"``, ``"BreakoutNoFrameskip-v4"`` or ``"ALE/Breakout-v5"``.
        n_envs: number of envs (the keyword of SB3's ``make_atari_env``).
        seed: env i is seeded with ``seed + i`` at the first ``reset()`` (None: random).
        vec_env_cls: the backend; default ``SubprocVecEnv``. ``ALEVecEnv`` takes the same
            ``wrapper_kwargs`` and ``env_kwargs`` and preprocesses in C++ (``vec_env_kwargs``
            may add ``frame_stack``, ``batch_size``, ``num_threads``).
        vec_env_kwargs: keyword arguments of the backend (``in_series``, ``context``, ...).
        wrapper_kwargs: keyword arguments of ``wrap_deepmind``.
        env_kwargs: keyword arguments of ``make_atari`` (``render_mode``,
            ``repeat_action_probability``, ...).
        monitor_dir: if given, env i writes ``<monitor_dir>/<i>.monitor.csv``.
        autoreset_mode: the backend's ``autoreset_mode`` (``"same_step"``, ``"next_step"``,
            ``"disabled"``; None: the backend's default, same-step, or ``vec_env_kwargs``'s).

    Example:
        >>> from vec_envs.wrappers import VecFrameStack
        >>> with VecFrameStack(make_atari_env("Breakout", n_envs=2, seed=0), n_stack=4) as venv:
        ...     venv.reset().shape
        (2, 84, 84, 4)
    """
    check_int("make_atari_env: n_envs", n_envs)
    game = resolve_game(env_id)
    env_kwargs, wrapper_kwargs = dict(env_kwargs or {}), dict(wrapper_kwargs or {})
    _check_kwargs(make_atari, env_kwargs, "env_kwargs")
    _check_kwargs(wrap_deepmind, wrapper_kwargs, "wrapper_kwargs")
    vec_env_kwargs = backend_kwargs(vec_env_kwargs, autoreset_mode, "make_atari_env()")
    if getattr(vec_env_cls, "preprocesses_atari", False):  # ALEVecEnv: the engine builds the envs
        return _make_engine_venv(vec_env_cls, game.rom, int(n_envs), seed, vec_env_kwargs, wrapper_kwargs,
                                 env_kwargs, monitor_dir)
    env_fns = _env_fns(game.env_id, int(n_envs), env_kwargs, wrapper_kwargs, monitor_dir)
    venv = (vec_env_cls or _subproc_vec_env())(env_fns, **(vec_env_kwargs or {}))
    if seed is not None:
        venv.seed(seed)
    return venv
