"""The DeepMind Atari preprocessing as gymnasium wrappers, and ``make_atari_env``.

The chain ``make_atari_env`` builds for every env, innermost first::

    ALE (frameskip=1) -> EpisodeMonitor -> NoopResetEnv -> MaxAndSkipEnv
        -> EpisodicLifeEnv -> FireResetEnv -> WarpFrame -> ClipRewardEnv

``EpisodeMonitor`` sits right on the emulator, so ``info["episode"]`` reports the real
game score (before reward clipping) and appears once per real game over, not at every
lost life. Frame stacking is left to ``wrappers.VecFrameStack``.

Nothing here runs at import: ``ale_py`` (which registers the Atari ids) and OpenCV are
imported where used, so a spawned worker that unpickles an env factory still works.
"""
from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from vec_envs.ale.games import resolve_game
from vec_envs.arguments import check_int
from vec_envs.monitoring.episode_monitor import EpisodeMonitor  # re-exported: wrappers.atari.EpisodeMonitor
from vec_envs.vec_env_base import VecEnvBase

__all__ = [
    "NoopResetEnv",
    "FireResetEnv",
    "EpisodicLifeEnv",
    "MaxAndSkipEnv",
    "WarpFrame",
    "ClipRewardEnv",
    "EpisodeMonitor",
    "make_atari",
    "wrap_deepmind",
    "make_atari_env",
]

StepReturn = tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]
ResetReturn = tuple[Any, dict[str, Any]]


def _action_meanings(env: gym.Env) -> list[str]:
    getter = getattr(env.unwrapped, "get_action_meanings", None)
    if getter is None:
        raise TypeError(f"{type(env.unwrapped).__name__} has no get_action_meanings(): "
                        "the Atari wrappers need an ALE env (make_atari)")
    return list(getter())


def _lives(env: gym.Env) -> int:
    atari: Any = env.unwrapped  # an ale_py AtariEnv: ale_py has no type information
    return int(atari.ale.lives())


# ------------------------------------------------------------------ wrappers
class NoopResetEnv(gym.Wrapper):
    """On reset, take a random number (1..``noop_max``) of no-op actions.

    The count is drawn from the env's own ``np_random``, so it follows the reset seed.

    Args:
        env: an ALE env whose action 0 is NOOP.
        noop_max: the largest number of no-ops (>= 1).

    Example:
        >>> env = NoopResetEnv(make_atari("Breakout"), noop_max=30)
        >>> obs, info = env.reset(seed=0)     # the game has run 1..30 frames of NOOP
        >>> env.close()
    """

    def __init__(self, env: gym.Env, noop_max: int = 30) -> None:
        super().__init__(env)
        check_int("NoopResetEnv: noop_max", noop_max, 1)
        if _action_meanings(env)[0] != "NOOP":
            raise ValueError(f"NoopResetEnv: action 0 of {env.spec.id if env.spec else env} is "
                             f"{_action_meanings(env)[0]!r}, expected 'NOOP'")
        self.noop_max = int(noop_max)
        self.noop_action = 0

    def reset(self, **kwargs: Any) -> ResetReturn:
        obs, info = self.env.reset(**kwargs)
        noops = int(self.unwrapped.np_random.integers(1, self.noop_max + 1))
        for _ in range(noops):
            obs, _, terminated, truncated, info = self.env.step(self.noop_action)
            if terminated or truncated:
                obs, info = self.env.reset()
        return obs, info


class FireResetEnv(gym.Wrapper):
    """On reset, press FIRE (then action 2), for games that wait for it (Breakout).

    Example:
        >>> env = FireResetEnv(make_atari("Breakout"))
        >>> obs, info = env.reset(seed=0)               # the ball is already in play
        >>> env.close()
    """

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        meanings = _action_meanings(env)
        if len(meanings) < 3 or meanings[1] != "FIRE":
            raise ValueError(f"FireResetEnv: the game needs action 1 = 'FIRE' and at least 3 "
                             f"actions, its actions are {meanings}")

    def reset(self, **kwargs: Any) -> ResetReturn:
        obs, info = self.env.reset(**kwargs)
        for action in (1, 2):
            obs, _, terminated, truncated, _ = self.env.step(action)
            if terminated or truncated:
                obs, info = self.env.reset()
        return obs, info


class EpisodicLifeEnv(gym.Wrapper):
    """A lost life ends the episode (``terminated=True``) but not the game.

    The following ``reset()`` only takes a NOOP step and play goes on; the game is
    reset for real after a real game over, or when ``reset`` is called with a seed
    or at any other time.

    Example:
        >>> env = EpisodicLifeEnv(make_atari("Breakout"))
        >>> _ = env.reset(seed=0)
        >>> terminated = False
        >>> while not terminated:             # without FIRE the ball never comes: wait for a lost life
        ...     obs, reward, terminated, truncated, info = env.step(1)
        >>> info["lives"] < 5                 # terminated=True when a life is lost
        True
        >>> env.close()
    """

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.lives = 0
        self.was_real_done = True
        self._lost_life = False

    def step(self, action: Any) -> StepReturn:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.was_real_done = terminated or truncated
        lives = _lives(self.env)
        self._lost_life = not self.was_real_done and 0 < lives < self.lives
        self.lives = lives
        return obs, reward, terminated or self._lost_life, truncated, info

    def reset(self, **kwargs: Any) -> ResetReturn:
        if self._lost_life and kwargs.get("seed") is None:
            obs, _, terminated, truncated, info = self.env.step(0)
            if terminated or truncated:
                obs, info = self.env.reset(**kwargs)
        else:
            obs, info = self.env.reset(**kwargs)
        self._lost_life = False
        self.lives = _lives(self.env)
        return obs, info


class MaxAndSkipEnv(gym.Wrapper):
    """Repeat the action ``skip`` times; the observation is the pixel-wise max of the
    last two raw frames (Atari sprites flicker), the reward the sum.

    If the episode ends early, the max is over the last two frames actually seen
    (a single frame if only one was).

    Example:
        >>> env = MaxAndSkipEnv(make_atari("Breakout"), skip=4)
        >>> _ = env.reset(seed=0)
        >>> obs, reward, terminated, truncated, info = env.step(1)   # 4 emulator frames
        >>> env.close()
    """

    def __init__(self, env: gym.Env, skip: int = 4) -> None:
        super().__init__(env)
        check_int("MaxAndSkipEnv: skip", skip, 1)
        self.skip = int(skip)

    def step(self, action: Any) -> StepReturn:
        total_reward = 0.0
        frame: Any = None  # skip >= 1: the loop sets it
        before: Any = None
        for _ in range(self.skip):
            before = frame
            frame, reward, terminated, truncated, info = self.env.step(action)
            total_reward += float(reward)
            if terminated or truncated:
                break
        obs = frame if before is None else np.maximum(before, frame)
        return obs, total_reward, terminated, truncated, info


class WarpFrame(gym.ObservationWrapper):
    """Resize frames to ``height x width`` with OpenCV (INTER_AREA), grayscale by default.

    The channel axis is kept: observations are ``(height, width, 1)`` uint8 in grayscale,
    ``(height, width, 3)`` in color.

    Example:
        >>> env = WarpFrame(make_atari("Breakout"))
        >>> env.observation_space
        Box(0, 255, (84, 84, 1), uint8)
        >>> env.close()
    """

    def __init__(self, env: gym.Env, width: int = 84, height: int = 84, grayscale: bool = True) -> None:
        super().__init__(env)
        check_int("WarpFrame: width", width, 1)
        check_int("WarpFrame: height", height, 1)
        space = env.observation_space
        if not isinstance(space, spaces.Box) or len(space.shape) != 3 or space.shape[2] != 3:
            raise ValueError(f"WarpFrame: expected RGB frames of shape (H, W, 3), the env's "
                             f"observation space is {env.observation_space}")
        self.width, self.height, self.grayscale = int(width), int(height), bool(grayscale)
        channels = 1 if self.grayscale else 3
        self.observation_space = spaces.Box(0, 255, (self.height, self.width, channels), np.uint8)
        import cv2

        self._cv2 = cv2

    def observation(self, frame: np.ndarray) -> np.ndarray:
        cv2 = self._cv2
        if self.grayscale:
            frame = cv2.cvtColor(frame, cv2.COLOR_RGB2GRAY)
        frame = cv2.resize(frame, (self.width, self.height), interpolation=cv2.INTER_AREA)
        return frame[:, :, None] if self.grayscale else frame


class ClipRewardEnv(gym.RewardWrapper):
    """Rewards become their sign: -1.0, 0.0 or +1.0.

    Example:
        >>> env = ClipRewardEnv(make_atari("Pong"))
        >>> _ = env.reset(seed=0)
        >>> env.step(0)[1] in (-1.0, 0.0, 1.0)
        True
        >>> env.close()
    """

    def reward(self, reward: SupportsFloat) -> float:
        return float(np.sign(float(reward)))


# ------------------------------------------------------------------ building
def make_atari(env_id: str, repeat_action_probability: float = 0.0, render_mode: str | None = None,
               full_action_space: bool = False, **ale_kwargs: Any) -> gym.Env:
    """An ALE env with ``frameskip=1`` (frame skipping is ``MaxAndSkipEnv``'s job).

    Args:
        env_id: ``"Breakout"``, ``"BreakoutNoFrameskip-v4"`` or ``"ALE/Breakout-v5"``.
        repeat_action_probability: sticky actions: the chance the emulator repeats the
            previous action instead of the new one, per frame. 0.0 (the DeepMind setting)
            by default; 0.25 is the ALE v5 / Machado et al. (2018) setting.
        render_mode: None or ``"rgb_array"`` (needed by ``render`` and video recording).
        full_action_space: all 18 actions instead of the game's minimal set.
        **ale_kwargs: other ``ale_py.env.AtariEnv`` arguments (``mode``, ``difficulty``, ...).

    Example:
        >>> env = make_atari("Breakout", repeat_action_probability=0.25)
        >>> env.observation_space.shape
        (210, 160, 3)
        >>> env.close()
    """
    if "frameskip" in ale_kwargs:
        raise ValueError("make_atari: frameskip is fixed at 1; pass frame_skip to wrap_deepmind instead")
    if not 0.0 <= float(repeat_action_probability) <= 1.0:
        raise ValueError(f"make_atari: repeat_action_probability must be in [0, 1], "
                         f"received {repeat_action_probability!r}")
    return gym.make(resolve_game(env_id).env_id, frameskip=1,
                    repeat_action_probability=float(repeat_action_probability),
                    full_action_space=full_action_space, render_mode=render_mode, **ale_kwargs)


def wrap_deepmind(env: gym.Env, noop_max: int = 30, frame_skip: int = 4, episode_life: bool = True,
                  fire_reset: bool | None = None, warp_frame: bool = True, screen_size: int = 84,
                  grayscale: bool = True, clip_rewards: bool = True) -> gym.Env:
    """The DeepMind preprocessing (Mnih et al. 2015) around a ``make_atari`` env.

    Args:
        env: an ALE env with ``frameskip=1``.
        noop_max: up to this many no-ops at reset (0: none).
        frame_skip: frames per agent step, max-pooled over the last two (1: no skipping).
        episode_life: a lost life ends the episode (not the game).
        fire_reset: press FIRE at reset; None = when the game has a FIRE action.
        warp_frame: resize to ``screen_size`` squared (grayscale unless ``grayscale=False``).
        screen_size: side of the warped frame.
        grayscale: warp to one gray channel (84, 84, 1) rather than RGB (84, 84, 3).
        clip_rewards: rewards become their sign.

    Example:
        >>> env = wrap_deepmind(make_atari("Breakout"))
        >>> env.observation_space.shape
        (84, 84, 1)
        >>> env.close()
    """
    check_int("wrap_deepmind: noop_max", noop_max, 0)
    check_int("wrap_deepmind: frame_skip", frame_skip, 1)
    if noop_max > 0:
        env = NoopResetEnv(env, noop_max=noop_max)
    if frame_skip > 1:
        env = MaxAndSkipEnv(env, skip=frame_skip)
    if episode_life:
        env = EpisodicLifeEnv(env)
    if fire_reset is None:
        fire_reset = "FIRE" in _action_meanings(env)
    if fire_reset:
        env = FireResetEnv(env)
    if warp_frame:
        env = WarpFrame(env, width=screen_size, height=screen_size, grayscale=grayscale)
    if clip_rewards:
        env = ClipRewardEnv(env)
    return env


def _build_atari_env(env_id: str, env_kwargs: dict[str, Any], wrapper_kwargs: dict[str, Any],
                     monitor_file: str | None) -> gym.Env:
    """One env of ``make_atari_env`` (module level: picklable by reference for any
    worker start method; ``make_atari`` imports ale_py in the worker itself)."""
    env = make_atari(env_id, **env_kwargs)
    env = EpisodeMonitor(env, monitor_file)
    return wrap_deepmind(env, **wrapper_kwargs)


def _check_kwargs(fn: Callable[..., Any], kwargs: dict[str, Any], what: str) -> None:
    try:
        inspect.signature(fn).bind(None, **kwargs)
    except TypeError as exc:
        raise TypeError(f"make_atari_env: {what} {sorted(kwargs)} do not fit {fn.__name__}(): "
                        f"{exc}") from None


def _make_engine_venv(vec_env_cls: Any, env_id: str, num_envs: int, seed: int | None,
                      vec_env_kwargs: dict[str, Any] | None, wrapper_kwargs: dict[str, Any],
                      env_kwargs: dict[str, Any], monitor_dir: str | None) -> VecEnvBase:
    """``make_atari_env`` for a backend that preprocesses in its own engine (``ALEVecEnv``):
    the same options, by name, without Python env factories."""
    if monitor_dir is not None:
        raise ValueError(f"make_atari_env: monitor_dir is not available with {vec_env_cls.__name__} (its envs "
                         f"are C++ emulators, no Python env writes a CSV); each game's real score is in "
                         f"infos[i]['episode'], or use vec_env_cls=SubprocVecEnv for per-env monitor files")
    kwargs = {**env_kwargs, **wrapper_kwargs, **(vec_env_kwargs or {})}
    return vec_env_cls(env_id, num_envs, seed=seed, **kwargs)


def make_atari_env(env_id: str, n_envs: int = 1, seed: int | None = 0,
                   vec_env_cls: Callable[..., VecEnvBase] | None = None,
                   vec_env_kwargs: dict[str, Any] | None = None,
                   wrapper_kwargs: dict[str, Any] | None = None,
                   env_kwargs: dict[str, Any] | None = None,
                   monitor_dir: str | None = None) -> VecEnvBase:
    """``n_envs`` preprocessed Atari envs as one VecEnv (no frame stacking: add
    ``VecFrameStack``).

    Every env reports ``infos[i]["episode"] = {"r", "l", "t"}`` at a real game over, with
    ``r`` the real game score (unclipped, summed over all lives).

    Args:
        env_id: ``"Breakout"``, ``"BreakoutNoFrameskip-v4"`` or ``"ALE/Breakout-v5"``.
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

    Example:
        >>> from wrappers import VecFrameStack
        >>> with VecFrameStack(make_atari_env("Breakout", n_envs=2, seed=0), n_stack=4) as venv:
        ...     venv.reset().shape
        (2, 84, 84, 4)
    """
    check_int("make_atari_env: n_envs", n_envs)
    game = resolve_game(env_id)
    env_kwargs, wrapper_kwargs = dict(env_kwargs or {}), dict(wrapper_kwargs or {})
    _check_kwargs(make_atari, env_kwargs, "env_kwargs")
    _check_kwargs(wrap_deepmind, wrapper_kwargs, "wrapper_kwargs")
    if getattr(vec_env_cls, "preprocesses_atari", False):  # ALEVecEnv: the engine builds the envs
        return _make_engine_venv(vec_env_cls, game.rom, int(n_envs), seed, vec_env_kwargs, wrapper_kwargs,
                                 env_kwargs, monitor_dir)
    if monitor_dir is not None:
        os.makedirs(monitor_dir, exist_ok=True)
    if vec_env_cls is None:
        from vec_envs.subproc.subproc_vec_env import SubprocVecEnv

        vec_env_cls = SubprocVecEnv
    monitor_files = [None if monitor_dir is None else os.path.join(monitor_dir, f"{i}.monitor.csv")
                     for i in range(int(n_envs))]
    env_fns = [functools.partial(_build_atari_env, game.env_id, env_kwargs, wrapper_kwargs, monitor_file)
               for monitor_file in monitor_files]
    venv = vec_env_cls(env_fns, **(vec_env_kwargs or {}))
    if seed is not None:
        venv.seed(seed)
    return venv
