"""One caller at a time: a VecEnv refuses, at once, a call from a second thread.

A VecEnv is a protocol with its workers (a step is sent, then its replies collected), so
two threads inside it at once would interleave messages and corrupt it. Every public
method of ``VecEnvBase`` and its subclasses is guarded: a call from another thread while
one is running raises ``ConcurrentCallError`` naming both threads and both methods,
instead of blocking or corrupting anything. Calls within the running call (``step`` ->
``step_async``, a wrapper's base class) pass: the guard is re-entrant for its own thread.
"""
from __future__ import annotations

import functools
import threading
from typing import Any, Callable, TypeVar

from vec_envs.errors import ConcurrentCallError

__all__ = ["GUARDED_METHODS", "CallGuard", "guard_methods"]

#: the public methods that run under the guard (whichever class defines them)
GUARDED_METHODS = frozenset({
    "reset", "step", "step_async", "step_wait", "reset_async", "reset_wait", "async_reset", "recv", "send",
    "seed", "reset_single_env", "get_attr", "set_attr", "env_method", "env_is_wrapped", "get_images", "render",
    "close", "get_states", "set_states", "sync_states", "step_batch",
})
CONCURRENT = ("{cls}.{method}() called from thread {me!r} while thread {owner!r} is inside {cls}.{running}(); "
              "a VecEnv serves one caller at a time: call it from one thread, or hold your own lock around it")

F = TypeVar("F", bound=Callable[..., Any])


class CallGuard:
    """A non-blocking re-entrant lock that remembers who holds it, for error messages.

    Example:
        >>> guard = CallGuard()
        >>> guard.enter("MyVecEnv", "step"); guard.enter("MyVecEnv", "step_async")  # same thread
        >>> guard.exit(); guard.exit()
    """

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._owner: tuple[str, str] | None = None  # (thread name, outermost method)
        self._depth = 0

    def enter(self, cls: str, method: str) -> None:
        """Hold the guard for ``method``, or raise ConcurrentCallError if another thread does."""
        if not self._lock.acquire(blocking=False):
            owner, running = self._owner or ("?", "?")
            raise ConcurrentCallError(CONCURRENT.format(cls=cls, method=method, me=threading.current_thread().name,
                                                        owner=owner, running=running))
        if self._depth == 0:
            self._owner = (threading.current_thread().name, method)
        self._depth += 1

    def exit(self) -> None:
        """Release one level of the guard."""
        self._depth -= 1
        if self._depth == 0:
            self._owner = None
        self._lock.release()


def _guarded(method: F) -> F:
    name = method.__name__

    @functools.wraps(method)
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        guard = self.__dict__.get("_call_guard")
        if guard is None:  # still in __init__
            return method(self, *args, **kwargs)
        guard.enter(type(self).__name__, name)
        try:
            return method(self, *args, **kwargs)
        finally:
            guard.exit()

    call.__guarded__ = True  # type: ignore[attr-defined]
    return call  # type: ignore[return-value]


def guard_methods(cls: type) -> None:
    """Wrap the guarded methods that ``cls`` itself defines (once each)."""
    for name in GUARDED_METHODS & cls.__dict__.keys():
        method = cls.__dict__[name]
        if callable(method) and not getattr(method, "__guarded__", False):
            setattr(cls, name, _guarded(method))
