"""One env stepped alone, as a plain loop would, everything it returns recorded; and whether its
rows depend on the global random number generators.

``record`` resets the env with a seed, steps it with the given actions and resets it (no
seed) whenever its episode ends, keeping a copy of every result. ``global_rngs`` seeds
NumPy's and Python's global generators for a while, then says which of them the code
inside drew from, and puts both back as they were.

Example:
    >>> import gymnasium as gym
    >>> env = gym.make("CartPole-v1")
    >>> with global_rngs(1) as drew:
    ...     steps = record(env, seed=0, actions=[0, 1, 0])
    >>> [s.kind for s in steps], drew
    (['reset', 'step', 'step', 'step'], [])
"""
from __future__ import annotations

import pickle
import random
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from vec_envs.spaces.batching import copy_obs

__all__ = ["EnvStep", "record", "global_rngs", "sample_actions"]


@dataclass(frozen=True)
class EnvStep:
    """What one call returned: ``kind`` ``reset`` or ``step``, at step ``t`` (the reset that
    starts a run is at 0; a reset after an episode's end has its step's ``t``)."""

    kind: str
    t: int
    obs: Any
    reward: Any = None
    terminated: Any = None
    truncated: Any = None
    info: Any = None


def record(env: Any, seed: int, actions: Sequence[Any]) -> list[EnvStep]:
    """Reset ``env`` with ``seed``, step it through ``actions``; every result, copied."""
    obs, info = env.reset(seed=seed)
    steps = [EnvStep("reset", 0, copy_obs(obs), info=_copy(info))]
    for t, action in enumerate(actions, 1):
        obs, reward, terminated, truncated, info = env.step(action)
        steps.append(EnvStep("step", t, copy_obs(obs), reward, terminated, truncated, _copy(info)))
        if terminated or truncated:
            obs, info = env.reset()
            steps.append(EnvStep("reset", t, copy_obs(obs), info=_copy(info)))
    return steps


def _copy(info: Any) -> Any:
    """A copy of ``info`` where it pickles (the env may change it in place later), else itself."""
    try:
        return pickle.loads(pickle.dumps(info))
    except Exception:  # noqa: BLE001 (an info that does not pickle is kept as it is, and reported)
        return dict(info) if isinstance(info, dict) else info


def sample_actions(space: Any, count: int, seed: int) -> list[Any]:
    """``count`` actions of ``space``, drawn from a generator seeded with ``seed``."""
    space.seed(seed)
    return [space.sample() for _ in range(count)]


def _states() -> tuple[bytes, Any]:
    return pickle.dumps(np.random.get_state()), random.getstate()


@contextmanager
def global_rngs(seed: int) -> Iterator[list[str]]:
    """Seed ``np.random`` and ``random`` with ``seed``; on leaving, the list holds those the code
    inside drew from (``"np.random"``, ``"random"``), and both are restored."""
    saved = np.random.get_state(), random.getstate()
    np.random.seed(seed)
    random.seed(seed)
    before, drew = _states(), list[str]()
    try:
        yield drew
    finally:
        drew += [name for name, was, now in zip(("np.random", "random"), before, _states()) if was != now]
        np.random.set_state(saved[0])
        random.setstate(saved[1])
