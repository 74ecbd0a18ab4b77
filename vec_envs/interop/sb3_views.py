"""Our wrappers as SB3 sees its own: ``sb3_view(venv)`` builds the SB3 VecEnv for ``to_sb3``.

SB3 learns what an env is by walking ``.venv`` through its ``VecEnvWrapper`` chain with
``isinstance``: ``evaluate_policy`` trusts ``infos[i]["episode"]`` when it meets a
``VecMonitor``, ``get_vec_normalize_env`` / ``sync_envs_normalization`` / ``EvalCallback``
look for a ``VecNormalize``, the algorithms skip their image transpose when they meet a
``VecTransposeImage``. So each of our wrappers gets a view: an instance of SB3's class of
the same name (or SB3's plain ``VecEnvWrapper``) whose ``.venv`` is the view of the wrapper
beneath, down to an ``SB3VecEnv`` over our backend. The views only answer questions: a
view's calls (``step``, ``reset``, ``get_attr``...) run our own wrapper stack from the
wrapper it shows, and its unknown attributes are that wrapper's. The ``VecNormalize`` view
reads and writes our statistics and settings, so SB3 syncs, freezes and saves ours.
"""
from __future__ import annotations

import os
from typing import Any

import numpy as np
from stable_baselines3.common.vec_env import VecCheckNan as SB3VecCheckNan
from stable_baselines3.common.vec_env import VecEnv
from stable_baselines3.common.vec_env import VecEnvWrapper as SB3VecEnvWrapper
from stable_baselines3.common.vec_env import VecExtractDictObs as SB3VecExtractDictObs
from stable_baselines3.common.vec_env import VecFrameStack as SB3VecFrameStack
from stable_baselines3.common.vec_env import VecMonitor as SB3VecMonitor
from stable_baselines3.common.vec_env import VecNormalize as SB3VecNormalize
from stable_baselines3.common.vec_env import VecTransposeImage as SB3VecTransposeImage

from vec_envs.interop.sb3_vec_env import SB3Forwarding, SB3VecEnv
from vec_envs.vec_env_base import VecEnvBase
from vec_envs.vec_env_wrapper import VecEnvWrapper

__all__ = ["SB3WrapperView", "SB3VecNormalizeView", "sb3_view"]

STATISTICS_MISMATCH = ("{name}: the statistics received have shapes {received}, but this VecNormalize's "
                       "have {expected} (the two envs' observation spaces differ)")


class SB3WrapperView(SB3Forwarding, SB3VecEnvWrapper):
    """One of our wrappers as an SB3 ``VecEnvWrapper`` (see the module docstring).

    Args:
        source: our wrapper; every call and unknown attribute goes to it.
        inner: the SB3 view of ``source.venv``, walked by SB3 as ``.venv``.

    Example:
        >>> import gymnasium as gym
        >>> from stable_baselines3.common.vec_env import VecMonitor, is_vecenv_wrapped
        >>> from vec_envs import DummyVecEnv
        >>> from vec_envs.wrappers import VecMonitor as OurVecMonitor
        >>> env = sb3_view(OurVecMonitor(DummyVecEnv([lambda: gym.make("CartPole-v1")])))
        >>> is_vecenv_wrapped(env, VecMonitor), env.episode_count
        (True, 0)
        >>> env.close()
    """

    def __init__(self, source: VecEnvWrapper, inner: VecEnv) -> None:
        self.source = source
        SB3VecEnvWrapper.__init__(self, inner, source.observation_space, source.action_space)

    def __getattr__(self, name: str) -> Any:
        source = self.__dict__.get("source")
        if source is None or name.startswith("__"):
            raise AttributeError(name)
        return getattr(source, name)

    def getattr_recursive(self, name: str) -> Any:
        """What SB3's wrappers above ask for: our wrapper stack's attribute ``name``."""
        return getattr(self, name)

    def render(self, mode: str | None = None) -> np.ndarray | None:
        return VecEnv.render(self, mode)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.source!r})"


class SB3VecMonitorView(SB3WrapperView, SB3VecMonitor):
    """Our ``VecMonitor`` as SB3's: ``evaluate_policy`` reads its ``infos[i]["episode"]``."""


class SB3VecFrameStackView(SB3WrapperView, SB3VecFrameStack):
    """Our ``VecFrameStack`` as SB3's."""


class SB3VecTransposeImageView(SB3WrapperView, SB3VecTransposeImage):
    """Our ``VecTransposeImage`` as SB3's: SB3's algorithms do not transpose again."""


class SB3VecCheckNanView(SB3WrapperView, SB3VecCheckNan):
    """Our ``VecCheckNan`` as SB3's."""


class SB3VecExtractDictObsView(SB3WrapperView, SB3VecExtractDictObs):
    """Our ``VecExtractDictObs`` as SB3's."""


def _forwarded(name: str, doc: str) -> property:
    """A property that reads and writes our wrapper's attribute ``name``."""
    def get(self: SB3WrapperView) -> Any:
        return getattr(self.source, name)

    def put(self: SB3WrapperView, value: Any) -> None:
        setattr(self.source, name, value)
    return property(get, put, doc=doc)


class SB3VecNormalizeView(SB3WrapperView, SB3VecNormalize):
    """Our ``VecNormalize`` as SB3's: ``get_vec_normalize_env()`` finds it,
    ``sync_envs_normalization`` copies statistics into it, ``training = False`` freezes it.

    Statistics assigned to ``obs_rms`` / ``ret_rms`` (ours or SB3's ``RunningMeanStd``,
    or a dict of them) are copied into ours; ``save`` writes our file format.

    Example:
        >>> import gymnasium as gym
        >>> from stable_baselines3.common.vec_env import sync_envs_normalization, unwrap_vec_normalize
        >>> from vec_envs import DummyVecEnv
        >>> from vec_envs.wrappers import VecNormalize
        >>> train, evaluation = (sb3_view(VecNormalize(DummyVecEnv([lambda: gym.make("CartPole-v1")])))
        ...                      for _ in range(2))
        >>> _ = train.reset()
        >>> sync_envs_normalization(train, evaluation)
        >>> unwrap_vec_normalize(evaluation).obs_rms.count == train.obs_rms.count == 1
        True
        >>> train.close(); evaluation.close()
    """

    source: Any  # our ``vec_envs.wrappers.VecNormalize`` (vec_envs.wrappers sits above interop, which never imports it)

    training = _forwarded("training", "Update the statistics on every step (False: frozen).")
    norm_obs = _forwarded("norm_obs", "Normalize observations.")
    norm_reward = _forwarded("norm_reward", "Scale rewards.")
    clip_obs = _forwarded("clip_obs", "Bound of the normalized observations.")
    clip_reward = _forwarded("clip_reward", "Bound of the scaled rewards.")
    gamma = _forwarded("gamma", "Discount of the return whose spread scales the rewards.")
    epsilon = _forwarded("epsilon", "Added to the variances before the square root.")

    @property
    def obs_rms(self) -> Any:
        """Our observation statistics (None without ``norm_obs``); assigning copies into them."""
        return self.source.obs_rms

    @obs_rms.setter
    def obs_rms(self, value: Any) -> None:
        _copy_statistics(self.source.obs_rms, value, "obs_rms")

    @property
    def ret_rms(self) -> Any:
        """Our return statistics; assigning copies into them."""
        return self.source.ret_rms

    @ret_rms.setter
    def ret_rms(self, value: Any) -> None:
        _copy_statistics(self.source.ret_rms, value, "ret_rms")

    def normalize_obs(self, obs: Any) -> Any:
        return self.source.normalize_obs(obs)

    def normalize_reward(self, reward: np.ndarray) -> np.ndarray:
        return np.asarray(self.source.normalize_reward(reward))

    def unnormalize_obs(self, obs: Any) -> Any:
        """``normalize_obs`` undone (clipping aside), as SB3's off-policy buffers need it."""
        return self.source.unnormalize_obs(obs)

    def unnormalize_reward(self, reward: np.ndarray) -> np.ndarray:
        return np.asarray(self.source.unnormalize_reward(reward))

    def get_original_obs(self) -> Any:
        return self.source.get_original_obs()

    def get_original_reward(self) -> np.ndarray:
        return np.asarray(self.source.get_original_reward())

    def save(self, save_path: str | os.PathLike) -> None:
        """Our ``VecNormalize.save`` (NumPy file, no pickle): ``vec_envs.wrappers.VecNormalize.load`` reads it."""
        self.source.save(save_path)


WRAPPERS_PACKAGE = "vec_envs.wrappers."
#: our wrapper class's name -> its view; a subclass of ours gets its view (the MRO is searched).
#: By name: ``vec_envs.wrappers`` sits above interop, which never imports it.
VIEWS: dict[str, type[SB3WrapperView]] = {
    "VecNormalize": SB3VecNormalizeView,
    "VecMonitor": SB3VecMonitorView,
    "VecFrameStack": SB3VecFrameStackView,
    "VecTransposeImage": SB3VecTransposeImageView,
    "VecCheckNan": SB3VecCheckNanView,
    "VecExtractDictObs": SB3VecExtractDictObsView,
}


def _view_class(venv: VecEnvWrapper) -> type[SB3WrapperView]:
    """The view of ``venv``: that of the first class of ours in its MRO, else a plain one."""
    for cls in type(venv).__mro__:
        if cls.__module__.startswith(WRAPPERS_PACKAGE) and cls.__name__ in VIEWS:
            return VIEWS[cls.__name__]
    return SB3WrapperView


def sb3_view(venv: VecEnvBase) -> VecEnv:
    """The SB3 VecEnv over ``venv``: a view per wrapper of ours, an ``SB3VecEnv`` at the bottom.

    Example:
        >>> import gymnasium as gym
        >>> from vec_envs import DummyVecEnv
        >>> from vec_envs.wrappers import VecMonitor, VecNormalize
        >>> env = sb3_view(VecNormalize(VecMonitor(DummyVecEnv([lambda: gym.make("CartPole-v1")]))))
        >>> [type(layer).__name__ for layer in (env, env.venv, env.venv.venv)]
        ['SB3VecNormalizeView', 'SB3VecMonitorView', 'SB3VecEnv']
        >>> env.close()
    """
    if not isinstance(venv, VecEnvWrapper):
        return SB3VecEnv(venv)
    inner = sb3_view(venv.venv)
    return _view_class(venv)(venv, inner)


def _copy_statistics(target: Any, value: Any, name: str) -> None:
    """Copy ``value`` (a RunningMeanStd of ours or SB3's, or a dict of them) into ``target``."""
    if isinstance(target, dict) or isinstance(value, dict):
        if not (isinstance(target, dict) and isinstance(value, dict)) or target.keys() != value.keys():
            raise ValueError(f"{name}: expected statistics for the keys "
                             f"{sorted(target) if isinstance(target, dict) else None}, received "
                             f"{sorted(value) if isinstance(value, dict) else type(value).__name__}")
        for key in target:
            _copy_statistics(target[key], value[key], f"{name}[{key!r}]")
        return
    if target is None or value is None:
        if target is not value:
            raise ValueError(f"{name}: one VecNormalize normalizes observations and the other does not "
                             f"(received {type(value).__name__}, this one has {type(target).__name__})")
        return
    mean, var = np.array(value.mean, np.float64), np.array(value.var, np.float64)
    if mean.shape != target.mean.shape or var.shape != target.var.shape:
        raise ValueError(STATISTICS_MISMATCH.format(name=name, received=(mean.shape, var.shape),
                                                    expected=(target.mean.shape, target.var.shape)))
    target.mean, target.var, target.count = mean, var, float(value.count)
