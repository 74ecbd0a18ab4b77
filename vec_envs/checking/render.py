"""Whether a VecEnv can draw the env: ``render("rgb_array")`` tiles one frame per env
(``tile_images``) and ``render("human")`` shows that tiling in one window, so both need envs
made with ``render_mode="rgb_array"`` whose frames are ``(H, W, 3)`` (or ``(H, W)`` /
``(H, W, 1)``) uint8 arrays.

Example:
    >>> import gymnasium as gym
    >>> env = gym.make("CartPole-v1", render_mode="rgb_array")
    >>> _ = env.reset(seed=0)
    >>> render_check(env)
    ('render_mode rgb_array: a (400, 600, 3) uint8 frame per env, which tile_images and render("human") use', None)
    >>> render_check(gym.make("CartPole-v1"))[1] is None
    True
"""
from __future__ import annotations

from typing import Any

import numpy as np

from vec_envs.rendering.tile_images import tile_images

__all__ = ["render_check", "RENDER_FIX"]

RENDER_FIX = ("make the env with render_mode='rgb_array' (gym.make(env_id, render_mode='rgb_array')) and return "
              "(H, W, 3) uint8 frames; VecEnv.render('human') then shows every env in one window")


def render_check(env: Any) -> tuple[str, str | None]:
    """``(what was seen, the problem or None)`` for an env that has been reset."""
    mode = getattr(env, "render_mode", None)
    if mode is None:
        return ("render_mode None: the VecEnv gives no frames (make the env with render_mode='rgb_array' "
                "to draw it)", None)
    if mode != "rgb_array":
        return (f"render_mode {mode!r}", f"render_mode {mode!r} gives no frames to VecEnv.render(): each env "
                                         f"draws itself, if at all, in its own process")
    try:
        frame = env.render()
    except Exception as exc:  # noqa: BLE001 (a failing render is the finding)
        return ("render() raised", f"render() raised {type(exc).__name__}: {exc}")
    if not isinstance(frame, np.ndarray) or frame.dtype != np.uint8 or frame.ndim not in (2, 3) or (
            frame.ndim == 3 and frame.shape[2] not in (1, 3)):
        what = f"{frame.shape} {frame.dtype} array" if isinstance(frame, np.ndarray) else type(frame).__name__
        return (f"render() returned a {what}",
                f"render() returned a {what}; tile_images and render('human') need (H, W, 3) uint8 frames")
    tile_images([frame, frame])
    seen = f'render_mode rgb_array: a {frame.shape} uint8 frame per env, which tile_images and render("human") use'
    return seen, None
