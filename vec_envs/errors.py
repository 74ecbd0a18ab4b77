"""The error classes every backend and wrapper raises.

Each is a ``VecEnvError``, and also the builtin error it refines where one fits
(``EnvTimeoutError`` is a ``TimeoutError``), and gymnasium's error of the same name where
gymnasium has one (``AlreadyPendingCallError``, ``NoAsyncCallError``,
``ClosedEnvironmentError``), so a caller catches any of them.

Example:
    >>> import gymnasium as gym
    >>> from vec_envs import DummyVecEnv
    >>> venv = DummyVecEnv([lambda: gym.make("CartPole-v1")])
    >>> venv.close()
    >>> try:
    ...     venv.reset()
    ... except ClosedEnvironmentError as exc:
    ...     print(exc)
    DummyVecEnv.reset() called after close(); make a new DummyVecEnv instead
"""
from __future__ import annotations

import multiprocessing

from gymnasium import error as gym_error

__all__ = [
    "VecEnvError",
    "ClosedEnvironmentError",
    "AlreadyPendingCallError",
    "NoAsyncCallError",
    "EnvWorkerError",
    "BrokenVecEnvError",
    "EnvTimeoutError",
    "ConcurrentCallError",
    "EngineLimitError",
    "EnvCallFailed",
    "EnvOutputError",
    "is_own_check",
    "own_check",
]

FORKED_COPY = ("{cls}.{method}(): this VecEnv belongs to process {owner}, and this process ({pid}) is a fork "
               "of it; its workers stay the parent's, so build a new VecEnv in this process")


class VecEnvError(Exception):
    """Base class of every error this package raises on purpose."""


class ClosedEnvironmentError(VecEnvError, gym_error.ClosedEnvironmentError):
    """A method was called on a VecEnv after ``close()`` (also gymnasium's error of that name)."""


class AlreadyPendingCallError(VecEnvError, gym_error.AlreadyPendingCallError):
    """``step_async`` / ``reset_async`` while another call still waits for its ``*_wait``
    (also gymnasium's error of that name; ``name``: the pending call, when known)."""

    def __init__(self, message: str, name: str = "") -> None:
        Exception.__init__(self, message)
        self.name = name


class NoAsyncCallError(VecEnvError, gym_error.NoAsyncCallError):
    """``step_wait`` / ``reset_wait`` with no matching ``*_async`` call pending (also
    gymnasium's error of that name; ``name``: the wait called, when known)."""

    def __init__(self, message: str, name: str = "") -> None:
        Exception.__init__(self, message)
        self.name = name


class EnvWorkerError(VecEnvError):
    """An env failed inside a worker, or a worker died.

    Attributes:
        env_index: index of the env whose call failed; for a worker that died, the env
            it was running then (the first env of the worker when it was idle); None
            when no env was involved.
        env_indices: every env of that worker (all of them were lost with a dead worker).
        worker_index: index of the worker that ran it.
        method: the env method that was running ("step", "reset", "__init__", ...).
        remote_traceback: the worker's formatted traceback ("" when the worker died).
    """

    def __init__(
        self,
        message: str,
        *,
        env_index: int | None,
        worker_index: int | None,
        method: str,
        remote_traceback: str = "",
        env_indices: list[int] | None = None,
    ) -> None:
        super().__init__(message)
        self.env_index = env_index
        self.env_indices = list(env_indices) if env_indices is not None else (
            [] if env_index is None else [env_index])
        self.worker_index = worker_index
        self.method = method
        self.remote_traceback = remote_traceback


class BrokenVecEnvError(VecEnvError):
    """A call after an env failed mid-batch, before the VecEnv was reset.

    Attributes:
        env_index: the env that failed (None when unknown).
        method: the call refused.
        failed_method: the env method that failed ("step", "reset").
    """

    def __init__(self, message: str, *, env_index: int | None, method: str, failed_method: str) -> None:
        super().__init__(message)
        self.env_index = env_index
        self.method = method
        self.failed_method = failed_method


class EnvTimeoutError(VecEnvError, TimeoutError, multiprocessing.TimeoutError):
    """A wait ran past its timeout; ``env_indices`` lists the envs still busy. Also the
    builtin ``TimeoutError`` and ``multiprocessing.TimeoutError`` (which gymnasium's
    ``AsyncVectorEnv`` raises)."""

    def __init__(self, message: str, *, env_indices: list[int], method: str, timeout: float) -> None:
        super().__init__(message)
        self.env_indices = env_indices
        self.method = method
        self.timeout = timeout


class ConcurrentCallError(VecEnvError, RuntimeError):
    """A VecEnv was called from a second thread while a call from another was running.

    A VecEnv serves one caller at a time; the second call is refused at once (nothing
    blocks, nothing of the running call is disturbed).
    """


class EngineLimitError(VecEnvError, NotImplementedError):
    """ALEVecEnv was asked for something ale-py's C++ engine cannot do; the message
    names the alternative (usually ``make_atari_env`` with ``SubprocVecEnv``)."""


class EnvCallFailed(Exception):
    """Internal: an env method raised; carries the env index and method, the cause chained.

    Backends turn it into what their users expect: in-process backends re-raise the env's
    own exception with a note (``failure_state.env_exception``), worker backends raise
    ``EnvWorkerError``; ``ours``: the cause is a check of vec_envs' own (every env a new
    object, the same spaces), which every backend raises as its own class.
    """

    def __init__(self, env_index: int, method: str, ours: bool = False) -> None:
        super().__init__(f"env {env_index} raised in {method}()")
        self.env_index = env_index
        self.method = method
        self.ours = ours


def own_check(exc: BaseException) -> BaseException:
    """Mark ``exc`` as raised by a check of vec_envs' own (inside an env factory, say): a
    worker backend raises it as its own class, not as ``EnvWorkerError``."""
    exc._vec_envs_own_check = True  # type: ignore[attr-defined]
    return exc


def is_own_check(exc: BaseException) -> bool:
    """Was ``exc`` raised by a check of vec_envs' own (``own_check``)?"""
    return getattr(exc, "_vec_envs_own_check", False)


class EnvOutputError(TypeError):
    """An env returned something of the wrong type or structure from ``reset`` / ``step``."""
