"""The three autoreset modes, and what a VecEnv keeps of the envs whose episode ended.

An env's episode ends (``done``) at some step; the mode says what its next rows are:

- ``AutoresetMode.SAME_STEP`` (``"same_step"``, the default): the env is reset in the step
  that ended it; its row holds the new episode's first observation and
  ``infos[i]["terminal_observation"]`` the last one.
- ``AutoresetMode.NEXT_STEP`` (``"next_step"``): its row holds the episode's last
  observation; at its next step (lock-step or ``send``) the env is reset instead of
  stepped, its action ignored: the reset observation, reward 0, done False and the
  reset info, as gymnasium's ``SyncVectorEnv(autoreset_mode=NEXT_STEP)`` does.
- ``AutoresetMode.DISABLED`` (``"disabled"``): its row holds the last observation, and
  the env stays ended until the agent resets it (``reset_envs``, ``reset_single_env``,
  ``reset``); stepping it before is a ``ValueError`` naming it.

The envs themselves are stepped and reset where they live (``EnvSlice``, the engine of
``ALEVecEnv``); ``EndedEnvs`` is the VecEnv's record of which envs ended at their last
row: the reset infos of next-step resets come from it, and under ``DISABLED`` its check
refuses a step of an env not reset yet. Under ``SAME_STEP`` a VecEnv keeps none.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from gymnasium.vector import AutoresetMode

from vec_envs.types import Info

__all__ = ["AutoresetMode", "EndedEnvs", "ResetRows", "mode_name"]

NOT_RESET = ("{cls}.{method}(): envs {envs} ended their episodes and were not reset (autoreset_mode='disabled'); "
             "reset them first with reset_envs({envs}) (or reset()), or build the VecEnv with "
             "autoreset_mode='next_step' to have them reset at their next step")


def mode_name(mode: AutoresetMode) -> str:
    """The name ``autoreset_mode=`` takes for ``mode`` (``"next_step"``...).

    Example:
        >>> mode_name(AutoresetMode.NEXT_STEP)
        'next_step'
    """
    return {AutoresetMode.SAME_STEP: "same_step", AutoresetMode.NEXT_STEP: "next_step",
            AutoresetMode.DISABLED: "disabled"}[mode]


class EndedEnvs:
    """Which envs of a next-step or disabled VecEnv ended at their last row.

    Example:
        >>> ended = EndedEnvs(AutoresetMode.DISABLED, 3, "DummyVecEnv")
        >>> ended.after_step(np.array([False, True, False]), [{}, {}, {}], [{}, {}, {}])
        >>> ended.check_step("step_async")
        Traceback (most recent call last):
        ValueError: DummyVecEnv.step_async(): envs [1] ended their episodes and were not reset ...
        >>> ended.clear([1]); ended.check_step("step_async")
    """

    def __init__(self, mode: AutoresetMode, num_envs: int, cls: str) -> None:
        self.next_step = mode is AutoresetMode.NEXT_STEP
        self.cls = cls
        self.ended = np.zeros(num_envs, np.bool_)
        #: per row of the last batch returned: whether it is a next-step reset row
        self.reset_rows = np.zeros(num_envs, np.bool_)

    def after_step(self, dones: np.ndarray, infos: Sequence[Info], reset_infos: list[Info]) -> None:
        """A lock-step step returned ``dones`` and ``infos``: the envs that ended at their
        previous row were reset in it (next-step), their infos being the reset infos."""
        ended = self.ended
        if self.next_step:
            np.greater(ended, dones, out=self.reset_rows)  # ended before, not ending now
            for i in np.flatnonzero(self.reset_rows).tolist():
                reset_infos[i] = dict(infos[i])
        np.copyto(ended, dones)

    def after_recv(self, env_ids: np.ndarray, dones: np.ndarray, infos: Sequence[Info],
                   reset_infos: list[Info]) -> None:
        """As ``after_step``, for the rows of ``env_ids`` a ``recv`` returned."""
        ended = self.ended
        if self.next_step:
            reset_rows = self.reset_rows[:len(env_ids)]
            np.greater(ended[env_ids], dones, out=reset_rows)  # ended before, not ending now
            for j in np.flatnonzero(reset_rows).tolist():
                reset_infos[int(env_ids[j])] = dict(infos[j])
        ended[env_ids] = dones

    def check_step(self, method: str) -> None:
        """Under ``DISABLED``: a ValueError naming the ended envs a lock-step step would step."""
        if not self.next_step and self.ended.any():
            envs = np.flatnonzero(self.ended).tolist()
            raise ValueError(NOT_RESET.format(cls=self.cls, method=method, envs=envs))

    def check_send(self, env_ids: np.ndarray) -> None:
        """Under ``DISABLED``: a ValueError naming the ended envs among those of a ``send``."""
        if not self.next_step and self.ended[env_ids].any():
            envs = env_ids[self.ended[env_ids]].tolist()
            raise ValueError(NOT_RESET.format(cls=self.cls, method="send", envs=envs))

    def clear(self, env_ids: Sequence[int] | None = None) -> None:
        """The envs ``env_ids`` (None: every env) were reset by the agent."""
        if env_ids is None:
            self.ended[:] = False
        else:
            self.ended[list(env_ids)] = False


class ResetRows:
    """For a wrapper over a next-step VecEnv: which rows of the batch its backend returned
    last are reset rows (the env's episode ended at its previous row, so this row is its
    reset: reward 0, no step). It reads the backend's own record (``EndedEnvs``), which
    every reset clears, so a wrapper asks it right after its wrapped VecEnv returns a batch.

    Example:
        >>> ended = EndedEnvs(AutoresetMode.NEXT_STEP, 2, "DummyVecEnv")
        >>> rows = ResetRows(ended)
        >>> ended.after_step(np.array([True, False]), [{}, {}], [{}, {}])    # env 0 ended
        >>> rows.of_step(np.array([True, False])).tolist()
        [False, False]
        >>> ended.after_step(np.array([False, False]), [{}, {}], [{}, {}])   # its reset row
        >>> rows.of_step(np.array([False, False])).tolist()
        [True, False]
    """

    def __init__(self, ended: EndedEnvs) -> None:
        self.ended = ended

    def of_step(self, dones: np.ndarray) -> np.ndarray:
        """The reset rows of the lock-step batch whose dones are ``dones``."""
        return self.ended.reset_rows[:len(dones)]

    def of_recv(self, env_ids: np.ndarray, dones: np.ndarray) -> np.ndarray:
        """The reset rows of the ``recv`` batch of ``env_ids`` whose dones are ``dones``."""
        return self.ended.reset_rows[:len(env_ids)]
