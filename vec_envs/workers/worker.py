"""Worker: the one small interface a transport implements for WorkerVecEnv."""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from vec_envs.workers.protocol import Outcome

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = ["Worker", "WorkerDied"]


class WorkerDied(Exception):
    """Internal: the worker is gone; ``reason`` says how (exit code, signal, lost node)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Worker(ABC):
    """One remote endpoint running a ``SliceServer`` for envs ``first_index:stop``.

    A transport (subprocess, Ray actor) fills in how messages travel and how a worker
    is waited for, stopped and killed; everything else lives in ``WorkerVecEnv``.
    """

    is_local = False  #: True for a slice the parent steps itself (LocalWorker)
    #: True once a message to or from it was cut in half (a Ctrl-C): it can only be killed
    broken = False

    def __init__(self, index: int, first_index: int, stop: int) -> None:
        self.index = index
        self.first_index = first_index
        self.stop = stop

    @property
    def env_indices(self) -> list[int]:
        return list(range(self.first_index, self.stop))

    @property
    def usable(self) -> bool:
        """False once this process killed it (work given up on) or a Ctrl-C cut a message to
        or from it: the VecEnv replaces it at its next reset."""
        return not self.broken

    @abstractmethod
    def send(self, command: int, payload: Any) -> None:
        """Send one command, a ``Command`` or a transport's own (raises ``WorkerDied`` if the
        worker is gone)."""

    @abstractmethod
    def recv(self) -> Outcome:
        """The reply to the last command; call only once ``wait`` named this worker."""

    @classmethod
    @abstractmethod
    def wait(cls, workers: Sequence[Self], timeout: float | None) -> list[Self]:
        """Block until some of ``workers`` have a reply or died; [] after ``timeout``."""

    @abstractmethod
    def shutdown(self, timeout: float) -> None:
        """Let the worker end (after CLOSE was answered): join, then terminate, then kill."""

    @abstractmethod
    def kill(self) -> None:
        """End the worker now (it failed or hangs)."""

    def running_env(self) -> int | None:
        """The env whose call the worker is running (global index), if the transport knows."""
        return None

    def cancel(self) -> None:
        """Forget the command sent, if it has not run yet (the parent's own slice)."""
        return None  # a remote worker runs its command as it arrives: nothing to take back

    def forget(self) -> None:
        """In a forked child: drop the worker without touching it (it is the parent's)."""
        return None  # nothing of it is held in this process by default
