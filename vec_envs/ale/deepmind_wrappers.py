"""The DeepMind Atari preprocessing of one env: ``make_atari``, its gymnasium wrappers and
``wrap_deepmind``, which chains them.

The chain, innermost first (``make_atari_env`` puts an ``EpisodeMonitor`` right on the
emulator, under the chain, so that ``info["episode"]`` holds whole games and raw scores)::

    ALE (frameskip=1) -> NoopResetEnv -> MaxAndSkipEnv -> EpisodicLifeEnv
        -> FireResetEnv -> WarpFrame -> ClipRewardEnv

Frame stacking is left to ``vec_envs.wrappers.VecFrameStack``. Nothing here runs at import: ale-py
(which registers the Atari ids) and OpenCV are imported where used, so a spawned worker
that unpickles an env factory still works.
"""
from __future__ import annotations

from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from vec_envs.ale.games import resolve_game
from vec_envs.arguments import check_int

__all__ = [
    "NoopResetEnv",
    "FireResetEnv",
    "EpisodicLifeEnv",
    "MaxAndSkipEnv",
    "WarpFrame",
    "ClipRewardEnv",
    "make_atari",
    "wrap_deepmind",
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
        env_id: a game name or Atari env id, by the rules of ``vec_envs.ale.games.resolve_game``:
            ``"Breakout"``, ``"BreakoutNoFrameskip-v4"`` or ``"ALE/Breakout-v5"``.
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
