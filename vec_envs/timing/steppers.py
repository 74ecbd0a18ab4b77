"""Every batch API behind one stepping interface, the one the timing loops call.

A ``Stepper``'s ``step`` is one call of the timed loop: a lock-step ``step`` of the whole
batch (``steps_per_call = num_envs``) or one ``recv`` + ``send`` round of an asynchronous
API (``steps_per_call = batch_size``). ``RawStepper`` is one env in a plain loop,
``VecEnvStepper`` any VecEnv in lock-step, ``RecvSendStepper`` one of ours through
``recv`` / ``send``, ``GymVectorStepper`` a gymnasium vector env; ``EnvCounts`` counts the
steps each env took (how alike recv/send samples the envs). A benchmark adds its own for
other libraries.

Example:
    >>> import gymnasium as gym
    >>> from vec_envs import DummyVecEnv
    >>> stepper = VecEnvStepper(DummyVecEnv([lambda: gym.make("CartPole-v1")] * 2))
    >>> stepper.start(seed=0).shape
    (2, 4)
    >>> obs, dones, env_ids = stepper.step(np.array([0, 1]))
    >>> obs.shape, env_ids is None, stepper.steps_per_call
    ((2, 4), True, 2)
    >>> stepper.close()
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from gymnasium import spaces

__all__ = ["Batch", "Stepper", "RawStepper", "VecEnvStepper", "RecvSendStepper", "GymVectorStepper", "EnvCounts",
           "first_sends"]

Batch = tuple[Any, np.ndarray, "np.ndarray | None"]
"""``(obs, dones, env_ids)`` of one call; ``env_ids`` None = every env, in order."""


class Stepper:
    """One batch API (or one env) behind the interface of the timed loop.

    Attributes:
        num_envs: envs in the batch.
        steps_per_call: env steps that one ``step`` call performs.
        action_space: the action space of one env.
        stacks_frames: stacks frames itself (no stacker needed on top).
        note: what a report should say about how it ran.
    """

    num_envs: int
    steps_per_call: int
    action_space: spaces.Space[Any]
    stacks_frames = False
    note = ""

    def start(self, seed: int) -> Any:
        """Seed env i with ``seed + i`` and reset; the first observations, or None for an
        asynchronous API (which has received every env's reset row and sent it an action)."""
        raise NotImplementedError

    def step(self, actions: np.ndarray) -> Batch:
        """One call: ``actions`` holds one action per env of the batch."""
        raise NotImplementedError

    def rows(self, actions: np.ndarray) -> list[Any]:
        """The pre-sampled ``(steps, num_envs, ...)`` actions as the arguments of ``step``."""
        return list(actions)

    def close(self) -> None:
        """Close the envs (and join any workers)."""
        raise NotImplementedError


class RawStepper(Stepper):
    """A single env in a plain loop (reset when its episode ends): the per-core rate."""

    def __init__(self, env: Any) -> None:
        self.env, self.action_space = env, env.action_space
        self.num_envs = self.steps_per_call = 1

    def start(self, seed: int) -> Any:
        return self.env.reset(seed=seed)[0][None]

    def step(self, actions: Any) -> Batch:
        obs, _, terminated, truncated, _ = self.env.step(actions)
        done = terminated or truncated
        if done:
            obs, _ = self.env.reset()
        return obs[None], np.array([done]), None

    def rows(self, actions: np.ndarray) -> list[Any]:
        return list(actions[:, 0])

    def close(self) -> None:
        self.env.close()


class VecEnvStepper(Stepper):
    """The baselines / SB3 API: ``seed()``, ``reset() -> obs``, ``step() -> 4-tuple``."""

    def __init__(self, venv: Any, stacks_frames: bool = False, note: str = "") -> None:
        self.venv, self.action_space = venv, venv.action_space
        self.num_envs = self.steps_per_call = venv.num_envs
        self.stacks_frames, self.note = stacks_frames, note

    def start(self, seed: int) -> Any:
        self.venv.seed(seed)
        return self.venv.reset()

    def step(self, actions: Any) -> Batch:
        obs, _, dones, _ = self.venv.step(actions)
        return obs, dones, None

    def close(self) -> None:
        self.venv.close()


def first_sends(recv: Callable[[], np.ndarray], send: Callable[[np.ndarray, np.ndarray], None],
                num_envs: int, action_space: spaces.Space[Any]) -> None:
    """Receive every env's reset row and send it a first action.

    An asynchronous reset finishes inside the first ``recv`` calls; done here, it counts
    as build time (as ``reset()`` does for lock-step methods), not as stepping.
    """
    seen: set[int] = set()
    while len(seen) < num_envs:
        env_ids = recv()
        send(np.array([action_space.sample() for _ in env_ids]), env_ids)
        seen.update(int(i) for i in env_ids)


class RecvSendStepper(VecEnvStepper):
    """Our asynchronous API: ``async_reset()``, then ``recv()`` + ``send(actions[ids], ids)``."""

    def __init__(self, venv: Any, stacks_frames: bool = False, note: str = "") -> None:
        super().__init__(venv, stacks_frames, note)
        self.steps_per_call = venv.batch_size

    def start(self, seed: int) -> Any:
        self.venv.seed(seed)
        self.venv.async_reset()
        first_sends(lambda: self.venv.recv()[-1], self.venv.send, self.num_envs, self.action_space)
        return None

    def step(self, actions: np.ndarray) -> Batch:
        obs, _, dones, _, env_ids = self.venv.recv()
        self.venv.send(actions[env_ids], env_ids)
        return obs, dones, env_ids


class GymVectorStepper(Stepper):
    """gymnasium.vector: ``reset(seed=) -> (obs, info)``, ``step() -> 5-tuple``."""

    def __init__(self, envs: Any, action_space: spaces.Space[Any], stacks_frames: bool = False,
                 note: str = "") -> None:
        self.envs, self.action_space = envs, action_space
        self.num_envs = self.steps_per_call = envs.num_envs
        self.stacks_frames, self.note = stacks_frames, note

    def start(self, seed: int) -> Any:
        return self.envs.reset(seed=seed)[0]

    def step(self, actions: Any) -> Batch:
        obs, _, terminated, truncated, _ = self.envs.step(actions)
        return obs, terminated | truncated, None

    def close(self) -> None:
        self.envs.close()


class EnvCounts(Stepper):
    """Any recv/send stepper, counting the steps each env took; its note says the fewest and the most."""

    def __init__(self, inner: Stepper) -> None:
        self.inner, self.counts = inner, np.zeros(inner.num_envs, np.int64)
        self.num_envs, self.steps_per_call, self.action_space = inner.num_envs, inner.steps_per_call, inner.action_space

    def start(self, seed: int) -> Any:
        return self.inner.start(seed)

    def step(self, actions: np.ndarray) -> Batch:
        obs, dones, env_ids = self.inner.step(actions)
        self.counts[slice(None) if env_ids is None else env_ids] += 1
        return obs, dones, env_ids

    def close(self) -> None:
        self.inner.close()

    @property
    def note(self) -> str:  # type: ignore[override]
        return f"steps per env: min {self.counts.min()}, max {self.counts.max()}; {self.inner.note}"
