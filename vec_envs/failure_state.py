"""After an env failed mid-batch, or a Ctrl-C stopped a call part-way, a VecEnv refuses to
go on until it is reset.

When an env raises in ``step`` / ``step_wait`` / ``recv`` / ``reset`` (and the backend
raises it: ``on_error="raise"``, or ``"restart"`` past ``max_restarts``), the batch is
left part-way: some envs stepped, some did not, and which depends on the backend. The
base class records the failure here; from then on every call but the ones that start
the envs afresh (and ``close``) raises ``BrokenVecEnvError`` naming the env that failed,
its method and what to do. A successful reset clears the record.

A KeyboardInterrupt (or any other exception that is no ``Exception``) that stops a call
talking to the envs leaves them part-stepped and the backend's messages possibly in
flight: the VecEnv is then *interrupted*, and refuses even the env access until a reset
(which drains what was in flight first) or ``close()``.
"""
from __future__ import annotations

import sys
from typing import NoReturn

from vec_envs.errors import BrokenVecEnvError, EnvCallFailed, EnvWorkerError

__all__ = ["ALLOWED_WHEN_BROKEN", "ALLOWED_WHEN_INTERRUPTED", "TALKS_TO_ENVS", "FailureState", "env_exception"]

#: what a VecEnv still accepts after a failure: the calls that reset it, what only prepares
#: the next reset, and the env access a user needs to look at or repair envs before that
#: reset (close() checks nothing); nothing that steps
ALLOWED_WHEN_BROKEN = frozenset({"reset", "reset_async", "reset_wait", "async_reset", "seed", "set_options",
                                 "get_attr", "set_attr", "env_method", "env_is_wrapped", "get_images", "render"})
#: what an interrupted VecEnv still accepts: the calls that reset it (reset_wait finishes the reset
#: reset_async started), and what prepares that reset
ALLOWED_WHEN_INTERRUPTED = frozenset({"reset", "reset_async", "reset_wait", "async_reset", "seed", "set_options"})
#: the calls that talk to the envs: an interrupt part-way through one leaves the VecEnv interrupted
TALKS_TO_ENVS = frozenset({"reset", "step", "step_async", "step_wait", "reset_async", "reset_wait", "async_reset",
                           "recv", "send", "reset_single_env", "get_attr", "set_attr", "env_method",
                           "env_is_wrapped", "get_images", "render", "get_states", "set_states", "sync_states",
                           "step_batch"})
BROKEN = ("{cls}.{method}() refused: env {env} raised in {failed}() ({error}), which left the batch "
          "part-way (which other envs ran depends on the backend); call reset() to start every env afresh, "
          "or close()")
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


def _summary(exc: BaseException) -> str:
    first = str(exc).split("\n", 1)[0]
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


class FailureState:
    """The failure a VecEnv is broken by, if any.

    Example:
        >>> state = FailureState("DummyVecEnv")
        >>> failure = EnvCallFailed(2, "step")
        >>> failure.__cause__ = RuntimeError("boom")
        >>> state.fail(failure, "step")
        Traceback (most recent call last):
        RuntimeError: boom...
        >>> state.broken
        True
        >>> state.check("step")
        Traceback (most recent call last):
        vec_envs.errors.BrokenVecEnvError: DummyVecEnv.step() refused: env 2 raised in step() ...
        >>> state.check("get_attr")  # env access stays open: it steps nothing
        >>> state.check("reset"); state.clear(); state.broken
        False
    """

    def __init__(self, cls_name: str) -> None:
        self.cls_name = cls_name
        self.env_index: int | None = None
        self.method = ""
        self.error: BaseException | None = None
        self.interrupted = False  # the error is an interrupt (KeyboardInterrupt, ...), not an env's

    @property
    def broken(self) -> bool:
        """True after an env failure, until the next successful reset."""
        return self.error is not None

    def fail(self, exc: BaseException, method: str) -> NoReturn:
        """Note ``exc`` if it is an env failure raised by ``method``, and raise it (an
        ``EnvCallFailed`` as the env's own exception)."""
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
        self.error = None
        self.interrupted = False

    def check(self, method: str) -> None:
        """Raise BrokenVecEnvError if broken and ``method`` is not one that resets."""
        if self.error is None or method in (ALLOWED_WHEN_INTERRUPTED if self.interrupted else ALLOWED_WHEN_BROKEN):
            return
        env = "?" if self.env_index is None else self.env_index
        if self.interrupted:
            message = INTERRUPTED.format(cls=self.cls_name, method=method, error=type(self.error).__name__,
                                         failed=self.method)
        else:
            message = BROKEN.format(cls=self.cls_name, method=method, env=env, failed=self.method,
                                    error=_summary(self.error))
        raise BrokenVecEnvError(message, env_index=self.env_index, method=method,
                                failed_method=self.method) from self.error
