"""After an env failed mid-batch, or a Ctrl-C stopped a call part-way, a VecEnv refuses to go on
until it is reset.

An env raising in ``step`` / ``step_wait`` / ``recv`` / ``reset`` (``on_error="raise"``, or
``"restart"`` past ``max_restarts``) leaves the batch part-way. The base class records the failure
here; until a successful reset, every call but those that start the envs afresh (and ``close``)
raises ``BrokenVecEnvError`` naming the env, its method and what to do. A KeyboardInterrupt (or other
non-``Exception``) stopping a call that talks to the envs may leave messages in flight: the VecEnv is
*interrupted*, and refuses even env access until a reset (which drains them first) or ``close()``.
"""
from __future__ import annotations

import sys
from typing import NoReturn

from vec_envs.errors import BrokenVecEnvError, EnvCallFailed, EnvWorkerError

__all__ = ["ALLOWED_WHEN_BROKEN", "ALLOWED_WHEN_INTERRUPTED", "TALKS_TO_ENVS", "FailureState", "env_exception"]

#: what an interrupted VecEnv still accepts: the calls that reset it, and what prepares that reset
ALLOWED_WHEN_INTERRUPTED = frozenset({"reset", "reset_async", "reset_wait", "async_reset", "seed", "set_options"})
#: what a broken VecEnv still accepts: those, and the env access to look at or repair envs before the
#: reset (close() checks nothing); nothing that steps
ALLOWED_WHEN_BROKEN = ALLOWED_WHEN_INTERRUPTED | {"get_attr", "set_attr", "env_method", "env_is_wrapped",
                                                  "get_images", "render"}
#: the calls that talk to the envs: an interrupt part-way through one leaves the VecEnv interrupted
TALKS_TO_ENVS = frozenset({"reset", "step", "step_async", "step_wait", "reset_async", "reset_wait", "async_reset",
                           "recv", "send", "reset_single_env", "get_attr", "set_attr", "env_method", "env_is_wrapped",
                           "get_images", "render", "get_states", "set_states", "sync_states", "step_batch"})
BROKEN = ("{cls}.{method}() refused: env {env} raised in {failed}() ({error}), which left the batch part-way "
          "(which other envs ran depends on the backend); call reset() to start every env afresh, or close()")
#: the attribute an env's own exception carries: (env index, method), read by a VecEnv over the one it came from
ENV_FAILURE_TAG = "_vec_envs_env_failure"
INTERRUPTED = ("{cls}.{method}() refused: a {error} stopped {failed}() part-way, which may have left envs "
               "part-stepped and answers in flight; call reset() to start every env afresh, or close()")


def env_exception(failure: EnvCallFailed, backend: str) -> BaseException:
    """The env's own exception behind ``failure``, with a note naming the env and the method."""
    cause = failure.__cause__ or failure
    cause.__cause__, cause.__suppress_context__ = None, True  # as ``raise cause from None``
    setattr(cause, ENV_FAILURE_TAG, (failure.env_index, failure.method))  # a VecEnv over this one knows it too
    if sys.version_info >= (3, 11):  # Python 3.10 has no exception notes: the cause goes as it is
        cause.add_note(f"(raised by env {failure.env_index} in {backend}, method {failure.method})")
    return cause


class FailureState:
    """The failure a VecEnv is broken by, if any."""

    def __init__(self, cls_name: str) -> None:
        self.cls_name, self.method = cls_name, ""
        self.env_index: int | None = None
        self.error: BaseException | None = None
        self.interrupted = False  # the error is an interrupt (KeyboardInterrupt, ...), not an env's

    def fail(self, exc: BaseException, method: str) -> NoReturn:
        """Note ``exc`` if an env failure of ``method``, and raise it (an ``EnvCallFailed`` as the env's own)."""
        try:
            if isinstance(exc, EnvCallFailed):
                self.env_index, self.method = exc.env_index, exc.method
                self.error = env_exception(exc, self.cls_name)
                raise self.error
            if isinstance(exc, EnvWorkerError):
                self.env_index, self.method, self.error = exc.env_index, exc.method or method, exc
            elif getattr(exc, ENV_FAILURE_TAG, None) is not None:  # an env's, through a VecEnv inside this one
                (self.env_index, self.method), self.error = getattr(exc, ENV_FAILURE_TAG), exc
            raise exc
        finally:  # the traceback holds this frame: its name for the error would be a cycle keeping the
            del exc  # traceback's frames (and their views of shared memory) alive until a garbage collection

    def interrupt(self, exc: BaseException, method: str) -> None:
        """``method`` was stopped part-way by ``exc`` (no ``Exception``: a Ctrl-C)."""
        self.env_index, self.method, self.error, self.interrupted = None, method, exc, True

    def clear(self) -> None:
        """The envs were reset: calls are accepted again."""
        self.error, self.interrupted = None, False

    def check(self, method: str) -> None:
        """Raise BrokenVecEnvError if broken and ``method`` is not one that resets."""
        if self.error is None or method in (ALLOWED_WHEN_INTERRUPTED if self.interrupted else ALLOWED_WHEN_BROKEN):
            return
        name = type(self.error).__name__
        if self.interrupted:
            message = INTERRUPTED.format(cls=self.cls_name, method=method, error=name, failed=self.method)
        else:
            first = str(self.error).split("\n", 1)[0]
            env = "?" if self.env_index is None else self.env_index
            message = BROKEN.format(cls=self.cls_name, method=method, env=env, failed=self.method,
                                    error=f"{name}: {first}" if first else name)
        raise BrokenVecEnvError(message, env_index=self.env_index, method=method,
                                failed_method=self.method) from self.error
