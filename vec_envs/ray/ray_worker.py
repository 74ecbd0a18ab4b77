"""RayWorker: a Ray actor serving one slice of envs, and the actor class it runs.

Imported only when a ``RayVecEnv`` is built (it imports Ray). The actor unpickles the env
factories and builds its envs itself; the parent sends one ``handle(command, payload)``
call per command and waits for the replies of all actors with one ``ray.wait``.
"""
from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import Any

import cloudpickle
import numpy as np
import ray
from ray.exceptions import RayError, RayTaskError

from vec_envs.spaces.nested import map_leaves
from vec_envs.types import EnvFn
from vec_envs.workers.protocol import Command, Outcome, WorkerFailure
from vec_envs.workers.slice_server import SliceServer
from vec_envs.workers.worker import Worker, WorkerDied

__all__ = ["RayWorker", "SliceActor"]


class SliceActor:
    """What runs inside the Ray actor: a ``SliceServer`` over envs built from their factories.

    The factories come as cloudpickle bytes, so that one that cannot be unpickled on this
    node (its module is not installed there) is reported like any env failure.
    """

    def __init__(self, pickled_env_fns: bytes, first_index: int) -> None:
        self.server: SliceServer | None = None
        self.failure: WorkerFailure | None = None
        try:
            env_fns = cloudpickle.loads(pickled_env_fns)
        except Exception as exc:
            self.failure = WorkerFailure.from_exception(exc, "__init__")
        else:
            self.server = SliceServer(env_fns, first_index)

    def handle(self, command: int, payload: Any) -> Outcome:
        """One command of the worker protocol; always replies."""
        if self.server is None:
            return Outcome(True, None) if command == Command.CLOSE else Outcome(False, self.failure)
        return self.server.handle(command, payload)

    def where(self) -> tuple[str, int]:
        """``(node id, pid)`` of this actor, for diagnostics and tests."""
        return ray.get_runtime_context().get_node_id(), os.getpid()


_RemoteSliceActor = ray.remote(SliceActor)


def _writable_leaf(leaf: Any) -> Any:
    if isinstance(leaf, np.ndarray) and not leaf.flags.writeable:
        return leaf.copy()
    return leaf


def writable(value: Any) -> Any:
    """``value`` with every read-only array (Ray's zero-copy views) replaced by a copy."""
    return map_leaves(_writable_leaf, value, into_lists=True)


def describe_death(exc: RayError) -> str:
    """How the actor was lost, in the words of ``WorkerDied.reason`` (Ray's text, shortened)."""
    text = str(exc)
    facts = dict(re.findall(r"^\s*(pid|ip): (\S+)\s*$", text, re.MULTILINE))
    where = f", pid {facts['pid']}" if "pid" in facts else ""
    where += f" on {facts['ip']}" if "ip" in facts else ""
    lines = [line.strip() for line in text.splitlines() if line.strip()] or [""]
    detail = " ".join(re.split(r"(?<=\.)\s+", lines[-1])[:2])
    return f"died ({type(exc).__name__}{where}: {detail})"


class RayWorker(Worker):
    """A Ray actor stepping envs ``first_index:stop`` in series.

    Args:
        index: the worker's place in the VecEnv.
        env_fns: the factories of its envs (sent cloudpickled; the actor builds the envs).
        first_index: global index of its first env; ``stop`` is one past its last.
        options: ``ActorClass.options(...)`` keywords (num_cpus, resources, scheduling).

    Example:
        >>> import gymnasium as gym
        >>> from vec_envs.ray.ray_vec_env import connect_ray
        >>> connect_ray(None)   # a Ray runtime of this process's own
        True
        >>> w = RayWorker(0, [lambda: gym.make("CartPole-v1")] * 2, 0, 2, {"num_cpus": 0.5})
        >>> w.send(Command.GET_SPACES, None)
        >>> RayWorker.wait([w], None) == [w]
        True
        >>> ok, (observation_space, action_space) = w.recv()
        >>> ok, action_space
        (True, Discrete(2))
        >>> w.send(Command.CLOSE, None); _ = RayWorker.wait([w], None); w.recv()
        Outcome(ok=True, value=None)
        >>> w.shutdown(timeout=10)
        >>> ray.shutdown()
    """

    def __init__(self, index: int, env_fns: Sequence[EnvFn], first_index: int, stop: int,
                 options: dict[str, Any]) -> None:
        super().__init__(index, first_index, stop)
        self.actor: Any = _RemoteSliceActor.options(**options).remote(cloudpickle.dumps(list(env_fns)), first_index)
        self._ref: ray.ObjectRef | None = None
        self._command: int = Command.GET_SPACES

    @property
    def usable(self) -> bool:
        return self.actor is not None

    def send(self, command: int, payload: Any) -> None:
        if self.actor is None:
            raise WorkerDied("was stopped")
        self._command = command
        self._ref = self.actor.handle.remote(int(command), payload)

    def recv(self) -> Outcome:
        """The reply to the last command (the reference is kept until it is read: a Ctrl-C
        while it is fetched leaves it to be read again)."""
        ref = self._ref
        if ref is None:  # read already, and lost to an interrupt before it was kept
            return Outcome(False, WorkerFailure(None, "recv", "the reply was read, then lost to an interrupt", ""))
        try:
            outcome = writable(ray.get(ref))
        except RayTaskError as exc:  # handle() itself raised, e.g. the payload did not unpickle
            summary = str(exc).strip().splitlines()[-1]
            outcome = Outcome(False, WorkerFailure(None, Command(self._command).name.lower(), summary,
                                                   exc.traceback_str))
        except RayError as exc:  # the actor process, its node or the object is gone
            self._ref = None
            raise WorkerDied(describe_death(exc)) from exc
        self._ref = None
        return outcome

    @classmethod
    def wait(cls, workers: Sequence[RayWorker], timeout: float | None) -> list[RayWorker]:
        read = [w for w in workers if w._ref is None]  # (its reply was read: recv says so at once)
        by_ref = {w._ref: w for w in workers if w._ref is not None}
        if read or not by_ref:
            return read
        ready, _ = ray.wait(list(by_ref), num_returns=len(by_ref), timeout=timeout)
        return [by_ref[ref] for ref in ready]

    def shutdown(self, timeout: float) -> None:
        self.kill()  # CLOSE was answered: the envs are closed, the actor has nothing left to do

    def kill(self) -> None:
        actor, self.actor = self.actor, None
        if actor is not None and ray.is_initialized():
            ray.kill(actor, no_restart=True)
