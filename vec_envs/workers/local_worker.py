"""LocalWorker: a slice of envs the parent process steps itself."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from vec_envs.types import EnvFn
from vec_envs.workers.protocol import Outcome
from vec_envs.workers.slice_server import SliceServer
from vec_envs.workers.worker import Worker

__all__ = ["LocalWorker"]


class LocalWorker(Worker):
    """Runs its commands in the parent, when their replies are collected.

    ``WorkerVecEnv`` collects a local worker's reply before waiting for the remote ones,
    so the parent steps its own slice while the worker processes step theirs: with one
    process per core, no core sits idle waiting. An env hanging here cannot be
    interrupted by a timeout, which is why backends use it only without one.
    """

    is_local = True

    def __init__(self, index: int, env_fns: Sequence[EnvFn], first_index: int, stop: int) -> None:
        super().__init__(index, first_index, stop)
        self.server = SliceServer(env_fns, first_index)
        self._command: tuple[int, Any] | None = None

    @property
    def usable(self) -> bool:
        return self.server.slice is not None or self.server.startup_failure is not None

    def send(self, command: int, payload: Any) -> None:
        self._command = (command, payload)

    def recv(self) -> Outcome:
        if self._command is None:
            raise RuntimeError(f"LocalWorker {self.index}: recv() without a command sent")
        command, payload = self._command
        self._command = None
        return self.server.handle(command, payload)

    def cancel(self) -> None:
        self._command = None  # a Ctrl-C came before it ran: its reply is not wanted any more

    @classmethod
    def wait(cls, workers: Sequence[LocalWorker], timeout: float | None) -> list[LocalWorker]:
        return list(workers)

    def shutdown(self, timeout: float) -> None:
        self.server.close_quietly()

    def kill(self) -> None:
        self.server.close_quietly()
