"""One env as vec_envs sees it: its attributes through its wrapper chain, and an adapter
that runs an env written against the old gym API unchanged.

The old API: ``reset()`` returns the observation only, ``step()`` returns a 4-tuple
``(obs, reward, done, info)``, seeding goes through ``seed(s)``, and ``render(mode=...)``.
``TimeLimit.truncated`` in the info (set by old gym's TimeLimit) becomes ``truncated``.
"""
from __future__ import annotations

import inspect
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

__all__ = ["OldGymAdapter", "as_gymnasium_env", "env_attr", "is_wrapped", "set_env_attr", "to_gymnasium_space"]


def env_attr(env: Any, name: str) -> Any:
    """``env.name``, looked up through gymnasium wrappers."""
    getter = getattr(env, "get_wrapper_attr", None)
    return getter(name) if getter is not None else getattr(env, name)


def set_env_attr(env: Any, name: str, value: Any) -> None:
    """Set ``name`` where it lives in the wrapper chain (on the outer env if nowhere)."""
    setter = getattr(env, "set_wrapper_attr", None)
    setter(name, value) if setter is not None else setattr(env, name, value)


def is_wrapped(env: Any, wrapper_class: type) -> bool:
    """True when ``wrapper_class`` is anywhere in the env's wrapper chain."""
    while env is not None:
        if isinstance(env, wrapper_class):
            return True
        env = getattr(env, "env", None)
    return False


def to_gymnasium_space(space: Any) -> spaces.Space:
    """Convert an old gym space (duck-typed by class name) to the gymnasium one."""
    if isinstance(space, spaces.Space):
        return space
    kind = type(space).__name__
    if kind == "Box":
        return spaces.Box(low=space.low, high=space.high, shape=space.shape, dtype=space.dtype)
    if kind == "Discrete":
        return spaces.Discrete(int(space.n), start=int(getattr(space, "start", 0)))
    if kind == "MultiDiscrete":
        return spaces.MultiDiscrete(np.asarray(space.nvec))
    if kind == "MultiBinary":
        return spaces.MultiBinary(space.n)
    if kind == "Dict":
        return spaces.Dict({k: to_gymnasium_space(s) for k, s in space.spaces.items()})
    if kind == "Tuple":
        return spaces.Tuple([to_gymnasium_space(s) for s in space.spaces])
    raise TypeError(f"cannot convert the old gym space {space!r} to a gymnasium space")


class OldGymAdapter(gym.Env):
    """Presents an old-gym-API env as a gymnasium env.

    Example:
        >>> import gymnasium as gym
        >>> class OldCartPole:  # the old API: seed(), reset() -> obs, step() -> 4-tuple
        ...     def __init__(self):
        ...         self.env = gym.make("CartPole-v1")
        ...         self.observation_space, self.action_space = self.env.observation_space, self.env.action_space
        ...     def seed(self, seed):
        ...         self.seed_value = seed
        ...     def reset(self):
        ...         return self.env.reset(seed=self.seed_value)[0]
        ...     def step(self, action):
        ...         obs, reward, terminated, truncated, info = self.env.step(action)
        ...         return obs, reward, terminated or truncated, info
        >>> env = OldGymAdapter(OldCartPole())
        >>> obs, info = env.reset(seed=0)            # calls seed(0), then reset()
        >>> obs.shape, len(env.step(0))
        ((4,), 5)
    """

    def __init__(self, env: Any) -> None:
        self.env = env
        self.observation_space = to_gymnasium_space(env.observation_space)
        self.action_space = to_gymnasium_space(env.action_space)
        self.metadata = dict(getattr(env, "metadata", {}) or {})
        self.render_mode = getattr(env, "render_mode", None) or "rgb_array"
        self._new_style_reset = "seed" in inspect.signature(env.reset).parameters

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[Any, dict]:
        if self._new_style_reset:
            return self.env.reset(seed=seed, options=options)
        if seed is not None and hasattr(self.env, "seed"):
            self.env.seed(seed)
        return self.env.reset(), {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        result = self.env.step(action)
        if len(result) == 5:
            return result
        obs, reward, done, info = result
        truncated = bool(done and info.get("TimeLimit.truncated", False))
        return obs, reward, bool(done) and not truncated, truncated, info

    def render(self) -> Any:
        try:
            return self.env.render(mode=self.render_mode)
        except TypeError:
            return self.env.render()

    def close(self) -> None:
        if hasattr(self.env, "close"):
            self.env.close()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name == "env":
            raise AttributeError(name)
        return getattr(self.env, name)


def as_gymnasium_env(env: Any) -> gym.Env:
    """Return ``env`` itself if it is a gymnasium env, else wrapped in ``OldGymAdapter``."""
    if isinstance(env, gym.Env):
        return env
    missing = [m for m in ("reset", "step", "observation_space", "action_space") if not hasattr(env, m)]
    if missing:
        raise TypeError(
            f"the env factory returned {type(env).__name__}, which is not an env: it lacks "
            f"{', '.join(missing)} (expected a gymnasium.Env or an old-gym-API env)"
        )
    return OldGymAdapter(env)
