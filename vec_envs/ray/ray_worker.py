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
from vec_envs.workers.env_slice import EnvSlice
from vec_envs.workers.wire import Command, Reply, Request, WorkerFailure, serve, unpicklable
from vec_envs.workers.worker import Worker, WorkerDied

__all__ = ["RayWorker", "SliceActor"]


class SliceActor:
    """What runs inside the Ray actor: an ``EnvSlice`` built from the factories, serving
    the requests of the worker protocol (``wire.serve``).

    The factories come as cloudpickle bytes, so that one that cannot be unpickled on this
    node (its module is not installed there) is reported like any env failure; a reply
    that cannot be pickled becomes a failure naming the info to blame.
    """

    def __init__(self, pickled_env_fns: bytes, first_index: int, deferred: bool, pending: bool) -> None:
        self.envs: EnvSlice | None = None
        self.failure: WorkerFailure | None = None
        try:
            self.envs = EnvSlice(cloudpickle.loads(pickled_env_fns), first_index, deferred, pending)
        except Exception as exc:
            self.failure = WorkerFailure.of(exc, "__init__")

    def handle(self, command: int, payload: Any) -> Reply:
        """One request of the worker protocol; always replies."""
        if self.envs is None:
            return Reply(0, command == Command.CLOSE, None if command == Command.CLOSE else self.failure)
        try:
            value = serve(self.envs, command, payload)
        except Exception as exc:
            return Reply(0, False, WorkerFailure.of(exc, "handle"))
        try:
            cloudpickle.dumps(value)
        except Exception as exc:  # whatever pickling raises: Ray would fail to return it
            return Reply(0, False, unpicklable(value, Request(command, 0, payload), self.envs.first_index, exc))
        return Reply(0, True, value)

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
        >>> w.send(Command.SPACES, None)
        >>> RayWorker.wait([w], None) == [w]
        True
        >>> reply = w.recv()
        >>> reply.ok, reply.value.action_space
        (True, Discrete(2))
        >>> w.send(Command.CLOSE, None); _ = RayWorker.wait([w], None); w.recv().ok
        True
        >>> w.shutdown(timeout=10)
        >>> ray.shutdown()
    """

    def __init__(self, index: int, env_fns: Sequence[EnvFn], first_index: int, stop: int,
                 options: dict[str, Any], deferred: bool = False, pending: bool = False) -> None:
        super().__init__(index, first_index, stop)
        self.actor: Any = _RemoteSliceActor.options(**options).remote(cloudpickle.dumps(list(env_fns)), first_index,
                                                                       deferred, pending)
        self._ref: ray.ObjectRef | None = None
        self._command: int = Command.SPACES

    @property
    def usable(self) -> bool:
        return self.actor is not None

    @property
    def awaiting(self) -> bool:
        return self._ref is not None

    def send(self, command: int, payload: Any) -> None:
        if self.actor is None:
            raise WorkerDied("was stopped")
        self._command = command
        self._ref = self.actor.handle.remote(int(command), payload)

    def recv(self) -> Reply:
        """The reply of the last request (the reference is kept until it is read: a Ctrl-C
        while it is fetched leaves it to be read again)."""
        ref = self._ref
        if ref is None:  # read already, and lost to an interrupt before it was kept
            return Reply(0, False, WorkerFailure(None, "recv", "the reply was read, then lost to an interrupt", ""))
        method = Command(self._command).name.lower()
        try:
            reply = writable(ray.get(ref))
        except RayTaskError as exc:  # handle() itself raised, e.g. the payload did not unpickle
            summary = str(exc).strip().splitlines()[-1]
            reply = Reply(0, False, WorkerFailure(None, method, summary, getattr(exc, "traceback_str", "")))
        except RayError as exc:  # the actor process, its node or the object is gone
            self._ref = None
            raise WorkerDied(describe_death(exc)) from exc
        except Exception as exc:  # noqa: BLE001 (whatever Ray raises fetching a reply: this request failed)
            reply = Reply(0, False, WorkerFailure(None, method, f"{type(exc).__name__}: {exc}", ""))
        self._ref = None
        return reply

    @classmethod
    def wait(cls, workers: Sequence[RayWorker], timeout: float | None) -> list[RayWorker]:
        read = [w for w in workers if w._ref is None]  # (its reply was read: recv says so at once)
        by_ref = {w._ref: w for w in workers if w._ref is not None}
        if read or not by_ref:
            return read
        ready, _ = ray.wait(list(by_ref), num_returns=len(by_ref), timeout=0)
        if not ready:
            ready, _ = ray.wait(list(by_ref), num_returns=1, timeout=timeout)
        return [by_ref[ref] for ref in ready]

    def shutdown(self, timeout: float) -> None:
        self.kill()  # CLOSE was answered: the envs are closed, the actor has nothing left to do

    def kill(self) -> None:
        actor, self.actor = self.actor, None
        if actor is not None and ray.is_initialized():
            ray.kill(actor, no_restart=True)
