"""make_vec_env: a VecEnv of n copies of a registered env id or an env factory."""
from __future__ import annotations

import functools
import importlib
import os
from collections.abc import Callable
from typing import Any

import gymnasium as gym

from vec_envs.ale.games import import_ale
from vec_envs.arguments import backend_kwargs, check_env_fns, check_int
from vec_envs.types import EnvFn
from vec_envs.vec_env_base import VecEnvBase

__all__ = ["BACKENDS", "backend_class", "make_env", "make_vec_env"]

#: ``vec_env_cls`` by name: module and class of each backend.
BACKENDS = {"dummy": ("vec_envs.dummy_vec_env", "DummyVecEnv"),
            "subproc": ("vec_envs.subproc.subproc_vec_env", "SubprocVecEnv"),
            "ray": ("vec_envs.ray.ray_vec_env", "RayVecEnv")}


def make_env(env_id: str, **env_kwargs: Any) -> gym.Env:
    """``gym.make(env_id, **env_kwargs)``; an ``ALE/`` id first imports ale-py, which registers
    it (a spawned worker does not inherit the parent's gymnasium registry)."""
    if env_id.startswith("ALE/"):
        import_ale()
    return gym.make(env_id, **env_kwargs)


def _build_env(env_id_or_fn: str | Callable[..., Any], env_kwargs: dict, monitor_file: str | None,
               wrapper_class: Callable[..., gym.Env] | None, wrapper_kwargs: dict) -> Any:
    """One env: made, monitored (when ``monitor_file``), then wrapped, as SB3 does."""
    if isinstance(env_id_or_fn, str):
        try:  # frames by default, as in SB3, so that render() and VecVideoRecorder work
            env = make_env(env_id_or_fn, **{"render_mode": "rgb_array", **env_kwargs})
        except TypeError:  # an env that takes no render_mode
            env = make_env(env_id_or_fn, **env_kwargs)
    else:
        env = env_id_or_fn(**env_kwargs)
    if monitor_file is not None:
        from vec_envs.monitoring.episode_monitor import EpisodeMonitor

        env = EpisodeMonitor(env, monitor_file)
    return wrapper_class(env, **wrapper_kwargs) if wrapper_class is not None else env


def _backend(vec_env_cls: Callable[..., VecEnvBase] | str | None) -> Callable[..., VecEnvBase]:
    if vec_env_cls is None:
        vec_env_cls = "dummy"
    if not isinstance(vec_env_cls, str):
        return vec_env_cls
    if vec_env_cls not in BACKENDS:
        raise ValueError(f"make_vec_env(): vec_env_cls={vec_env_cls!r} is not a backend name; expected "
                         f"one of {sorted(BACKENDS)} or a VecEnv class")
    return backend_class(vec_env_cls)


def backend_class(name: str) -> Callable[..., VecEnvBase]:
    """The backend ``name`` names: a key of ``BACKENDS`` (``"subproc"``) or its class's name
    (``"SubprocVecEnv"``), imported from its module when asked (so modules that ``vec_envs``
    itself imports can name a backend without importing ``vec_envs``).

    Example:
        >>> backend_class("SubprocVecEnv") is backend_class("subproc")
        True
    """
    found = BACKENDS.get(name) or next((entry for entry in BACKENDS.values() if entry[1] == name), None)
    if found is None:
        raise ValueError(f"backend_class(): {name!r} names no backend; expected one of {sorted(BACKENDS)} or "
                         f"{sorted(cls for _, cls in BACKENDS.values())}")
    backend: Callable[..., VecEnvBase] = getattr(importlib.import_module(found[0]), found[1])
    return backend


def _ships_factories(backend: Callable[..., VecEnvBase]) -> bool:
    """Whether ``backend`` sends the env factories to other processes (they must pickle)."""
    from vec_envs.workers.worker_vec_env import WorkerVecEnv

    return isinstance(backend, type) and issubclass(backend, WorkerVecEnv)


def make_vec_env(
    env_id_or_fn: str | Callable[..., Any],
    n_envs: int = 1,
    seed: int | None = None,
    start_index: int = 0,
    monitor_dir: str | None = None,
    wrapper_class: Callable[..., gym.Env] | None = None,
    env_kwargs: dict[str, Any] | None = None,
    vec_env_cls: Callable[..., VecEnvBase] | str | None = None,
    vec_env_kwargs: dict[str, Any] | None = None,
    wrapper_kwargs: dict[str, Any] | None = None,
    autoreset_mode: Any = None,
) -> VecEnvBase:
    """Build ``n_envs`` copies of an env as one VecEnv (the arguments of SB3's ``make_vec_env``).

    Args:
        env_id_or_fn: a registered id (``"CartPole-v1"``, ``"ALE/Pong-v5"``) or a callable
            returning an env; called with ``**env_kwargs``.
        n_envs: number of copies.
        seed: if given, env i is seeded with ``seed + start_index + i`` at the first ``reset()``.
        start_index: the rank of the first env (seeds and monitor file names start there).
        monitor_dir: if given, env i writes its episodes to
            ``<monitor_dir>/<start_index + i>.monitor.csv`` (SB3's Monitor format).
        wrapper_class: a single-env wrapper applied to every env (after the monitor).
        env_kwargs: keyword arguments of ``gym.make`` / the callable; a registered id is made
            with ``render_mode="rgb_array"`` unless they name another (as in SB3).
        vec_env_cls: the backend: a class, or ``"dummy"`` (default), ``"subproc"``, ``"ray"``.
        vec_env_kwargs: keyword arguments of the backend.
        wrapper_kwargs: keyword arguments of ``wrapper_class``.
        autoreset_mode: the backend's ``autoreset_mode`` (``"same_step"``, ``"next_step"``,
            ``"disabled"``; None: the backend's default, same-step, or ``vec_env_kwargs``'s).

    Example:
        >>> from vec_envs import make_vec_env
        >>> if __name__ == "__main__":  # "subproc" workers import the script again: build under the guard
        ...     with make_vec_env("CartPole-v1", n_envs=4, seed=0, vec_env_cls="subproc") as venv:
        ...         print(venv.reset().shape)
        (4, 4)
    """
    if not (isinstance(env_id_or_fn, str) or callable(env_id_or_fn)):
        raise TypeError(f"make_vec_env(): env_id_or_fn must be a registered env id (a str) or a function that "
                        f"builds an env, received {env_id_or_fn!r} ({type(env_id_or_fn).__name__}); pass "
                        f"the function (e.g. lambda: gym.make(...)), not the env itself")
    n_envs = check_int("make_vec_env(): n_envs", n_envs)
    start_index = check_int("make_vec_env(): start_index", start_index, minimum=0)
    backend = _backend(vec_env_cls)
    ranks = range(start_index, start_index + n_envs)
    if monitor_dir is not None:
        os.makedirs(monitor_dir, exist_ok=True)
    env_fns: list[EnvFn] = [
        functools.partial(_build_env, env_id_or_fn, dict(env_kwargs or {}),
                          None if monitor_dir is None else os.path.join(monitor_dir, f"{rank}.monitor.csv"),
                          wrapper_class, dict(wrapper_kwargs or {}))
        for rank in ranks]
    check_env_fns(env_fns, "make_vec_env()", picklable=_ships_factories(backend))
    venv = backend(env_fns, **backend_kwargs(vec_env_kwargs, autoreset_mode, "make_vec_env()"))
    if seed is not None:
        venv.seed([seed + rank for rank in ranks])
    return venv
