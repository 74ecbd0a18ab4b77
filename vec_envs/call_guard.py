"""One caller at a time: a VecEnv refuses, at once, a call from a second thread.

Two threads inside a VecEnv would interleave and corrupt its messages with its workers, so every
public method of ``VecEnvBase`` and its subclasses raises ``ConcurrentCallError`` (naming both threads
and methods) when called from another thread while one runs; calls within the running call (``step``
-> ``step_async``, a wrapper's base class) pass. A non-``Exception`` (a Ctrl-C) leaving the outer
call of one that talks to the envs is reported to the VecEnv (``_interrupted``).
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
GUARDED_METHODS = TALKS_TO_ENVS | {"seed", "set_options", "close"}
CONCURRENT = ("{cls}.{method}() called from thread {me!r} while thread {owner!r} is inside {cls}.{running}(); "
              "a VecEnv serves one caller at a time: call it from one thread, or hold your own lock around it")

F = TypeVar("F", bound=Callable[..., Any])


class CallGuard:
    """Which thread is inside a VecEnv: ``dict.setdefault`` claims the guard and ``dict.pop`` releases it,
    each atomic, so no Ctrl-C can land between a lock and its bookkeeping."""

    def __init__(self) -> None:
        self.slot: dict[str, int] = {}  # "holder": the ident of the thread inside
        self.method = "?"  # the outer method it runs, for messages

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
    """Wrap the guarded methods of ``cls`` not wrapped yet (its own, or a mixin's)."""
    for name in GUARDED_METHODS:
        method = getattr(cls, name, None)
        if callable(method) and not getattr(method, "__guarded__", False):
            setattr(cls, name, _guarded(method))
