"""Closing a worker VecEnv's workers: CLOSE to each, one deadline for all, kill the rest."""
from __future__ import annotations

import time

from vec_envs.errors import EnvTimeoutError, EnvWorkerError
from vec_envs.workers.messenger import Messenger
from vec_envs.workers.protocol import Command
from vec_envs.workers.worker import Worker, WorkerDied

__all__ = ["EXIT_TIMEOUT_S", "close_workers", "end_workers"]

EXIT_TIMEOUT_S = 1.0  # a worker that answered CLOSE has this long to exit before it is killed


def close_workers(messenger: Messenger, ws: list[int], deadline: float) -> tuple[list[int], EnvWorkerError | None]:
    """Send CLOSE to workers ``ws``: those that answered by ``deadline``, and the first env
    failure in closing (raised once everything is released)."""
    for w in ws:
        messenger.send(w, Command.CLOSE, None)
    try:
        outcomes = messenger.gather(ws, max(0.0, deadline - time.monotonic()), "close")
    except EnvTimeoutError:
        outcomes = messenger.arrived(ws)
    closed = [w for w, (ok, v) in outcomes.items() if ok or not isinstance(v, WorkerDied)]
    failure = next((messenger.error(w, v, "close") for w, (ok, v) in outcomes.items()
                    if not ok and not isinstance(v, WorkerDied)), None)
    return closed, failure


def end_workers(messenger: Messenger, workers: list[Worker], closed: list[int], deadline: float) -> None:
    """Let the workers that answered CLOSE exit (by ``deadline``, within ``EXIT_TIMEOUT_S``);
    kill every other one now."""
    for worker in workers:
        if worker.index not in closed:
            worker.kill()
    exit_by = min(deadline, time.monotonic() + EXIT_TIMEOUT_S)
    for w in closed:
        workers[w].shutdown(max(0.0, exit_by - time.monotonic()))
    for w in range(len(workers)):
        messenger.forget(w)
