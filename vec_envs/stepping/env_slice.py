"""EnvSlice: a run of envs built in one process and stepped in series.

It is the one place where envs are stepped: DummyVecEnv holds one slice with every env,
each worker of SubprocVecEnv / RayVecEnv holds one slice of the batch. A slice writes
observations, rewards and dones into ``BatchBuffers`` (local arrays, or views of shared
memory) and returns only the infos. What an env returns is checked here, once for every
backend (``env_output``: reward, flags, info; ``batching``: the observation's shape and
dtype). Any env exception, and any such check that fails, leaves as ``EnvCallFailed``
naming the env's global index and the method, with the exception chained.

Infos are handed out as copies (``dict(info)``, shallow): an env that updates one info
dict in place cannot change what a caller kept, nor see what a caller added; values
inside an info (nested dicts, arrays) are still the env's own.

An env whose episode ended is reset at once (baselines-style, same-step autoreset), and
its info gains ``terminal_observation`` and ``TimeLimit.truncated``. Where the buffers
have terminal rows (shared memory) the slice writes those two there instead, so an
episode's end adds nothing to a worker's reply; whoever reads the batch adds them back
(``ended_infos.py``). A slice that defers resets (``defer_resets``: next-step and
disabled autoreset, ``vec_envs.autoreset``) leaves an ended env's last observation in its
row, marks it ``pending`` and resets it at its next step instead of stepping it (reward 0,
done False, the reset info as its info); only ``TimeLimit.truncated`` is added at the end.

Where it is built, a C loop (``_step_kernel.c``) steps the envs and stores each quiet
result (array observation of the space's shape and dtype, usual reward type, no episode
end, empty info) itself; it hands every other result, and any exception, to ``_settle``,
the Python path that checks and stores it. Both store the same bits. ``step_run`` steps
a run of envs reporting each one done to a ``DoneHook`` as soon as it is, for readers
that take every env as soon as it is done (a worker answering its parent).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any, NamedTuple

import numpy as np
from gymnasium import spaces

from vec_envs import kernels
from vec_envs.errors import EnvCallFailed
from vec_envs.planning.env_state import get_env_state, set_env_state
from vec_envs.spaces.batching import BatchBuffers, ObservationError, copy_obs, copy_row, get_row, make_writer
from vec_envs.stepping.env_output import USUAL_REWARDS, check_reset_result, check_step_result
from vec_envs.stepping.old_gym_adapter import as_gymnasium_env
from vec_envs.types import EnvFn, Info

_step_kernel: ModuleType | None = kernels.load("step")  # None: not built, or VEC_ENVS_KERNELS=0

__all__ = ["DoneHook", "EnvSlice", "env_attr", "set_env_attr", "is_wrapped"]

#: the spaces whose observations are arrays the C loop can copy into a row as they are
_ARRAY_SPACES = (spaces.Box, spaces.MultiBinary, spaces.MultiDiscrete)


def env_attr(env: Any, name: str) -> Any:
    """``env.name``, looked up through gymnasium wrappers."""
    getter = getattr(env, "get_wrapper_attr", None)
    return getter(name) if getter is not None else getattr(env, name)


def set_env_attr(env: Any, name: str, value: Any) -> None:
    """Set ``name`` where it lives in the wrapper chain (on the outer env if nowhere)."""
    setter = getattr(env, "set_wrapper_attr", None)
    if setter is not None:
        setter(name, value)
    else:
        setattr(env, name, value)


def is_wrapped(env: Any, wrapper_class: type) -> bool:
    """True when ``wrapper_class`` is anywhere in the env's wrapper chain."""
    while env is not None:
        if isinstance(env, wrapper_class):
            return True
        env = getattr(env, "env", None)
    return False


class DoneHook(NamedTuple):
    """How ``EnvSlice.step_run`` reports an env with nothing to say, the moment its rows are
    written: ``call(k)`` with its place in the slice, or the same in C (``c``: a capsule
    named ``vec_envs.on_done`` holding ``int (*fn)(void *ctx, Py_ssize_t k)`` and its
    ``ctx``), which the C step loop calls with no Python in between."""

    call: Callable[[int], None]
    c: Any = None


#: one env's result of ``EnvSlice.step_batch``: (state or None, reward, terminated, truncated, info)
BatchStepResult = tuple[Any, float, bool, bool, Info]


def _repeat_step(env: Any, action: Any, dt: int, index: int) -> tuple[Any, float, bool, bool, Info]:
    """Apply ``action`` up to ``dt`` times, stopping at the episode's end; rewards summed."""
    total = 0.0
    for _ in range(dt):
        obs, reward, terminated, truncated, info = check_step_result(env.step(action), index)
        total += float(reward)
        if terminated or truncated:
            break
    return obs, total, terminated, truncated, info


class EnvSlice:
    """Envs ``first_index, first_index + 1, ...`` stepped in series into shared buffers.

    Example:
        >>> import gymnasium as gym
        >>> s = EnvSlice([lambda: gym.make("CartPole-v1")] * 2)
        >>> infos = s.reset([0, 1]); s.buffers.obs.shape
        (2, 4)
        >>> s.close()
    """

    def __init__(self, env_fns: Sequence[EnvFn], first_index: int = 0) -> None:
        self.first_index = first_index
        self._running: Any = None  # where to say which env runs (see track_running)
        self.envs = [self._call(k, "__init__", lambda: as_gymnasium_env(fn()))
                     for k, fn in enumerate(env_fns)]
        self.observation_space = self.envs[0].observation_space
        self.action_space = self.envs[0].action_space
        self._check_spaces_agree()
        self.reset_infos: list[Info] = [{} for _ in self.envs]
        #: envs whose episode ended and whose next step is their reset (None: resets in the same step)
        self.pending: np.ndarray | None = None
        self.attach(BatchBuffers.allocate(self.observation_space, len(self.envs)))

    def __len__(self) -> int:
        return len(self.envs)

    def track_running(self, slot: Any) -> None:
        """Keep ``slot[0]`` = 1 + the global index of the env being called, 0 between calls.

        ``slot`` is a writable int view in shared memory: should the process die inside
        an env, the parent reads there which env it was running.
        """
        self._running = slot
        self._rows = self._kernel_rows()

    def _call(self, k: int, method: str, fn: Callable[[], Any]) -> Any:
        running = self._running
        if running is not None:
            running[0] = self.first_index + k + 1
        try:
            return fn()
        except Exception as exc:
            raise EnvCallFailed(self.first_index + k, method) from exc
        finally:
            if running is not None:
                running[0] = 0

    def _check_spaces_agree(self) -> None:
        for k, env in enumerate(self.envs[1:], start=1):
            for name in ("observation_space", "action_space"):
                if getattr(env, name) != getattr(self, name):
                    err = ValueError(f"env {self.first_index + k} has {name} {getattr(env, name)}, "
                                     f"but env {self.first_index} has {getattr(self, name)}: "
                                     "every env of a VecEnv must have the same spaces")
                    raise EnvCallFailed(self.first_index + k, "__init__") from err

    def defer_resets(self, pending: bool = False) -> None:
        """Reset an ended env at its next step, not in the step that ended it (next-step and
        disabled autoreset); with ``pending`` every env's next step is its reset (envs not
        reset yet, in a worker that replaced one)."""
        self.pending = np.full(len(self.envs), pending, np.bool_)
        self._rows = self._kernel_rows()

    def attach(self, buffers: BatchBuffers) -> None:
        """Write results into ``buffers`` (rows 0..len-1 are this slice's envs)."""
        self.buffers = buffers
        self._write_row = make_writer(self.observation_space, buffers.obs)
        self._rewards, self._dones = buffers.rewards, buffers.dones  # one lookup each per step
        self._rows = self._kernel_rows()

    def _kernel_rows(self) -> tuple | None:
        """What the C step loop writes into (``_step_kernel.c``), or None where it cannot:
        no kernel built, an observation that is no single array, buffers of other dtypes."""
        buffers = getattr(self, "buffers", None)
        if _step_kernel is None or buffers is None or not isinstance(self.observation_space, _ARRAY_SPACES):
            return None
        arrays = (buffers.obs, buffers.rewards, buffers.dones)
        if not all(type(a) is np.ndarray and a.flags.c_contiguous and a.flags.writeable for a in arrays) \
                or buffers.rewards.dtype != np.float32 or buffers.dones.dtype != np.bool_:
            return None
        terminal = buffers.terminal_obs, buffers.time_limit_truncated
        if not all(a is None or (type(a) is np.ndarray and a.flags.c_contiguous and a.flags.writeable)
                   for a in terminal):
            terminal = None, None
        return (self.envs, buffers.obs, buffers.rewards, buffers.dones, *terminal, self.reset_infos, self._running,
                self.first_index, tuple(USUAL_REWARDS), np.ndarray, self.pending)

    def _write(self, k: int, obs: Any, method: str) -> None:
        """Store env ``k``'s observation; a wrong one names the env and the method."""
        try:
            self._write_row(k, obs)
        except ObservationError as exc:
            raise self._named(exc, k, method) from None

    def _named(self, exc: ObservationError, k: int, method: str) -> ObservationError:
        return ObservationError(f"env {self.first_index + k} returned from {method}(): {exc}")

    def _reset_env(self, k: int, seed: int | None = None, options: dict | None = None) -> None:
        env = self.envs[k]
        self._store_reset(k, self._call(k, "reset", lambda: env.reset(seed=seed, options=options)))

    def _store_reset(self, k: int, result: Any) -> None:
        """Check env ``k``'s reset ``result``, store its observation and its reset info."""
        index = self.first_index + k
        obs, info = self._call(k, "reset", lambda: check_reset_result(result, index))
        self._call(k, "reset", lambda: self._write(k, obs, "reset"))
        self.reset_infos[k] = self._call(k, "reset", lambda: dict(info))

    def reset(self, seeds: Sequence[int | None] | None = None,
              options: Sequence[dict | None] | None = None) -> list[Info]:
        """Reset every env (env k with ``seeds[k]`` and ``options[k]``); returns the reset infos."""
        for k in range(len(self.envs)):
            self._reset_env(k, None if seeds is None else seeds[k], None if options is None else options[k])
        if self.pending is not None:
            self.pending[:] = False
        return self.reset_infos

    def reset_one(self, k: int, seed: int | None = None) -> Any:
        """Reset env ``k`` of this slice alone; returns its observation (a copy)."""
        self.reset_env(k, seed)
        return copy_obs(get_row(self.buffers.obs, k))

    def reset_env(self, k: int, seed: int | None = None, options: dict | None = None) -> Info:
        """Reset env ``k`` into its row (reward 0, done False there); returns its reset info."""
        self._reset_env(k, seed, options)
        self._rewards[k] = 0.0
        self._dones[k] = False
        if self.pending is not None:
            self.pending[k] = False
        return self.reset_infos[k]

    def step(self, actions: Sequence[Any]) -> list[Info]:
        """Step env k with ``actions[k]`` (one action per env); an env whose episode ended
        is reset at once."""
        rows = self._rows
        if rows is None:
            step_env = self.step_env
            return [step_env(k, action) for k, action in enumerate(actions)]
        infos: list[Info] = []
        k, n = 0, len(self.envs)
        while k < n:  # the C loop stores the usual results; each other one is settled here
            k, result, error, resetting, step_info = _step_kernel.step_quiet(rows, actions, 0, k, n, infos)  # type: ignore[union-attr]
            if k < n:
                infos.append(self._settle_reset(k, result, error, step_info) if resetting
                             else self._settle(k, result, error))
                k += 1
        return infos

    def step_env(self, k: int, action: Any) -> Info:
        """Step env ``k`` into its row; if its episode ended, reset it at once. Its info."""
        rows = self._rows
        if rows is not None:
            infos: list[Info] = []
            done, result, error, resetting, step_info = _step_kernel.step_quiet(rows, (action,), k, k, k + 1, infos)  # type: ignore[union-attr]
            if done > k:
                return infos[0]
            return self._settle_reset(k, result, error, step_info) if resetting else self._settle(k, result, error)
        if self.pending is not None and self.pending[k]:  # its episode ended: this step is its reset
            return dict(self.reset_env(k))
        running = self._running
        if running is not None:
            running[0] = self.first_index + k + 1
        try:
            result = self.envs[k].step(action)
        except Exception as exc:
            raise EnvCallFailed(self.first_index + k, "step") from exc
        return self._settle(k, result, None)

    def step_run(self, actions: Sequence[Any], offset: int, start: int, stop: int, done: DoneHook,
                 said: list[tuple[int, Info]]) -> None:
        """Step envs ``start:stop`` (env k with ``actions[k - offset]``): each with nothing to
        say is reported to ``done`` as soon as its rows are written; each other one is
        appended to ``said`` as ``(k, info)`` (its rows, and its reset info after an episode's
        end, stored), not reported. An env's failure raises ``EnvCallFailed`` (``said`` keeps
        the envs before it)."""
        rows, k = self._rows, start
        hook = None if rows is None else (done.call if done.c is None else done.c)
        while k < stop:
            if rows is None:
                info = self.step_env(k, actions[k - offset])
            else:  # the C loop stores and reports the usual results: k is the first it hands back
                infos: list[Info] = []
                ks: list[int] = []
                end, result, error, resetting, step_info = _step_kernel.step_quiet(  # type: ignore[union-attr]
                    rows, actions, offset, k, stop, infos, hook, ks)
                for j in ks:
                    said.append((j, infos[j - k]))
                if end == stop:
                    return
                k = end
                info = self._settle_reset(k, result, error, step_info) if resetting else self._settle(k, result, error)
            if info or (self._dones[k] and self.pending is None and self.reset_infos[k]):
                said.append((k, info))
            else:
                done.call(k)
            k += 1

    def _settle(self, k: int, result: Any, error: BaseException | None) -> Info:
        """Check and store env ``k``'s step ``result`` (or raise its ``error``); reset it if
        its episode ended. Its info."""
        index = self.first_index + k
        if error is not None:
            raise EnvCallFailed(index, "step") from error
        try:  # whatever the result makes fail (a broken info's __len__) is the env's failure
            obs, reward, terminated, truncated, info = check_step_result(result, index)
            self._write_row(k, obs)
            info = dict(info) if info else {}  # the caller's own (an env may reuse its dict)
            self._rewards[k] = reward
        except ObservationError as exc:
            raise EnvCallFailed(index, "step") from self._named(exc, k, "step")
        except Exception as exc:
            raise EnvCallFailed(index, "step") from exc
        if terminated or truncated:
            self._dones[k] = True
            if self.pending is None:
                self._auto_reset(k, info, truncated and not terminated)
            else:
                self._defer_reset(k, info, truncated and not terminated)
        else:
            self._dones[k] = False
        if self._running is not None:
            self._running[0] = 0
        return info

    def _settle_reset(self, k: int, result: Any, error: BaseException | None, step_info: Info | None) -> Info:
        """Env ``k``'s episode ended and the C loop stored its step and terminal rows: check
        and store the ``result`` of its reset (or raise the reset's ``error``). Its info (the
        step's, ``step_info``)."""
        if error is not None:
            raise EnvCallFailed(self.first_index + k, "reset") from error
        self._store_reset(k, result)
        if self._running is not None:
            self._running[0] = 0
        if self.pending is not None and self.pending[k]:  # a reset in place of a step: its row is the reset's
            self._rewards[k], self._dones[k], self.pending[k] = 0.0, False, False
            return dict(self.reset_infos[k])
        return step_info if step_info is not None else {}

    def _auto_reset(self, k: int, info: Info, time_limit_truncated: bool) -> None:
        """Keep env ``k``'s last observation (in ``info``, the caller's copy, or in the
        terminal rows), reset it."""
        buffers = self.buffers
        if buffers.terminal_obs is not None and buffers.time_limit_truncated is not None:
            copy_row(buffers.terminal_obs, buffers.obs, k)
            buffers.time_limit_truncated[k] = time_limit_truncated
        else:
            info["terminal_observation"] = copy_obs(get_row(buffers.obs, k))
            info["TimeLimit.truncated"] = time_limit_truncated
        self._reset_env(k)

    def _defer_reset(self, k: int, info: Info, time_limit_truncated: bool) -> None:
        """Env ``k``'s episode ended, its last observation stays in its row: its next step is
        its reset. ``TimeLimit.truncated`` goes in the terminal rows if any, else in ``info``."""
        truncated = self.buffers.time_limit_truncated
        if truncated is not None and self.buffers.terminal_obs is not None:
            truncated[k] = time_limit_truncated
        else:
            info["TimeLimit.truncated"] = time_limit_truncated
        self.pending[k] = True  # type: ignore[index]

    def ended(self, infos: Sequence[Info]) -> list[int]:
        """The envs (places in the slice) whose episode ended in the ``step()`` that returned
        ``infos``: those whose done is set, found among the non-empty infos when the
        terminal observations travel in them."""
        dones = self._dones
        if self.buffers.terminal_obs is None:
            return [k for k, info in enumerate(infos) if info and dones[k]] if any(infos) else []
        return [k for k, done in enumerate(dones.tolist()) if done]

    def get_attr(self, name: str, ks: Sequence[int]) -> list[Any]:
        return [self._call(k, "get_attr", lambda: env_attr(self.envs[k], name)) for k in ks]

    def set_attr(self, name: str, value: Any, ks: Sequence[int]) -> list[None]:
        return [self._call(k, "set_attr", lambda: set_env_attr(self.envs[k], name, value)) for k in ks]

    def env_method(self, name: str, args: tuple, kwargs: dict, ks: Sequence[int]) -> list[Any]:
        return [self._call(k, name, lambda: env_attr(self.envs[k], name)(*args, **kwargs))
                for k in ks]

    def env_is_wrapped(self, wrapper_class: type, ks: Sequence[int]) -> list[bool]:
        return [is_wrapped(self.envs[k], wrapper_class) for k in ks]

    def get_states(self, ks: Sequence[int]) -> list[Any]:
        """A snapshot of each env ``k`` in ``ks`` (see ``vec_envs.planning.env_state``)."""
        return [self._call(k, "get_state", lambda: get_env_state(self.envs[k], self.first_index + k))
                for k in ks]

    def set_states(self, states: Sequence[Any], ks: Sequence[int]) -> None:
        """Restore ``states[j]`` into env ``ks[j]``."""
        for k, state in zip(ks, states):
            self._call(k, "set_state", lambda: set_env_state(self.envs[k], state, self.first_index + k))

    def step_batch(self, actions: Sequence[Any], states: Sequence[Any] | None, dts: Sequence[int],
                   return_states: bool) -> list[BatchStepResult]:
        """For each env k: restore ``states[k]`` (if given), apply ``actions[k]`` ``dts[k]`` times.

        No auto-reset: an env whose episode ended stays at its last state. Observations
        go into the buffers; returns ``(new_state or None, reward, terminated, truncated,
        info)`` per env.
        """
        return [self._step_from(k, None if states is None else states[k], actions[k], dts[k], return_states)
                for k in range(len(self.envs))]

    def _step_from(self, k: int, state: Any, action: Any, dt: int, return_state: bool) -> BatchStepResult:
        env, index = self.envs[k], self.first_index + k
        if state is not None:
            self._call(k, "set_state", lambda: set_env_state(env, state, index))
        obs, reward, terminated, truncated, info = self._call(k, "step", lambda: _repeat_step(env, action, dt, index))
        self._call(k, "step", lambda: self._write(k, obs, "step"))
        new_state = self._call(k, "get_state", lambda: get_env_state(env, index)) if return_state else None
        return new_state, reward, terminated, truncated, self._call(k, "step", lambda: dict(info))

    def get_images(self) -> list[np.ndarray]:
        return [self._call(k, "render", lambda: self._image(k)) for k in range(len(self.envs))]

    def _image(self, k: int) -> np.ndarray:
        env = self.envs[k]
        frame = env.render()
        if frame is None or not hasattr(frame, "shape"):
            raise ValueError(
                f"env {self.first_index + k} returned {type(frame).__name__} from render() "
                f"(render_mode={getattr(env, 'render_mode', None)!r}); get_images() needs envs made "
                "with render_mode='rgb_array', e.g. env_kwargs={'render_mode': 'rgb_array'}"
            )
        return np.asarray(frame)

    def close(self) -> None:
        """Close every env; the first failure is raised after all were tried."""
        failure = None
        for k in range(len(self.envs)):
            try:
                self._call(k, "close", self.envs[k].close)
            except EnvCallFailed as exc:
                failure = failure or exc
        if failure is not None:
            raise failure
