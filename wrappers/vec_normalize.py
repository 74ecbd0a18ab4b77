"""VecNormalize: running normalization of observations and scaling of rewards."""
from __future__ import annotations

import contextlib
import json
import math
import os
import tempfile
import zipfile
from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium import spaces

from vec_envs.spaces.batching import batch_of_one
from vec_envs.spaces.describe import space_fingerprint
from vec_envs.types import VecEnvIndices, VecEnvObs, VecEnvRecvReturn, VecEnvStepReturn
from vec_envs.vec_env_base import VecEnvBase
from vec_envs.vec_env_wrapper import VecEnvWrapper
from vec_envs.wrappers.running_mean_std import RunningMeanStd

__all__ = ["VecNormalize", "VecNormalizeFileError", "FORMAT_VERSION"]

#: Version of the file ``save`` writes; ``load`` reads this version and older ones.
FORMAT_VERSION = 1

FILE_CORRUPT = ("VecNormalize.load(): {path} is not a readable VecNormalize file ({reason}); it is "
                "truncated, corrupt, or was not written by VecNormalize.save()")
FILE_SB3_PICKLE = ("VecNormalize.load(): {path} is a pickle, as Stable-Baselines3's VecNormalize.save() writes; "
                   "vec_envs reads its own .npz format (no pickle). Convert the file once: "
                   "vec-envs-convert-vecnormalize from-sb3 {path} vecnormalize.npz --env-id ENV_ID "
                   "(or python scripts/convert_vecnormalize.py with the same arguments); it unpickles the "
                   "file, so convert only files you trust")
#: how every pickle of protocol 2 and later starts (SB3 writes protocol 4 or 5)
PICKLE_START = b"\x80"
FILE_NEWER = ("VecNormalize.load(): {path} has format version {found}, newer than version {supported} "
              "that this vec_envs reads; upgrade vec_envs to load it")
FILE_WRONG_SPACE = ("VecNormalize.load(): {path} holds statistics for observation space {saved}, but "
                    "the venv passed to load() has observation space {received}")
UNSUPPORTED_SPACE = ("VecNormalize(norm_obs=True) only supports Box or Dict observation spaces, received "
                     "{space}; pass norm_obs=False to scale rewards only")
BAD_OBS_KEY = ("VecNormalize: norm_obs_keys entry {key!r} is not a Box key of the observation space "
               "(valid keys: {valid})")
BAD_SETTING = "VecNormalize: {name} must be {expected}, received {value!r}"
SAVED_SETTING = "setting {name!r} must be {expected}, found {value!r} ({kind})"
#: what each saved setting must be: (check, description)
SAVED_SETTINGS: dict[str, tuple[Any, str]] = {
    "training": (lambda v: isinstance(v, bool), "true or false (a JSON boolean)"),
    "norm_obs": (lambda v: isinstance(v, bool), "true or false (a JSON boolean)"),
    "norm_reward": (lambda v: isinstance(v, bool), "true or false (a JSON boolean)"),
    "clip_obs": (lambda v: _is_number(v) and 0 < v < math.inf, "a finite number > 0"),
    "clip_reward": (lambda v: _is_number(v) and 0 < v < math.inf, "a finite number > 0"),
    "gamma": (lambda v: _is_number(v) and 0 <= v <= 1, "a number in [0, 1]"),
    "epsilon": (lambda v: _is_number(v) and 0 < v < math.inf, "a finite number > 0"),
    "norm_obs_keys": (lambda v: v is None or (isinstance(v, list) and all(isinstance(k, str) for k in v)),
                      "null or a list of strings"),
}


class VecNormalizeFileError(ValueError):
    """A VecNormalize statistics file that cannot be used (corrupt, newer, other space).

    Example:
        >>> import gymnasium as gym, os, tempfile
        >>> from vec_envs import DummyVecEnv
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     path = os.path.join(folder, "vecnormalize.npz")
        ...     with open(path, "w") as f:
        ...         _ = f.write("not a VecNormalize file")
        ...     try:
        ...         venv = VecNormalize.load(path, DummyVecEnv([lambda: gym.make("Pendulum-v1")]))
        ...     except VecNormalizeFileError as err:
        ...         print(path in str(err))   # names the file and what is wrong with it
        True
    """


class VecNormalize(VecEnvWrapper):
    """Normalizes observations with running statistics and scales rewards.

    Observations become ``clip((obs - mean) / sqrt(var + epsilon), -clip_obs, clip_obs)``
    (float32), with ``mean`` / ``var`` the running statistics of every observation
    returned by ``reset()`` and ``step()`` (per key for Dict spaces; terminal
    observations are normalized too but do not enter the statistics).

    Rewards are divided by the running standard deviation of the discounted return
    ``ret = gamma * ret + r`` (``ret`` is reset to 0 where an episode ends), then clipped
    to ``[-clip_reward, clip_reward]``; no mean is subtracted, so the sign of every
    reward is kept.

    With ``training=False`` the statistics are frozen (evaluation). ``save`` writes them
    to a portable NumPy file (no pickle); ``VecNormalize.load(path, venv)`` restores them.

    Args:
        venv: the VecEnv to wrap.
        training: update the statistics on every reset / step.
        norm_obs: normalize observations.
        norm_reward: scale rewards.
        clip_obs: bound of the normalized observations.
        clip_reward: bound of the scaled rewards.
        gamma: discount of the return whose spread scales the rewards.
        epsilon: added to the variances before the square root.
        norm_obs_keys: the Dict keys to normalize (default: every Box key).

    Example:
        >>> import gymnasium as gym
        >>> from vec_envs import DummyVecEnv
        >>> venv = VecNormalize(DummyVecEnv([lambda: gym.make("Pendulum-v1")] * 4))
        >>> obs = venv.reset()
        >>> obs, rewards, dones, infos = venv.step(np.zeros((4, 1)))
        >>> obs.shape, obs.dtype, rewards.dtype
        ((4, 3), dtype('float32'), dtype('float32'))
        >>> import os, tempfile
        >>> eval_venv = DummyVecEnv([lambda: gym.make("Pendulum-v1")])
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     venv.save(os.path.join(folder, "vecnormalize.npz"))
        ...     evaluation = VecNormalize.load(os.path.join(folder, "vecnormalize.npz"), eval_venv)
        >>> evaluation.training = False   # evaluate with the training statistics, frozen
        >>> venv.close(); evaluation.close()
    """

    def __init__(self, venv: VecEnvBase, training: bool = True, norm_obs: bool = True,
                 norm_reward: bool = True, clip_obs: float = 10.0, clip_reward: float = 10.0,
                 gamma: float = 0.99, epsilon: float = 1e-8,
                 norm_obs_keys: Sequence[str] | None = None) -> None:
        _check_settings(clip_obs=clip_obs, clip_reward=clip_reward, gamma=gamma, epsilon=epsilon)
        keys = _obs_keys(venv.observation_space, norm_obs_keys) if norm_obs else None
        space = _normalized_space(venv.observation_space, keys, clip_obs) if norm_obs else None
        super().__init__(venv, observation_space=space)
        self.training, self.norm_obs, self.norm_reward = training, norm_obs, norm_reward
        self.clip_obs, self.clip_reward = float(clip_obs), float(clip_reward)
        self.gamma, self.epsilon = float(gamma), float(epsilon)
        self.norm_obs_keys = keys
        self.obs_rms = _make_obs_rms(venv.observation_space, keys) if norm_obs else None
        self.ret_rms = RunningMeanStd(())
        self.returns = np.zeros(self.num_envs, np.float64)
        self.old_obs: VecEnvObs | None = None
        self.old_reward: np.ndarray | None = None

    # ------------------------------------------------------------- stepping
    def reset(self) -> VecEnvObs:
        obs = self.venv.reset()
        self.old_obs = obs
        self.returns[:] = 0.0
        return self._update_and_normalize(obs)

    def step_wait(self, timeout: float | None = None) -> VecEnvStepReturn:
        obs, rewards, dones, infos = self.venv.step_wait(timeout)
        self.old_obs, self.old_reward = obs, rewards
        normalized = self._update_and_normalize(obs)
        for i in np.flatnonzero(dones):
            if "terminal_observation" in infos[i]:
                infos[i]["terminal_observation"] = self.normalize_obs(infos[i]["terminal_observation"])
        reset = None if self._reset_rows is None else self._reset_rows.of_step(dones)
        if self.training:
            self.returns *= self.gamma
            self.returns += rewards
            # next-step reset rows are no steps: their return (0) is no sample of the returns
            self.ret_rms.update(self.returns if reset is None or not reset.any() else self.returns[~reset])
        scaled = self.normalize_reward(rewards)
        self.returns[dones] = 0.0
        return normalized, scaled, dones, infos

    def recv(self, timeout: float | None = None) -> VecEnvRecvReturn:
        """The next batch: statistics updated from its rows, each env's return its own.

        A reset row (an env's first after ``async_reset``) enters the observation
        statistics like ``reset``'s observations do and starts the env's return at 0.
        """
        obs, rewards, dones, infos, env_ids = self.venv.recv(timeout)
        fresh = self._take_fresh(env_ids)
        self.old_obs, self.old_reward = obs, rewards
        normalized = self._update_and_normalize(obs)
        for j in np.flatnonzero(dones):
            if "terminal_observation" in infos[j]:
                infos[j]["terminal_observation"] = self.normalize_obs(infos[j]["terminal_observation"])
        if self._reset_rows is not None:  # next-step reset rows start the env's return too
            fresh = fresh | self._reset_rows.of_recv(env_ids, dones)
        self.returns[env_ids[fresh]] = 0.0
        stepped = env_ids[~fresh]
        if self.training and len(stepped):
            self.returns[stepped] = self.returns[stepped] * self.gamma + rewards[~fresh]
            self.ret_rms.update(self.returns[stepped])
        scaled = self.normalize_reward(rewards)
        self.returns[env_ids[dones]] = 0.0
        return normalized, scaled, dones, infos, env_ids

    def reset_single_env(self, index: int) -> Any:
        obs = self.venv.reset_single_env(index)
        self.returns[index] = 0.0
        if self.training and self.norm_obs:
            keys = self.norm_obs_keys
            self._update_obs(batch_of_one(obs if keys is None else {key: obs[key] for key in keys}))
        return self.normalize_obs(obs)

    def reset_envs(self, indices: VecEnvIndices = None, seed: Any = None, options: Any = None) -> VecEnvObs:
        obs = self.venv.reset_envs(indices, seed=seed, options=options)
        self.returns[self._env_ids(indices)] = 0.0
        return self._update_and_normalize(obs)

    def _update_obs(self, obs: Any) -> None:
        if isinstance(self.obs_rms, RunningMeanStd):
            self.obs_rms.update(obs)
            return
        for key, rms in (self.obs_rms or {}).items():
            rms.update(obs[key])

    def _update_and_normalize(self, obs: Any) -> VecEnvObs:
        """Update the statistics with a batch (when training), then normalize it."""
        if not (self.training and self.norm_obs):
            return self.normalize_obs(obs)
        if isinstance(self.obs_rms, RunningMeanStd):
            return self.obs_rms.update_and_normalize(obs, self.epsilon, self.clip_obs)
        out = dict(obs)
        for key, rms in (self.obs_rms or {}).items():
            out[key] = rms.update_and_normalize(obs[key], self.epsilon, self.clip_obs)
        return out

    # -------------------------------------------------------- normalization
    def normalize_obs(self, obs: Any) -> Any:
        """Normalize a batch or a single observation with the current statistics."""
        if not self.norm_obs:
            return obs
        if isinstance(self.obs_rms, RunningMeanStd):
            return self._normalize_leaf(obs, self.obs_rms)
        out = dict(obs)
        for key, rms in (self.obs_rms or {}).items():
            out[key] = self._normalize_leaf(obs[key], rms)
        return out

    def _normalize_leaf(self, x: np.ndarray, rms: RunningMeanStd) -> np.ndarray:
        return rms.normalize(x, self.epsilon, self.clip_obs)

    def normalize_reward(self, rewards: Any) -> Any:
        """Divide by the running std of the discounted return, clip (no mean subtracted).

        ``rewards``: a batch, or one reward (a number: the result is a float32 scalar)."""
        if not self.norm_reward:
            return rewards
        scaled = np.divide(rewards, math.sqrt(float(self.ret_rms.var) + self.epsilon), dtype=np.float32)
        if not isinstance(scaled, np.ndarray):  # one reward
            return np.float32(min(max(scaled, -self.clip_reward), self.clip_reward))
        return np.clip(scaled, -self.clip_reward, self.clip_reward, out=scaled)

    def unnormalize_obs(self, obs: Any) -> Any:
        """``normalize_obs`` undone with the current statistics (clipping aside): a batch or
        a single observation, as float64 (a Dict's keys that are not normalized as they are)."""
        if not self.norm_obs:
            return obs
        if isinstance(self.obs_rms, RunningMeanStd):
            return self._unnormalize_leaf(obs, self.obs_rms)
        out = dict(obs)
        for key, rms in (self.obs_rms or {}).items():
            out[key] = self._unnormalize_leaf(obs[key], rms)
        return out

    def _unnormalize_leaf(self, x: np.ndarray, rms: RunningMeanStd) -> np.ndarray:
        return np.asarray(x) * np.sqrt(rms.var + self.epsilon) + rms.mean

    def unnormalize_reward(self, rewards: Any) -> Any:
        """``normalize_reward`` undone with the current statistics (clipping aside)."""
        if not self.norm_reward:
            return rewards
        return rewards * math.sqrt(float(self.ret_rms.var) + self.epsilon)

    def get_original_obs(self) -> VecEnvObs | None:
        """The observations of the last reset / step, before normalization (None before any)."""
        return self.old_obs

    def get_original_reward(self) -> np.ndarray | None:
        """The rewards of the last step, before scaling (None before any)."""
        return self.old_reward

    # -------------------------------------------------------- save and load
    def settings(self) -> dict[str, Any]:
        """The constructor arguments (but ``venv``) that rebuild this wrapper."""
        return {"training": self.training, "norm_obs": self.norm_obs, "norm_reward": self.norm_reward,
                "clip_obs": self.clip_obs, "clip_reward": self.clip_reward, "gamma": self.gamma,
                "epsilon": self.epsilon, "norm_obs_keys": self.norm_obs_keys}

    def save(self, path: str | os.PathLike) -> None:
        """Write the statistics and settings to ``path`` (a NumPy ``.npz``, no pickle).

        The file is written next to ``path`` under a temporary name, then renamed over
        it, so a reader never sees a half-written file.
        """
        metadata = {"format_version": FORMAT_VERSION, "settings": self.settings(),
                    "observation_space": space_fingerprint(self.venv.observation_space),
                    "observation_space_text": str(self.venv.observation_space)}
        arrays = {"metadata": np.array(json.dumps(metadata))}
        arrays.update(_rms_arrays("ret_rms", self.ret_rms))
        for j, rms in enumerate(self._obs_rms_list()):
            arrays.update(_rms_arrays(f"obs_rms.{j}", rms))
        _write_atomically(os.fspath(path), arrays)

    @classmethod
    def load(cls, path: str | os.PathLike, venv: VecEnvBase) -> VecNormalize:
        """A VecNormalize over ``venv`` with the settings and statistics saved at ``path``.

        Raises:
            VecNormalizeFileError: the file is truncated or corrupt, has a newer format
                version, or was saved for another observation space.
        """
        path = os.fspath(path)
        metadata, arrays = _read_file(path)
        if metadata.get("observation_space") != space_fingerprint(venv.observation_space):
            raise VecNormalizeFileError(FILE_WRONG_SPACE.format(
                path=path, saved=metadata.get("observation_space_text"), received=venv.observation_space))
        _check_saved_settings(metadata["settings"], path)
        try:
            wrapper = cls(venv, **metadata["settings"])
        except (KeyError, TypeError, ValueError) as exc:
            raise VecNormalizeFileError(FILE_CORRUPT.format(path=path, reason=f"bad settings: {exc}")) from exc
        _restore_rms(wrapper.ret_rms, "ret_rms", arrays, path)
        for j, rms in enumerate(wrapper._obs_rms_list()):
            _restore_rms(rms, f"obs_rms.{j}", arrays, path)
        return wrapper

    def _obs_rms_list(self) -> list[RunningMeanStd]:
        if self.obs_rms is None:
            return []
        if isinstance(self.obs_rms, RunningMeanStd):
            return [self.obs_rms]
        return list(self.obs_rms.values())


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _check_saved_settings(settings: dict[str, Any], path: str) -> None:
    """Every setting of a saved file of the type and range ``save`` writes (a hand-edited
    ``"training": "false"`` or ``"epsilon": Infinity`` would load and misbehave)."""
    for name, value in settings.items():
        check, expected = SAVED_SETTINGS.get(name, (None, ""))
        if check is None:
            reason = f"unknown setting {name!r}; the settings are {sorted(SAVED_SETTINGS)}"
        elif check(value):
            continue
        else:
            reason = SAVED_SETTING.format(name=name, expected=expected, value=value, kind=type(value).__name__)
        raise VecNormalizeFileError(FILE_CORRUPT.format(path=path, reason=reason))


# ------------------------------------------------------------------ spaces
def _check_settings(**values: float) -> None:
    expected = {"clip_obs": "> 0", "clip_reward": "> 0", "gamma": "in [0, 1]", "epsilon": "> 0"}
    for name, value in values.items():
        good = 0.0 <= value <= 1.0 if name == "gamma" else value > 0
        if not good:
            raise ValueError(BAD_SETTING.format(name=name, expected=f"a number {expected[name]}", value=value))


def _obs_keys(space: spaces.Space, norm_obs_keys: Sequence[str] | None) -> list[str] | None:
    """None for a Box space, the keys to normalize for a Dict space."""
    if isinstance(space, spaces.Box):
        if norm_obs_keys is not None:
            raise ValueError(f"VecNormalize: norm_obs_keys={list(norm_obs_keys)!r} is applicable only to a Dict "
                             f"observation space, received {space}")
        return None
    if not isinstance(space, spaces.Dict):
        raise ValueError(UNSUPPORTED_SPACE.format(space=space))
    valid = [key for key, sub in space.spaces.items() if isinstance(sub, spaces.Box)]
    keys = valid if norm_obs_keys is None else list(norm_obs_keys)
    for key in keys:
        if key not in valid:
            raise ValueError(BAD_OBS_KEY.format(key=key, valid=valid))
    return keys


def _normalized_space(space: spaces.Space, keys: list[str] | None, clip_obs: float) -> spaces.Space:
    def bounded(box: spaces.Box) -> spaces.Box:
        return spaces.Box(-clip_obs, clip_obs, box.shape, np.float32)
    if isinstance(space, spaces.Box):
        return bounded(space)
    assert isinstance(space, spaces.Dict) and keys is not None  # what _obs_keys accepted
    return spaces.Dict({k: bounded(s) if k in keys and isinstance(s, spaces.Box) else s
                        for k, s in space.spaces.items()})


def _make_obs_rms(space: spaces.Space, keys: list[str] | None) -> RunningMeanStd | dict[str, RunningMeanStd]:
    if isinstance(space, spaces.Box):
        return RunningMeanStd(space.shape)
    assert isinstance(space, spaces.Dict) and keys is not None  # what _obs_keys accepted
    boxes = {key: sub for key, sub in space.spaces.items() if isinstance(sub, spaces.Box)}
    return {key: RunningMeanStd(boxes[key].shape) for key in keys}


# -------------------------------------------------------------------- files
def _rms_arrays(prefix: str, rms: RunningMeanStd) -> dict[str, np.ndarray]:
    return {f"{prefix}.mean": rms.mean, f"{prefix}.var": rms.var,
            f"{prefix}.count": np.array(rms.count, np.float64)}


def _restore_rms(rms: RunningMeanStd, prefix: str, arrays: dict[str, np.ndarray], path: str) -> None:
    try:
        mean, var, count = (arrays[f"{prefix}.{name}"] for name in ("mean", "var", "count"))
    except KeyError as exc:
        raise VecNormalizeFileError(FILE_CORRUPT.format(path=path, reason=f"missing array {exc}")) from None
    if mean.shape != rms.shape or var.shape != rms.shape or count.shape != ():
        raise VecNormalizeFileError(FILE_CORRUPT.format(
            path=path, reason=f"{prefix} has shapes {mean.shape}, {var.shape}, {count.shape}; expected "
                              f"{rms.shape}, {rms.shape}, ()"))
    problem = _statistics_problem(prefix, mean, var, count)
    if problem:
        raise VecNormalizeFileError(FILE_CORRUPT.format(path=path, reason=problem))
    rms.mean, rms.var, rms.count = mean.astype(np.float64), var.astype(np.float64), float(count)


def _statistics_problem(prefix: str, mean: np.ndarray, var: np.ndarray, count: np.ndarray) -> str | None:
    """Why these saved statistics are impossible (None if they are fine)."""
    for name, arr in (("mean", mean), ("var", var), ("count", count)):
        if arr.dtype.kind not in "iuf":
            return f"{prefix}.{name} has dtype {arr.dtype}; expected real numbers"
        if not np.isfinite(arr).all():
            return f"{prefix}.{name} holds NaN or infinite values"
    if (var < 0).any():
        return f"{prefix}.var holds negative variances (min {var.min()}); a variance is >= 0"
    if count < 0:
        return f"{prefix}.count is {count}; a count is >= 0"
    return None


def _write_atomically(path: str, arrays: dict[str, np.ndarray]) -> None:
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".vecnormalize-", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, allow_pickle=False, **arrays)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _refuse_pickle(path: str) -> None:
    """A VecNormalizeFileError naming the converter when ``path`` holds a pickle."""
    try:
        with open(path, "rb") as f:
            start = f.read(1)
    except IsADirectoryError:
        return  # np.load says what is wrong
    if start == PICKLE_START:
        raise VecNormalizeFileError(FILE_SB3_PICKLE.format(path=path))


def _read_file(path: str) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The metadata and arrays of a saved file; a clear error for any unusable file."""
    _refuse_pickle(path)
    try:
        loaded = np.load(path, allow_pickle=False)
        if not isinstance(loaded, np.lib.npyio.NpzFile):
            raise ValueError("not an .npz archive")
        with loaded as npz:
            arrays = {name: npz[name] for name in npz.files}
        metadata = json.loads(str(arrays.pop("metadata")[()]))
        version = metadata["format_version"]
    except FileNotFoundError:
        raise
    except (OSError, ValueError, EOFError, KeyError, TypeError, IndexError, zipfile.BadZipFile) as exc:
        raise VecNormalizeFileError(FILE_CORRUPT.format(path=path, reason=f"{type(exc).__name__}: {exc}")) from exc
    if not isinstance(version, int) or not isinstance(metadata.get("settings"), dict):
        raise VecNormalizeFileError(FILE_CORRUPT.format(path=path, reason="malformed metadata"))
    if version > FORMAT_VERSION:
        raise VecNormalizeFileError(FILE_NEWER.format(path=path, found=version, supported=FORMAT_VERSION))
    return metadata, arrays
