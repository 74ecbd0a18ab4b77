"""Why a worker's answer cannot reach the parent: the first env info that cannot be pickled.

A worker process sends infos through its pipe, pickled. When pickling fails, the parent
gets a failure naming the env and which of its infos is to blame, in the same words
whether it came from a reply (``worker_loop``) or an env lane's message
(``lane_serving``).

Example:
    >>> import threading
    >>> failure = unpicklable_info("step", [("info", "step", 3, {"ok": 1}),
    ...                                     ("reset info", "reset", 3, {"lock": threading.Lock()})])
    >>> failure.env_index, failure.summary.split(" (")[0]
    (3, 'the reset info env 3 returned from reset() cannot be pickled to reach the parent process')
"""
from __future__ import annotations

from collections.abc import Iterable
from multiprocessing.reduction import ForkingPickler
from typing import Any

from vec_envs.workers.protocol import WorkerFailure

__all__ = ["unpicklable_info", "unpicklable_reply"]

#: (what: "info" or "reset info", the env method it came from, the env's global index, the info)
NamedInfo = tuple[str, str, int, Any]


def unpicklable_info(method: str, infos: Iterable[NamedInfo]) -> WorkerFailure | None:
    """The failure of ``method`` naming the first of ``infos`` that cannot be pickled (None: all can)."""
    for what, source, env, info in infos:
        try:
            ForkingPickler.dumps(info)
        except Exception as exc:  # whatever pickling raises, this info is the culprit
            return WorkerFailure(env, method, f"the {what} env {env} returned from {source}() cannot be pickled to "
                                              f"reach the parent process ({type(exc).__name__}: {exc}); "
                                              "keep infos to picklable values", "")
    return None


def unpicklable_reply(method: str, infos: Iterable[NamedInfo], what: str, env: int | None,
                      exc: Exception) -> WorkerFailure:
    """Why ``what`` (a reply, an env's message) could not be pickled: the info to blame,
    else ``exc`` itself, naming ``env`` if the answer was one env's."""
    failure = unpicklable_info(method, infos)
    if failure is not None:
        return failure
    return WorkerFailure(env, method, f"{what} cannot be pickled to reach the parent process "
                                      f"({type(exc).__name__}: {exc}); return picklable values", "")
