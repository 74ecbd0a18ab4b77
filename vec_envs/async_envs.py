"""AsyncEnvs: where every env of a VecEnv stands, and every misuse check of recv/send.

The one place an env's state is kept, for the base class and every backend alike. Each
env is in one of four states (``EnvStatus``): IDLE (no request out: before
``async_reset``, or after a lock-step call), IN_FLIGHT (asked to reset or step, no answer
seen yet), ANSWERED (its answer is in, waiting in ``ready`` to be returned by ``recv``) or
RETURNED (returned by ``recv``, waiting for its ``send``). ``resetting`` says which envs'
requests are resets. The base class asks this bookkeeping before every call, so a
backend's hooks only ever see valid requests; a backend's request machinery moves envs
from IN_FLIGHT to ANSWERED as their answers come.
"""
from __future__ import annotations

import enum
from typing import Any, NoReturn

import numpy as np

from vec_envs.errors import AlreadyPendingCallError, NoAsyncCallError

__all__ = ["AsyncEnvs", "EnvStatus", "check_batch_size"]

BAD_BATCH_SIZE = "{cls}: batch_size must be an int in 1..{num_envs} (num_envs) or None, received {value!r}"
IN_FLIGHT = ("{cls}.{method}() called while envs {envs} are in flight (async_reset/send not yet "
             "answered by recv); recv() them first")
TOO_FEW = ("{cls}.recv() needs {batch_size} envs in flight (batch_size), but {count} are ({envs}); "
           "call async_reset() first, or send() actions to the envs recv() returned")
BAD_ENV_IDS = "{cls}.send(): env_ids must be a 1-D sequence of env indices in 0..{last}, received {value!r}"
REPEATED = "{cls}.send(): env_ids names envs {envs} more than once"
NOT_RETURNED = ("{cls}.send(): envs {envs} were not returned by recv() since their last send "
                "({why}); send only to the envs recv() returned, once each")


def check_batch_size(batch_size: Any, num_envs: int, cls: str) -> int:
    """``batch_size`` as an int (None: ``num_envs``); a ValueError for anything else."""
    if batch_size is None:
        return num_envs
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) \
            or not 1 <= batch_size <= num_envs:
        raise ValueError(BAD_BATCH_SIZE.format(cls=cls, num_envs=num_envs, value=batch_size))
    return int(batch_size)


class EnvStatus(enum.IntEnum):
    """Where one env stands (the numbers are also the C passes' over the lanes)."""

    IDLE = 0
    IN_FLIGHT = 1
    ANSWERED = 2
    RETURNED = 3


_IDLE, _IN_FLIGHT, _ANSWERED, _RETURNED = (int(status) for status in EnvStatus)  # plain ints: fast NumPy compares


class AsyncEnvs:
    """The async state of every env of one VecEnv.

    Example:
        >>> envs = AsyncEnvs("DummyVecEnv", num_envs=4, batch_size=2)
        >>> envs.start_all()                       # async_reset
        >>> envs.returned(np.array([0, 1]))        # recv gave envs 0 and 1
        >>> envs.check_send([1, 0]).tolist()       # valid: send to both
        [1, 0]
        >>> envs.check_send([2])
        Traceback (most recent call last):
        ValueError: DummyVecEnv.send(): envs [2] were not returned by recv() since their last send (in flight); ...
    """

    def __init__(self, cls: str, num_envs: int, batch_size: int) -> None:
        self.cls, self.num_envs, self.batch_size = cls, num_envs, batch_size
        self.status = np.zeros(num_envs, np.int8)
        self.resetting = np.zeros(num_envs, np.bool_)  # which envs' requests out are resets
        self.ready: list[int] = []  # the ANSWERED envs, first answered first: what recv returns next
        self.flying = 0  # envs a recv may return (IN_FLIGHT or ANSWERED): lock-step calls check it, so O(1)
        self.round = False  # an async round runs (some env is not IDLE): clear() has work to do

    def in_flight(self) -> np.ndarray:
        """The envs a ``recv`` may return, in index order."""
        return np.flatnonzero((self.status == _IN_FLIGHT) | (self.status == _ANSWERED))

    def returned_envs(self) -> np.ndarray:
        """The envs returned by ``recv`` that wait for their ``send``."""
        return np.flatnonzero(self.status == _RETURNED)

    def answered(self, env_ids: list[int]) -> None:
        """The answers of ``env_ids`` (envs in flight) are in: they are ready, in this order."""
        self.status[env_ids] = _ANSWERED
        self.ready.extend(env_ids)

    def check_none_in_flight(self, method: str) -> None:
        """AlreadyPendingCallError for a lock-step call while envs are in flight."""
        if self.flying:
            raise AlreadyPendingCallError(IN_FLIGHT.format(cls=self.cls, method=method,
                                                           envs=self.in_flight().tolist()))

    def check_recv(self) -> None:
        """NoAsyncCallError, at once, when fewer than ``batch_size`` envs are in flight."""
        if self.flying < self.batch_size:
            raise NoAsyncCallError(TOO_FEW.format(cls=self.cls, batch_size=self.batch_size,
                                                  count=self.flying, envs=self.in_flight().tolist()))

    def check_send(self, env_ids: Any) -> np.ndarray:
        """``env_ids`` as an int64 array; ValueError unless each env is RETURNED, once."""
        ids, counts = self._as_indices(env_ids)
        if np.count_nonzero(counts > (self.status == _RETURNED)):  # named twice, or not returned
            self._refuse(ids, counts)
        return ids

    def _as_indices(self, env_ids: Any) -> tuple[np.ndarray, np.ndarray]:
        """``env_ids`` as an int64 array, and how many times it names each env."""
        try:
            ids: np.ndarray | None = np.asarray(env_ids)
        except (TypeError, ValueError):  # ragged
            ids = None
        if ids is not None and ids.ndim == 1 and (ids.dtype.kind in "iu" or ids.size == 0):
            ids = ids.astype(np.int64, copy=False)  # a uint64 beyond int64 turns negative
            try:
                counts = np.bincount(ids, minlength=self.num_envs)  # cheaper than np.unique
            except ValueError:  # a negative index
                counts = None
            if counts is not None and len(counts) == self.num_envs:  # else an index past the last env
                return ids, counts
        raise ValueError(BAD_ENV_IDS.format(cls=self.cls, last=self.num_envs - 1, value=env_ids))

    def _refuse(self, ids: np.ndarray, counts: np.ndarray) -> NoReturn:
        """The ValueError for ``env_ids`` that name an env twice or one not RETURNED."""
        if np.count_nonzero(counts > 1):
            raise ValueError(REPEATED.format(cls=self.cls, envs=np.flatnonzero(counts > 1).tolist()))
        status = self.status[ids]
        wrong = status != _RETURNED
        why = "in flight" if ((status[wrong] == _IN_FLIGHT) | (status[wrong] == _ANSWERED)).all() else \
            "no async round is running for some: async_reset() starts one"
        raise ValueError(NOT_RETURNED.format(cls=self.cls, envs=ids[wrong].tolist(), why=why))

    def start_all(self) -> None:
        """``async_reset``: every env is in flight."""
        self.status[:] = _IN_FLIGHT
        self.flying = self.num_envs
        self.round = True

    def returned(self, env_ids: np.ndarray) -> None:
        """``recv`` returned ``env_ids`` (envs in flight)."""
        self.status[env_ids] = _RETURNED
        self.flying -= len(env_ids)

    def sent(self, env_ids: np.ndarray) -> None:
        """``send`` started ``env_ids`` (envs returned)."""
        self.status[env_ids] = _IN_FLIGHT
        self.flying += len(env_ids)

    def clear(self) -> None:
        """No async round (a lock-step call, or a failure that ended the round)."""
        if self.round:  # O(1) for lock-step calls, which clear before every step
            self.status[:] = _IDLE
            self.resetting[:] = False
            self.ready.clear()
            self.round = False
        self.flying = 0
