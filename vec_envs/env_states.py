"""EnvStates: the one record of where each env of a VecEnv stands.

For recv/send each env is IDLE (nothing asked, or lock-step), IN_FLIGHT (asked, unanswered),
ANSWERED (waiting for ``recv``) or RETURNED (waiting for its ``send``); ``resetting`` marks resets
out, ``sent_at`` orders ``recv`` (longest waiting first). Under next-step and disabled autoreset
``ended`` marks envs whose last row ended an episode: their next row is their reset (``reset_rows``);
under disabled their step is refused. The base class checks every call here, so backend hooks see
only valid requests; a backend marks answers as they come (``answered``).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode

from vec_envs.errors import AlreadyPendingCallError, NoAsyncCallError
from vec_envs.types import Info

__all__ = ["ANSWERED", "EnvStates", "IDLE", "IN_FLIGHT", "RETURNED"]

#: an env's status (the numbers are also the lanes kernel's)
IDLE, IN_FLIGHT, ANSWERED, RETURNED = 0, 1, 2, 3

IN_FLIGHT_NOW = ("{cls}.{method}() called while envs {envs} are in flight (async_reset/send not yet "
                 "answered by recv); recv() them first")
TOO_FEW = ("{cls}.recv() needs {batch_size} envs in flight (batch_size), but {count} are ({envs}); "
           "call async_reset() first, or send() actions to the envs recv() returned")
BAD_ENV_IDS = "{cls}.send(): env_ids must be a 1-D sequence of env indices in 0..{last}, received {value!r}"
REPEATED = "{cls}.send(): env_ids names envs {envs} more than once"
NOT_RETURNED = ("{cls}.send(): envs {envs} were not returned by recv() since their last send "
                "({why}); send only to the envs recv() returned, once each")
NOT_RESET = ("{cls}.{method}(): envs {envs} ended their episodes and were not reset (autoreset_mode='disabled'); "
             "reset them first with reset_envs({envs}) (or reset()), or build the VecEnv with "
             "autoreset_mode='next_step' to have them reset at their next step")


class EnvStates:
    """Where each of ``num_envs`` envs stands (see the module)."""

    def __init__(self, cls: str, num_envs: int, batch_size: int, mode: AutoresetMode = AutoresetMode.SAME_STEP) -> None:
        self.cls, self.num_envs, self.batch_size = cls, num_envs, batch_size
        self.status = np.zeros(num_envs, np.int8)
        self.resetting = np.zeros(num_envs, np.bool_)
        self.sent_at = [0] * num_envs  # when each env was sent (a count of envs sent)
        self._sends = 0
        self.ready: list[int] = []  # the ANSWERED envs (recv returns those sent longest ago first)
        self.flying = 0  # IN_FLIGHT or ANSWERED: what a recv may return (lock-step calls check it in O(1))
        self.round = False  # some env is not IDLE: clear() has work to do
        self.next_step = mode is AutoresetMode.NEXT_STEP
        #: the envs whose last row ended their episode (None: same-step, where none stays ended)
        self.ended = None if mode is AutoresetMode.SAME_STEP else np.zeros(num_envs, np.bool_)
        self.reset_rows = np.zeros(num_envs, np.bool_)  #: per row of the last batch: is it a next-step reset?

    def in_flight(self) -> np.ndarray:
        """The envs a ``recv`` may return, in index order."""
        return np.flatnonzero((self.status == IN_FLIGHT) | (self.status == ANSWERED))

    def answered(self, env_ids: Sequence[int]) -> None:
        """The answers of ``env_ids`` (in flight) are in."""
        self.status[env_ids] = ANSWERED
        self.ready.extend(env_ids)

    def take_ready(self, count: int) -> np.ndarray:
        """Take the ``count`` answered envs sent longest ago off ``ready`` (an int64 array)."""
        ready = self.ready
        ready.sort(key=self.sent_at.__getitem__)  # (an env's place in the batch is its next send's)
        ids = np.array(ready[:count], np.int64)
        del ready[:count]
        return ids

    def check_none_in_flight(self, method: str, env_ids: list[int] | None = None) -> None:
        """AlreadyPendingCallError for a call while envs (of ``env_ids``, if given) are in flight."""
        if not self.flying:
            return
        flying = self.in_flight()
        if env_ids is not None:
            flying = flying[np.isin(flying, env_ids)]
        if len(flying):
            raise AlreadyPendingCallError(IN_FLIGHT_NOW.format(cls=self.cls, method=method, envs=flying.tolist()))

    def check_recv(self) -> None:
        """NoAsyncCallError, at once, when fewer than ``batch_size`` envs are in flight."""
        if self.flying < self.batch_size:
            raise NoAsyncCallError(TOO_FEW.format(cls=self.cls, batch_size=self.batch_size,
                                                  count=self.flying, envs=self.in_flight().tolist()))

    def check_send(self, env_ids: Any) -> np.ndarray:
        """``env_ids`` as an int64 array; ValueError unless each env is RETURNED, once."""
        ids, counts = np.zeros(0, np.int64), None
        try:  # a ValueError: ragged, or a negative index (a uint64 beyond int64 turns negative)
            given = np.asarray(env_ids)
            if given.ndim == 1 and (given.dtype.kind in "iu" or given.size == 0):
                ids = given.astype(np.int64, copy=False)
                counts = np.bincount(ids, minlength=self.num_envs)
        except (TypeError, ValueError):
            pass
        if counts is None or len(counts) != self.num_envs:  # (longer: an index past the last env)
            raise ValueError(BAD_ENV_IDS.format(cls=self.cls, last=self.num_envs - 1, value=env_ids))
        if not np.count_nonzero(counts > (self.status == RETURNED)):  # none named twice, or not returned
            return ids
        if np.count_nonzero(counts > 1):
            raise ValueError(REPEATED.format(cls=self.cls, envs=np.flatnonzero(counts > 1).tolist()))
        status = self.status[ids]
        wrong = status != RETURNED
        why = "in flight" if np.isin(status[wrong], (IN_FLIGHT, ANSWERED)).all() else \
            "no async round is running for some: async_reset() starts one"
        raise ValueError(NOT_RETURNED.format(cls=self.cls, envs=ids[wrong].tolist(), why=why))

    def start_all(self) -> None:
        """``async_reset``: every env is in flight, asked to reset."""
        self.status[:] = IN_FLIGHT
        self.resetting[:] = True
        self._sends += 1
        self.sent_at = [self._sends] * self.num_envs
        self.flying = self.num_envs
        self.round = True

    def returned(self, env_ids: np.ndarray) -> None:
        """``recv`` returned ``env_ids``."""
        self.status[env_ids] = RETURNED
        self.resetting[env_ids] = False
        self.flying -= len(env_ids)

    def sent(self, env_ids: np.ndarray) -> None:
        """``send`` asked ``env_ids`` (returned envs) to step, in this order."""
        self.status[env_ids] = IN_FLIGHT
        at, sent_at = self._sends, self.sent_at
        for i in env_ids.tolist():
            at += 1
            sent_at[i] = at
        self._sends = at
        self.flying += len(env_ids)

    def clear(self) -> None:
        """No async round any more (a lock-step call, or a failure that ended the round)."""
        if self.round:
            self.status[:] = IDLE
            self.resetting[:] = False
            self.ready.clear()
            self.round = False
        self.flying = 0

    def after_rows(self, env_ids: np.ndarray | None, dones: np.ndarray, infos: Sequence[Info],
                   reset_infos: list[Info]) -> None:
        """A batch returned ``dones`` and ``infos`` for ``env_ids`` (None: every env). Under next-step
        the rows of envs that had ended are their resets, their infos the reset infos."""
        ended = self.ended
        if ended is None:
            return
        before = ended if env_ids is None else ended[env_ids]
        if self.next_step:
            rows = self.reset_rows[:len(dones)]
            np.greater(before, dones, out=rows)  # ended before, not ending now
            for j in np.flatnonzero(rows).tolist():
                reset_infos[j if env_ids is None else int(env_ids[j])] = dict(infos[j])
        ended[slice(None) if env_ids is None else env_ids] = dones

    def check_step(self, method: str, env_ids: np.ndarray | None = None) -> None:
        """Under disabled autoreset: a ValueError naming the ended envs a step would step
        (``env_ids``: a ``send``'s; None: every env)."""
        if self.ended is None or self.next_step:
            return
        ended = self.ended if env_ids is None else self.ended[env_ids]
        if ended.any():
            envs = np.flatnonzero(ended) if env_ids is None else env_ids[ended]
            raise ValueError(NOT_RESET.format(cls=self.cls, method=method, envs=envs.tolist()))

    def reset_done(self, env_ids: Sequence[int] | None = None) -> None:
        """The envs ``env_ids`` (None: every env) were reset by the agent."""
        if self.ended is not None:
            self.ended[slice(None) if env_ids is None else list(env_ids)] = False
