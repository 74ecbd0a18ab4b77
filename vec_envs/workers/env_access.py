"""The env-access part of a worker VecEnv: attributes, methods, images, states, one command per worker.

Each call sends one command to each worker holding some of the envs asked for (with
their places in its slice) and returns the replies in the order asked.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from vec_envs.call_guard import guard_methods
from vec_envs.spaces.batching import BatchBuffers
from vec_envs.types import Info, VecEnvIndices, VecEnvObs
from vec_envs.workers.messenger import Messenger
from vec_envs.workers.protocol import (
    Command,
    EnvIsWrappedRequest,
    EnvMethodRequest,
    GetAttrRequest,
    GetStatesRequest,
    ResetOneReply,
    ResetOneRequest,
    SetAttrRequest,
    SetStatesRequest,
    StepBatchReply,
    StepBatchRequest,
)
from vec_envs.workers.requests import store_arrays
from vec_envs.workers.worker import Worker

__all__ = ["WorkerEnvAccess"]


class WorkerEnvAccess:
    """The env-access methods of ``WorkerVecEnv`` (a mixin: the VecEnv holds the state)."""

    messenger: Messenger
    workers: list[Worker]
    _worker_of: list[int]
    timeout: float | None
    buffers: BatchBuffers
    reset_infos: list[Info]

    if TYPE_CHECKING:  # VecEnvBase's, which the VecEnv inherits too
        def _check_idle(self, method: str) -> None: ...

        def _indices(self, indices: VecEnvIndices, method: str) -> list[int]: ...

        def _observations(self) -> VecEnvObs: ...

    def _reset_single_env(self, index: int, seed: int | None) -> Any:
        w = self._worker_of[index]
        request = ResetOneRequest(index - self.workers[w].first_index, seed)
        reply = self.messenger.round_trip(w, Command.RESET_ONE, request, self.timeout, "reset", ResetOneReply)
        self.reset_infos[index] = reply.info
        return reply.obs

    def _env_call(self, command: Command, method: str, indices: VecEnvIndices,
                  request: Callable[[list[int]], Any]) -> list[Any]:
        """Send ``request(ks)`` to each worker holding some of ``indices`` (``ks``: their
        places in its slice); the replies, one per index, in the order of ``indices``."""
        self._check_idle(method)
        groups: dict[int, list[tuple[int, int]]] = {}
        for pos, i in enumerate(self._indices(indices, method)):
            w = self._worker_of[i]
            groups.setdefault(w, []).append((pos, i - self.workers[w].first_index))
        for w, items in groups.items():
            self.messenger.send(w, command, request([k for _, k in items]))
        results = self.messenger.results(self.messenger.gather(list(groups), self.timeout, method), method, list)
        out: list[Any] = [None] * sum(len(items) for items in groups.values())
        for w, items in groups.items():
            for (pos, _), value in zip(items, results[w]):
                out[pos] = value
        return out

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        return self._env_call(Command.GET_ATTR, "get_attr", indices, lambda ks: GetAttrRequest(attr_name, ks))

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        self._env_call(Command.SET_ATTR, "set_attr", indices, lambda ks: SetAttrRequest(attr_name, value, ks))

    def env_method(self, method_name: str, *method_args: Any, indices: VecEnvIndices = None,
                   **method_kwargs: Any) -> list[Any]:
        return self._env_call(Command.ENV_METHOD, "env_method", indices,
                              lambda ks: EnvMethodRequest(method_name, method_args, method_kwargs, ks))

    def env_is_wrapped(self, wrapper_class: type, indices: VecEnvIndices = None) -> list[bool]:
        return self._env_call(Command.ENV_IS_WRAPPED, "env_is_wrapped", indices,
                              lambda ks: EnvIsWrappedRequest(wrapper_class, ks))

    def get_images(self) -> list[np.ndarray]:
        self._check_idle("get_images")
        return [img for images in self.messenger.broadcast(Command.GET_IMAGES, "render", self.timeout, list)
                for img in images]

    def _get_states(self, indices: list[int]) -> list[Any]:
        return self._env_call(Command.GET_STATES, "get_states", indices, GetStatesRequest)

    def _set_states(self, states: list[Any], indices: list[int]) -> None:
        """One SET_STATES message per worker, with that worker's states and env numbers."""
        by_worker: dict[int, SetStatesRequest] = {}
        for i, state in zip(indices, states):
            w = self._worker_of[i]
            request = by_worker.setdefault(w, SetStatesRequest([], []))
            request.states.append(state)
            request.ks.append(i - self.workers[w].first_index)
        for w, request in by_worker.items():
            self.messenger.send(w, Command.SET_STATES, request)
        self.messenger.results(self.messenger.gather(list(by_worker), self.timeout, "set_states"), "set_states",
                               type(None))

    def _step_batch(self, actions: Any, states: list[Any] | None, dts: list[int],
                    return_states: bool) -> tuple[VecEnvObs, list[tuple]]:
        """One STEP_BATCH message per worker; a failure raises (no restart: the caller owns the states)."""
        for worker in self.workers:
            a, b = worker.first_index, worker.stop
            request = StepBatchRequest(actions[a:b], None if states is None else states[a:b], dts[a:b], return_states)
            self.messenger.send(worker.index, Command.STEP_BATCH, request)
        outcomes = self.messenger.gather(range(len(self.workers)), self.timeout, "step_batch")
        replies = self.messenger.results(outcomes, "step_batch", StepBatchReply)
        results: list[tuple] = []
        for w, reply in sorted(replies.items()):
            if reply.arrays is not None:
                store_arrays(self.buffers, self.workers[w].first_index, reply.arrays)
            results.extend(reply.outcomes)
        return self._observations(), results



guard_methods(WorkerEnvAccess)  # one caller at a time, as for VecEnvBase's own subclasses
