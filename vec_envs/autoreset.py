"""The three autoreset modes: what an env's rows are after its episode ends.

- ``AutoresetMode.SAME_STEP`` (``"same_step"``, the default): the env is reset in the step
  that ended it; its row holds the new episode's first observation and
  ``infos[i]["terminal_observation"]`` the last one.
- ``AutoresetMode.NEXT_STEP`` (``"next_step"``): its row holds the last observation; its next
  step (lock-step or ``send``) resets it instead, its action ignored: the reset observation,
  reward 0, done False and the reset info, as gymnasium's ``SyncVectorEnv(autoreset_mode=NEXT_STEP)``.
- ``AutoresetMode.DISABLED`` (``"disabled"``): its row holds the last observation, and the env
  stays ended until the agent resets it (``reset_envs``, ``reset_single_env``, ``reset``);
  stepping it before is a ``ValueError`` naming it.

Envs are reset where they are stepped (``EnvSlice`` and its C loop, ``ALEVecEnv``'s engine); the
VecEnv only records which ended (``EnvStates.ended``).
"""
from __future__ import annotations

from gymnasium.vector import AutoresetMode

__all__ = ["AutoresetMode", "mode_name"]


def mode_name(mode: AutoresetMode) -> str:
    """The name ``autoreset_mode=`` takes for ``mode`` (``"next_step"``...).

    Example:
        >>> mode_name(AutoresetMode.NEXT_STEP)
        'next_step'
    """
    return {AutoresetMode.SAME_STEP: "same_step", AutoresetMode.NEXT_STEP: "next_step",
            AutoresetMode.DISABLED: "disabled"}[mode]
