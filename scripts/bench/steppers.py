"""Steppers: every contender's batch API behind the one interface the timed loop drives.

A stepper's ``step`` is one call of the timed loop: a lock-step ``step`` of the whole
batch (``steps_per_call = num_envs``) or one ``recv`` + ``send`` round of an
asynchronous API (``steps_per_call = batch_size``).

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

__all__ = ["Batch", "Stepper", "first_sends", "RawStepper", "VecEnvStepper", "RecvSendStepper", "GymVectorStepper",
           "EnvPoolStepper", "EnvPoolRecvSendStepper", "FrameStacker", "Stacked"]

Batch = tuple[Any, np.ndarray, "np.ndarray | None"]
"""``(obs, dones, env_ids)`` of one call; ``env_ids`` None = every env, in order."""


class Stepper:
    """One batch API (or one env) behind the interface of the timed loop.

    Attributes:
        num_envs: envs in the batch.
        steps_per_call: env steps that one ``step`` call performs.
        action_space: the action space of one env.
        stacks_frames: stacks frames itself (no in-script stacker needed on top).
        note: what the report should say about how it ran.
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


class EnvPoolStepper(GymVectorStepper):
    """EnvPool in lock-step (seeded when made; its own next-step auto-reset)."""

    def start(self, seed: int) -> Any:
        return self.envs.reset()[0]


class EnvPoolRecvSendStepper(EnvPoolStepper):
    """EnvPool's asynchronous API: ``async_reset()``, then ``recv()`` + ``send(actions, ids)``."""

    def __init__(self, envs: Any, action_space: spaces.Space[Any], batch_size: int,
                 stacks_frames: bool = False, note: str = "") -> None:
        super().__init__(envs, action_space, stacks_frames, note)
        self.steps_per_call = batch_size

    def start(self, seed: int) -> Any:
        self.envs.async_reset()
        first_sends(lambda: self.envs.recv()[-1]["env_id"], self.envs.send, self.num_envs, self.action_space)
        return None

    def step(self, actions: np.ndarray) -> Batch:
        obs, _, terminated, truncated, info = self.envs.recv()
        env_ids = info["env_id"]
        self.envs.send(actions[env_ids], env_ids)
        return obs, terminated | truncated, env_ids


class FrameStacker:
    """The last ``n`` frames of every env on the last axis; an env's stack is zeroed when
    its episode ends (what SB3's and baselines' VecFrameStack do). Rows follow ``env_ids``,
    so it serves lock-step and recv/send alike.

    Example:
        >>> stacker = FrameStacker(n=2, num_envs=2)
        >>> stacker.push(np.ones((2, 1, 1)), np.array([False, False]))[..., 0].ravel()
        array([0., 0.])
        >>> stacker.push(np.full((1, 1, 1), 5.0), np.array([True]), np.array([1]))[..., -1].ravel()
        array([5.])
    """

    def __init__(self, n: int, num_envs: int) -> None:
        self.n, self.num_envs = n, num_envs
        self.stacked: np.ndarray | None = None

    def push(self, obs: np.ndarray, dones: np.ndarray, env_ids: np.ndarray | None = None) -> np.ndarray:
        """Add the newest frames of the envs ``env_ids`` (None: all); their stacks."""
        channels = obs.shape[-1]
        if self.stacked is None:
            self.stacked = np.zeros((self.num_envs, *obs.shape[1:-1], channels * self.n), obs.dtype)
        rows = slice(None) if env_ids is None else env_ids
        stacked = np.roll(self.stacked[rows], -channels, axis=-1)
        stacked[np.atleast_1d(dones)] = 0
        stacked[..., -channels:] = obs
        self.stacked[rows] = stacked
        return stacked


class Stacked(Stepper):
    """Any stepper followed by the in-script ``FrameStacker``."""

    def __init__(self, inner: Stepper, n: int) -> None:
        self.inner, self.stacker = inner, FrameStacker(n, inner.num_envs)
        self.num_envs, self.steps_per_call = inner.num_envs, inner.steps_per_call
        self.action_space, self.stacks_frames = inner.action_space, True
        self.note = "; ".join(filter(None, [inner.note, "frame stack: in-script stacker"]))

    def start(self, seed: int) -> Any:
        obs = self.inner.start(seed)
        if obs is None:
            return None
        return self.stacker.push(obs, np.zeros(self.num_envs, bool))

    def step(self, actions: Any) -> Batch:
        obs, dones, env_ids = self.inner.step(actions)
        return self.stacker.push(obs, dones, env_ids), dones, env_ids

    def rows(self, actions: np.ndarray) -> list[Any]:
        return self.inner.rows(actions)

    def close(self) -> None:
        self.inner.close()
