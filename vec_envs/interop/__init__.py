"""Interop: vec_envs seen as gymnasium's vector API or as SB3's VecEnv, and the reverse.

- ``to_gymnasium(venv)``: a ``gymnasium.vector.VectorEnv`` over any VecEnv, in the
  VecEnv's own autoreset mode (a next-step VecEnv for gymnasium's vector wrappers and
  CleanRL's gymnasium scripts), for CleanRL-style code.
- ``from_gymnasium(vector_env)``: any ``gymnasium.vector.VectorEnv`` (next-step,
  same-step or no autoreset) as a VecEnv in its own mode (or made same-step), so our
  wrappers and agents run on it.
- ``to_sb3(venv)``: a ``stable_baselines3.common.vec_env.VecEnv`` over any same-step
  VecEnv, for SB3's algorithms and helpers, our wrappers shown as SB3's own
  (Stable-Baselines3 is imported only when this is called).

Example:
    >>> import gymnasium as gym
    >>> from vec_envs import DummyVecEnv
    >>> envs = to_gymnasium(DummyVecEnv([lambda: gym.make("CartPole-v1")] * 2))
    >>> obs, infos = envs.reset(seed=0)
    >>> obs.shape, envs.single_action_space
    ((2, 4), Discrete(2))
    >>> envs.close()
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from vec_envs.autoreset import AutoresetMode, mode_name
from vec_envs.interop.from_gymnasium import FromGymnasiumVecEnv, from_gymnasium
from vec_envs.interop.to_gymnasium import GymnasiumVectorEnv, to_gymnasium
from vec_envs.vec_env_base import VecEnvBase

if TYPE_CHECKING:
    from stable_baselines3.common.vec_env import VecEnv

__all__ = ["FromGymnasiumVecEnv", "GymnasiumVectorEnv", "from_gymnasium", "to_gymnasium", "to_sb3"]

SB3_SAME_STEP = ("to_sb3(): this {cls} resets its envs with autoreset_mode={mode!r}, but SB3's algorithms and "
                 "helpers are same-step only: they take every row as a step and read an ended episode's last "
                 "observation from infos[i]['terminal_observation']; build the VecEnv with "
                 "autoreset_mode='same_step' (the default)")


def to_sb3(venv: VecEnvBase) -> VecEnv:
    """``venv`` as a ``stable_baselines3.common.vec_env.VecEnv`` (needs the ``sb3`` extra).

    SB3's algorithms and its VecEnv wrappers take it as they take SB3's own VecEnvs, and
    SB3's helpers see our wrappers as theirs: each of our wrappers is shown to SB3 as an
    instance of SB3's class of the same name (``sb3_views.py``), so ``evaluate_policy`` and
    ``EvalCallback`` read whole, unnormalized episodes from our ``VecMonitor`` (or from the
    per-game monitor of ``make_atari_env``) and ``get_vec_normalize_env`` /
    ``sync_envs_normalization`` find and sync our ``VecNormalize``.

    Example:
        >>> import gymnasium as gym
        >>> from vec_envs import DummyVecEnv
        >>> env = to_sb3(DummyVecEnv([lambda: gym.make("CartPole-v1")] * 2))
        >>> env.reset().shape
        (2, 4)
        >>> env.close()
    """
    from vec_envs.interop.sb3_vec_env import SB3VecEnv
    from vec_envs.interop.sb3_views import sb3_view

    if not isinstance(venv, VecEnvBase):
        return SB3VecEnv(venv)  # raises the TypeError that names what was received
    if venv.autoreset_mode is not AutoresetMode.SAME_STEP:
        raise ValueError(SB3_SAME_STEP.format(cls=type(venv).__name__, mode=mode_name(venv.autoreset_mode)))
    return sb3_view(venv)
