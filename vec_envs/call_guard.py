"""One caller at a time: a VecEnv refuses, at once, a call from a second thread.

A VecEnv is a protocol with its workers (a step is sent, then its replies collected), so
two threads inside it at once would interleave messages and corrupt it. Every public
method of ``VecEnvBase`` and its subclasses is guarded: a call from another thread while
one is running raises ``ConcurrentCallError`` naming both threads and both methods,
instead of blocking or corrupting anything. Calls within the running call (``step`` ->
``step_async``, a wrapper's base class) pass freely: the guard knows its holder's thread.
An exception that is no ``Exception`` (a Ctrl-C) leaving the outer call of one that
talks to the envs is reported to the VecEnv (``_interrupted``) on its way out.
"""
from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from vec_envs.errors import ConcurrentCallError
from vec_envs.failure_state import TALKS_TO_ENVS

__all__ = ["GUARDED_METHODS", "CallGuard", "guard_methods"]

#: the public methods that run under the guard (whichever class defines them)
GUARDED_METHODS = frozenset({
    "reset", "step", "step_async", "step_wait", "reset_async", "reset_wait", "async_reset", "recv", "send",
    "seed", "set_options", "reset_single_env", "get_attr", "set_attr", "env_method", "env_is_wrapped",
    "get_images", "render", "close", "get_states", "set_states", "sync_states", "step_batch",
})
CONCURRENT = ("{cls}.{method}() called from thread {me!r} while thread {owner!r} is inside {cls}.{running}(); "
              "a VecEnv serves one caller at a time: call it from one thread, or hold your own lock around it")

F = TypeVar("F", bound=Callable[..., Any])


class CallGuard:
    """Which thread is inside a VecEnv, claimed and released in one atomic step each.

    ``dict.setdefault`` claims the guard atomically (under the GIL) and ``dict.pop``
    releases it, so no Ctrl-C can land between a lock and its bookkeeping and leave the
    guard held by nobody; calls made within a call (same thread) pass freely.

    Example:
        >>> guard = CallGuard()
        >>> guard.enter("MyVecEnv", "step")
        >>> guard.holder() == threading.get_ident()
        True
        >>> guard.exit(); guard.holder() is None
        True
    """

    def __init__(self) -> None:
        self.slot: dict[str, int] = {}  # "holder": the ident of the thread inside
        self.method = "?"  # the outer method it runs, for messages

    def holder(self) -> int | None:
        """The ident of the thread inside, or None."""
        return self.slot.get("holder")

    def enter(self, cls: str, method: str) -> None:
        """Claim the guard for ``method``, or raise ConcurrentCallError if another thread holds it."""
        me = threading.get_ident()
        held = self.slot.setdefault("holder", me)
        if held != me:
            raise self.refusal(cls, method, held)
        self.method = method

    def exit(self) -> None:
        """Release the guard (by the thread that claimed it)."""
        self.slot.pop("holder", None)

    def refusal(self, cls: str, method: str, held: int) -> ConcurrentCallError:
        """The error for a call of ``method`` while thread ``held`` is inside."""
        owner = next((t.name for t in threading.enumerate() if t.ident == held), f"#{held}")
        return ConcurrentCallError(CONCURRENT.format(cls=cls, method=method, me=threading.current_thread().name,
                                                     owner=owner, running=self.method))


def _guarded(method: F) -> F:
    name = method.__name__
    get_ident = threading.get_ident

    @functools.wraps(method)
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        guard = self._call_guard
        if guard is None:  # still in __init__ (VecEnvBase says None until it makes one)
            return method(self, *args, **kwargs)
        slot, me = guard.slot, get_ident()
        held = slot.get("holder")
        if held == me:  # a call within a call
            return method(self, *args, **kwargs)
        if held is not None or slot.setdefault("holder", me) != me:
            raise guard.refusal(type(self).__name__, name, slot.get("holder", held))
        guard.method = name
        try:
            return method(self, *args, **kwargs)
        except BaseException as exc:
            if not isinstance(exc, Exception) and name in TALKS_TO_ENVS:
                self._interrupted(exc, name)  # a Ctrl-C part-way: refuse until a reset
            raise
        finally:
            slot.pop("holder", None)

    call.__guarded__ = True  # type: ignore[attr-defined]
    return call  # type: ignore[return-value]


def guard_methods(cls: type) -> None:
    """Wrap the guarded methods that ``cls`` itself defines (once each)."""
    for name in GUARDED_METHODS & cls.__dict__.keys():
        method = cls.__dict__[name]
        if callable(method) and not getattr(method, "__guarded__", False):
            setattr(cls, name, _guarded(method))
