"""VecEnvWrapper and VecEnvObservationWrapper: layers over any VecEnv."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from gymnasium import spaces

from vec_envs.env_states import EnvStates
from vec_envs.spaces.batching import batch_of_one, get_row
from vec_envs.types import VecEnvIndices, VecEnvObs, VecEnvRecvReturn, VecEnvStepReturn
from vec_envs.vec_env_base import UNKNOWN, VecEnvBase

__all__ = ["ResetRows", "VecEnvWrapper", "VecEnvObservationWrapper"]

AMBIGUOUS = ("{cls} has no attribute {name!r}, and more than one VecEnv beneath it has one: {owners}; read it "
             "on the one you mean")
NO_RECV = ("{cls}.{method}(): {cls} does its own work in {where}() but has no {needed}() for "
           "asynchronous batches; use reset()/step(), or give it a {needed}() that follows env_ids")
NO_RECV_OVER_STEP = ("{cls}.{method}(): {cls} overrides step(), which recv()/send() never call, so its work would "
                     "be skipped on asynchronous batches; use reset()/step(), or move the work to step_wait() "
                     "(step_async() for actions) and give {cls} a recv() (send()) that follows env_ids")


class ResetRows:
    """For a wrapper over a next-step VecEnv: which rows of the batch its backend returned
    last are reset rows (the env's episode ended at its previous row, so this row is its
    reset: reward 0, no step). It reads the backend's own record (``EnvStates``), so a
    wrapper asks it right after its wrapped VecEnv returns a batch."""

    def __init__(self, states: EnvStates) -> None:
        self.states = states

    def of_step(self, dones: np.ndarray) -> np.ndarray:
        """The reset rows of the lock-step batch whose dones are ``dones``."""
        return self.states.reset_rows[:len(dones)]

    def of_recv(self, env_ids: np.ndarray, dones: np.ndarray) -> np.ndarray:
        """The reset rows of the ``recv`` batch of ``env_ids`` whose dones are ``dones``."""
        return self.states.reset_rows[:len(env_ids)]


class VecEnvWrapper(VecEnvBase):
    """Forwards everything to ``venv``; subclasses override ``reset`` / ``step_wait``.

    Unknown public attributes are looked up on ``venv`` too, so
    ``VecNormalize(VecFrameStack(SubprocVecEnv(...))).num_envs`` works. The wrapped env
    enforces the async protocol and the closed state; a wrapper keeps none of its own.

    ``async_reset`` / ``recv`` / ``send`` are forwarded as well. A wrapper with per-env
    state implements ``recv`` following ``env_ids`` (``_take_fresh`` says which rows are
    an env's first after ``async_reset``); one that overrides ``reset`` / ``step_wait``
    (``step_async``) without ``recv`` (``send``), or ``step`` itself without both, refuses
    asynchronous batches with a clear error instead of passing unprocessed rows through
    (checked by ``async_reset``, which every wrapper inherits, and ``recv`` / ``send``).

    A wrapper has the autoreset mode of the VecEnv it wraps (``autoreset_mode``); one with
    per-env state follows it: ``_reset_rows`` says which rows are next-step reset rows,
    and ``reset_envs`` (the agent's reset of some envs) is forwarded like ``reset``.

    Example:
        >>> class Doubled(VecEnvWrapper):
        ...     def step_wait(self, timeout=None):
        ...         obs, rewards, dones, infos = self.venv.step_wait(timeout)
        ...         return obs, 2 * rewards, dones, infos
    """

    def __init__(self, venv: VecEnvBase, observation_space: spaces.Space | None = None,
                 action_space: spaces.Space | None = None) -> None:
        if not isinstance(venv, VecEnvBase):
            raise TypeError(f"{type(self).__name__} wraps a VecEnvBase, received {type(venv).__name__}")
        self.venv = venv
        super().__init__(venv.num_envs, observation_space or venv.observation_space,
                         action_space or venv.action_space, venv.batch_size, venv.autoreset_mode)
        self._states.ended = None  # the backend keeps which envs ended; a wrapper forwards every call
        self._fresh = np.zeros(self.num_envs, np.bool_)  # next row is the env's reset row
        #: next-step autoreset: which rows are reset rows (None: the other modes)
        backend = venv.unwrapped._states
        self._reset_rows = ResetRows(backend) if backend.next_step else None

    def reset(self) -> VecEnvObs:
        return self.venv.reset()

    def step_async(self, actions: Any) -> None:
        self.venv.step_async(actions)

    def step_wait(self, timeout: float | None = None) -> VecEnvStepReturn:
        return self.venv.step_wait(timeout)

    def reset_async(self) -> None:
        """Start a reset on a worker backend (wrappers that keep reset as is only)."""
        self._reset_forward("reset_async")()

    def reset_wait(self, timeout: float | None = None) -> VecEnvObs:
        """Finish the reset started by ``reset_async``."""
        return self._reset_forward("reset_wait")(timeout)

    def _reset_forward(self, method: str) -> Callable[..., Any]:
        """The wrapped VecEnv's ``reset_async`` / ``reset_wait`` (worker backends have them)."""
        if type(self).reset not in (VecEnvWrapper.reset, VecEnvObservationWrapper.reset):
            raise NotImplementedError(
                f"{type(self).__name__}.{method}(): this wrapper does its own work in reset(); call "
                f"reset(), or {method}() on the backend (venv.unwrapped), whose observations skip it")
        forward = getattr(self.venv, method, None)
        if forward is None:
            raise NotImplementedError(f"{type(self).__name__}.{method}(): the wrapped "
                                      f"{type(self.venv).__name__} has no {method}(); call reset()")
        return forward

    # ------------------------------------------------------- asynchronous batches
    def async_reset(self) -> None:
        self._check_async_support("async_reset")
        self.venv.async_reset()
        self._fresh[:] = True

    def recv(self, timeout: float | None = None) -> VecEnvRecvReturn:
        self._check_async_support("recv")
        return self.venv.recv(timeout)

    def send(self, actions: Any, env_ids: Any) -> None:
        self._check_async_support("send")
        self.venv.send(actions, env_ids)

    def _take_fresh(self, env_ids: np.ndarray) -> np.ndarray:
        """Which rows of a ``recv`` are reset rows (an env's first since ``async_reset``)."""
        fresh = self._fresh[env_ids]
        self._fresh[env_ids] = False
        return fresh

    def _check_async_support(self, method: str) -> None:
        """NotImplementedError when this class does work in reset / step_wait (step_async)
        that its recv (send) would skip: one defined higher up its class chain."""
        depth = {name: _definer_depth(type(self), name)
                 for name in ("reset", "step", "step_wait", "step_async", "recv", "send")}
        if depth["step"] < min(depth["recv"], depth["send"]):  # recv/send reach neither step_wait nor step
            raise NotImplementedError(NO_RECV_OVER_STEP.format(cls=type(self).__name__, method=method))
        for work, needed in (("reset", "recv"), ("step_wait", "recv"), ("step_async", "send")):
            if depth[work] < depth[needed]:
                raise NotImplementedError(NO_RECV.format(cls=type(self).__name__, method=method,
                                                         where=work, needed=needed))

    # The hooks are never reached: the public methods above forward directly.
    def _reset(self, seeds: Any, options: Any) -> VecEnvObs:
        return self.venv.reset()

    def _step_async(self, actions: Any) -> None:
        self.venv.step_async(actions)

    def _step_wait(self, timeout: float | None) -> VecEnvStepReturn:
        return self.venv.step_wait(timeout)

    def _reset_single_env(self, index: int, seed: int | None) -> Any:
        return self.venv.reset_single_env(index)

    def reset_single_env(self, index: int) -> Any:
        return self.venv.reset_single_env(index)

    def reset_envs(self, indices: VecEnvIndices = None, seed: Any = None, options: Any = None) -> VecEnvObs:
        return self.venv.reset_envs(indices, seed=seed, options=options)

    def _env_ids(self, indices: VecEnvIndices) -> np.ndarray:
        """The env ids named by ``indices`` of a ``reset_envs`` (checked as the backend does)."""
        return np.asarray(self._indices(indices, "reset_envs"), np.int64)

    def seed(self, seed: Any = None) -> list[int | None]:
        return self.venv.seed(seed)

    def set_options(self, options: Any = None) -> None:
        self.venv.set_options(options)

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        return self.venv.get_attr(attr_name, indices)

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        self.venv.set_attr(attr_name, value, indices)

    def env_method(self, method_name: str, *method_args: Any, indices: VecEnvIndices = None,
                   **method_kwargs: Any) -> list[Any]:
        return self.venv.env_method(method_name, *method_args, indices=indices, **method_kwargs)

    def env_is_wrapped(self, wrapper_class: type, indices: VecEnvIndices = None) -> list[bool]:
        return self.venv.env_is_wrapped(wrapper_class, indices)

    def has_attr(self, attr_name: str) -> bool:
        return self.venv.has_attr(attr_name)

    def get_images(self) -> list[np.ndarray]:
        return self.venv.get_images()

    @property
    def reset_infos(self) -> list[dict[str, Any]]:
        return self.venv.reset_infos

    @reset_infos.setter
    def reset_infos(self, value: list[dict[str, Any]]) -> None:
        pass  # the wrapped env owns them

    def close_extras(self) -> None:
        self.venv.close()

    @property
    def closed(self) -> bool:
        return self.venv.closed

    @closed.setter
    def closed(self, value: bool) -> None:
        pass  # the wrapped env owns the closed state

    def close(self) -> None:
        if self._viewer is not None:
            self._viewer.close()
        self.venv.close()

    @property
    def unwrapped(self) -> VecEnvBase:
        return self.venv.unwrapped

    @property
    def render_mode(self) -> str | None:
        """The wrapped VecEnv's ``render_mode`` (unless one is set on this wrapper)."""
        if self._render_mode is UNKNOWN:
            return self.venv.render_mode
        mode: str | None = self._render_mode
        return mode

    @render_mode.setter
    def render_mode(self, mode: str | None) -> None:
        self._render_mode = mode

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name == "venv":
            raise AttributeError(f"{type(self).__name__} has no attribute {name!r}")
        owners = _owners(self.venv, name)
        if len(owners) > 1:
            raise AttributeError(AMBIGUOUS.format(cls=type(self).__name__, name=name, owners=", ".join(owners)))
        return getattr(self.venv, name)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.venv!r})"


class VecEnvObservationWrapper(VecEnvWrapper):
    """Implement ``process(obs)`` once; it is applied to ``reset``, ``step`` and every
    ``infos[i]["terminal_observation"]`` alike.

    Example:
        >>> class Scaled(VecEnvObservationWrapper):
        ...     def process(self, obs):
        ...         return obs / 255.0
    """

    def process(self, obs: VecEnvObs) -> VecEnvObs:
        """Transform a batch of observations (shaped (batch, ...): every env, or a ``recv``'s)."""
        raise NotImplementedError

    def process_terminal(self, index: int, terminal_obs: Any) -> Any:
        """Transform the terminal observation of env ``index`` (default: ``process`` on a
        batch of one). Stateful wrappers (frame stacks) override it."""
        return get_row(self.process(batch_of_one(terminal_obs)), 0)

    def reset(self) -> VecEnvObs:
        return self.process(self.venv.reset())

    def reset_wait(self, timeout: float | None = None) -> VecEnvObs:
        return self.process(self._reset_forward("reset_wait")(timeout))

    def reset_single_env(self, index: int) -> Any:
        return self.process_terminal(index, self.venv.reset_single_env(index))

    def reset_envs(self, indices: VecEnvIndices = None, seed: Any = None, options: Any = None) -> VecEnvObs:
        rows = self.venv.reset_envs(indices, seed=seed, options=options)
        env_ids = self._env_ids(indices)
        return self.process_rows(env_ids, rows)

    def process_rows(self, env_ids: np.ndarray, rows: VecEnvObs) -> VecEnvObs:
        """Transform the first observations of envs ``env_ids`` reset alone (``reset_envs``);
        default: ``process`` on them. Stateful wrappers (frame stacks) override it."""
        return self.process(rows)

    def step_wait(self, timeout: float | None = None) -> VecEnvStepReturn:
        obs, rewards, dones, infos = self.venv.step_wait(timeout)
        self._process_terminals(dones, infos, None)
        return self.process(obs), rewards, dones, infos

    def recv(self, timeout: float | None = None) -> VecEnvRecvReturn:
        obs, rewards, dones, infos, env_ids = self.venv.recv(timeout)
        self._process_terminals(dones, infos, env_ids)
        return self.process(obs), rewards, dones, infos, env_ids

    def _process_terminals(self, dones: np.ndarray, infos: list[dict[str, Any]], env_ids: np.ndarray | None) -> None:
        """``process_terminal`` on each terminal observation (row j is env ``env_ids[j]``)."""
        for j in np.flatnonzero(dones):
            if "terminal_observation" in infos[j]:
                index = int(j if env_ids is None else env_ids[j])
                infos[j]["terminal_observation"] = self.process_terminal(index, infos[j]["terminal_observation"])


def _owners(venv: VecEnvBase, name: str) -> list[str]:
    """The layers of ``venv``'s stack (outermost first, down to the backend) that hold
    ``name`` themselves, each as ``"Class (venv.venv...)"``."""
    owners, path, layer = [], "venv", venv
    while True:
        if name in vars(layer) or hasattr(type(layer), name):
            owners.append(f"{type(layer).__name__} ({path})")
        if not isinstance(layer, VecEnvWrapper):
            return owners
        layer, path = layer.venv, path + ".venv"


def _definer_depth(cls: type, name: str) -> int:
    """How far up ``cls.__mro__`` the class that defines ``name`` is (0: ``cls`` itself)."""
    return next(depth for depth, klass in enumerate(cls.__mro__) if name in vars(klass))

