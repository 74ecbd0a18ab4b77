"""Exact snapshots of an ALE emulator (Atari envs), sticky actions included.

``cloneState(include_rng=True)`` keeps the emulator, its frame counters and the RNG that
decides when an action sticks, but not the action that is repeated when it does: that
one lives outside the state (ALE issue #165), so a restored game could repeat another
action than the original game did. To make a state replay identically, taking and
restoring a state both set that action to NOOP: ``act(NOOP)`` on a truncated copy of
the game (where ``act`` emulates nothing but still draws the sticky decision) until
it has certainly been taken, then the state itself is restored.

So with ``repeat_action_probability > 0``, right after a state is taken or restored
the env repeats NOOP, not its previous action, if its next frame's action sticks.
Envs without sticky actions skip all this.
"""
from __future__ import annotations

import math
import weakref
from typing import Any

from vec_envs.ale.games import import_ale

__all__ = ["clone_ale", "restore_ale"]

#: chance that the NOOP was never taken after the forcing acts
STICKY_FAILURE_P = 1e-15
#: byte offset of the episode frame number in ``ALEState.serialize()`` (int32, little-endian)
EPISODE_FRAME_OFFSET = 12
NOOP = 0

# per env: an ALEState that is past its frame budget (truncated), or None if none works
_truncated_states: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()


def clone_ale(env: Any) -> Any:
    """The ALE state of ``env`` (``env.ale``), RNG included; its sticky action is set to NOOP."""
    state = env.ale.cloneState(include_rng=True)
    _force_sticky_noop(env, state)
    return state


def restore_ale(env: Any, state: Any) -> None:
    """Restore ``state`` (from ``clone_ale``) into ``env``, sticky action included."""
    if not _force_sticky_noop(env, state):
        env.ale.restoreState(state)


def _force_sticky_noop(env: Any, state: Any) -> bool:
    """Make NOOP the action the emulator repeats, then restore ``state``; False if not needed."""
    ale = env.ale
    p = ale.getFloat("repeat_action_probability")
    if not 0.0 < p < 1.0:
        return False  # never sticks, or always repeats the NOOP of the last reset
    if not _enter_truncated_game(env):
        ale.reset_game()  # exact but slow: a reset also repeats NOOP
    else:
        for _ in range(math.ceil(math.log(STICKY_FAILURE_P) / math.log(p))):
            ale.act(NOOP)
    ale.restoreState(state)
    return True


def _enter_truncated_game(env: Any) -> bool:
    """Restore a truncated copy of the game (act() then emulates nothing); False if none works."""
    if env not in _truncated_states:
        _truncated_states[env] = _truncated_copy(env.ale.cloneState())  # no RNG: restores faster
    truncated = _truncated_states[env]
    if truncated is None:
        return False
    env.ale.restoreState(truncated)
    if env.ale.game_truncated():
        return True
    _truncated_states[env] = None  # no frame budget, or another serialization layout
    return False


def _truncated_copy(state: Any) -> Any:
    """``state`` with its episode frame number set past any frame budget."""
    data = bytearray(state.serialize())
    data[EPISODE_FRAME_OFFSET:EPISODE_FRAME_OFFSET + 4] = (2**31 - 1).to_bytes(4, "little")
    try:
        return import_ale().ALEState(bytes(data))
    except Exception:
        return None
