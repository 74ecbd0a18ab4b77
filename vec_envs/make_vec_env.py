"""make_vec_env: a VecEnv of n copies of a registered env id or an env factory."""
from __future__ import annotations

import importlib
from typing import Any, Callable

import gymnasium as gym

from vec_envs.types import EnvFn
from vec_envs.vec_env_base import VecEnvBase

__all__ = ["make_vec_env", "make_env"]

#: Env-id namespaces whose package registers them on import (needed in spawned workers,
#: which do not inherit the parent's gymnasium registry).
_REGISTERING_PACKAGES = {"ALE/": "ale_py"}


def make_env(env_id: str, **env_kwargs: Any) -> gym.Env:
    """``gym.make(env_id, **env_kwargs)``, first importing the package that registers it."""
    for prefix, package in _REGISTERING_PACKAGES.items():
        if env_id.startswith(prefix):
            try:
                importlib.import_module(package)
            except ImportError as exc:
                raise ImportError(f"{env_id} needs {package}: pip install -e \".[atari]\"") from exc
    return gym.make(env_id, **env_kwargs)


def _env_fn(env_id_or_fn: str | Callable[..., Any], env_kwargs: dict,
            wrapper_class: Callable[[gym.Env], gym.Env] | None) -> EnvFn:
    def build() -> Any:
        if isinstance(env_id_or_fn, str):
            env = make_env(env_id_or_fn, **env_kwargs)
        else:
            env = env_id_or_fn(**env_kwargs)
        return wrapper_class(env) if wrapper_class is not None else env
    return build


def make_vec_env(
    env_id_or_fn: str | Callable[..., Any],
    n_envs: int = 1,
    seed: int | None = None,
    vec_env_cls: Callable[..., VecEnvBase] | None = None,
    vec_env_kwargs: dict[str, Any] | None = None,
    env_kwargs: dict[str, Any] | None = None,
    wrapper_class: Callable[[gym.Env], gym.Env] | None = None,
) -> VecEnvBase:
    """Build ``n_envs`` copies of an env as one VecEnv.

    Args:
        env_id_or_fn: a registered id (``"CartPole-v1"``, ``"ALE/Pong-v5"``) or a callable
            returning an env; called with ``**env_kwargs``.
        n_envs: number of copies.
        seed: if given, env i is seeded with ``seed + i`` at the first ``reset()``.
        vec_env_cls: the backend (default ``DummyVecEnv``).
        vec_env_kwargs: keyword arguments of the backend.
        env_kwargs: keyword arguments of ``gym.make`` / the callable.
        wrapper_class: a single-env wrapper applied to every env.

    Example:
        >>> from vec_envs import SubprocVecEnv
        >>> with make_vec_env("CartPole-v1", n_envs=4, seed=0, vec_env_cls=SubprocVecEnv) as venv:
        ...     venv.reset().shape
        (4, 4)
    """
    if not isinstance(n_envs, int) or n_envs < 1:
        raise ValueError(f"make_vec_env(): n_envs must be a positive int, received {n_envs!r}")
    if vec_env_cls is None:
        from vec_envs.dummy_vec_env import DummyVecEnv

        vec_env_cls = DummyVecEnv
    env_fns = [_env_fn(env_id_or_fn, dict(env_kwargs or {}), wrapper_class) for _ in range(n_envs)]
    venv = vec_env_cls(env_fns, **(vec_env_kwargs or {}))
    if seed is not None:
        venv.seed(seed)
    return venv
