"""ale-py and its games: ``import_ale`` and ``resolve_game``, for every Atari path of vec_envs.

``import_ale`` is the one way vec_envs imports ale-py (the emulator, its ROMs, its C++
vector engine, and the gymnasium ids it registers): a missing or too old ale-py is one
``ImportError`` naming the install command. ``resolve_game`` is the one way a game is
named: it turns what a user writes into what ale-py and gymnasium need, an
``AtariGame`` with the ROM id (``ALEVecEnv``'s engine) and the gymnasium id
(``make_atari``). Nothing here imports ale-py at import time.

The rules of ``resolve_game``:

1. a registered gymnasium id (``"BreakoutNoFrameskip-v4"``, ``"ALE/Breakout-v5"``) is
   kept as it is, and must be an Atari env (ale-py's ``AtariEnv``);
2. anything else names a game, written any way: case and underscores do not matter, and
   an ``ALE/`` prefix, a ``NoFrameskip`` or ``Deterministic`` suffix and a version are
   ignored (``"Breakout"``, ``"breakout"``, ``"MsPacman"``, ``"ms_pacman"``); its
   gymnasium id is ``ALE/<Game>-v5``;
3. a name that is neither is a ``ValueError`` naming it, listing the close matches and
   how to list every game (``atari_games()``).

The games are those ale-py registers with gymnasium (``ALE/<Game>-v5``). The few
multi-player ROMs it also ships are none: its single-player emulator cannot load them
(and its C++ engine ends the process when asked to).
"""
from __future__ import annotations

import difflib
import importlib
import multiprocessing
import re
from types import ModuleType
from typing import NamedTuple

import gymnasium as gym

from vec_envs.extras import install_hint

__all__ = ["NO_ALE", "AtariGame", "atari_games", "import_ale", "resolve_game"]

NO_ALE = ("Atari needs ale-py >= 0.12 (the emulator, its ROMs and its C++ vector engine "
          f"ALEVectorInterface): {install_hint('atari')}")
#: the entry point of every gymnasium id that ale-py registers
ALE_ENTRY_POINT = "ale_py.env:AtariEnv"
UNKNOWN_GAME = ("unknown Atari game {name!r}{hint}; expected a game name such as 'Breakout' or 'Pong', or an "
                "Atari env id such as 'BreakoutNoFrameskip-v4' or 'ALE/Breakout-v5'; "
                "vec_envs.ale.atari_games() lists the {count} games")
NOT_ATARI = ("{name!r} is a registered gymnasium id, but not an Atari env: its entry point is {entry_point!r}, "
             f"expected {ALE_ENTRY_POINT!r}")
NOT_A_NAME = "an Atari game is named by a str such as 'Breakout' or 'ALE/Breakout-v5', received {kind} {name!r}"
_ID_NOISE = re.compile(r"^ALE/|(NoFrameskip|Deterministic)?-v\d+$", re.IGNORECASE)


class AtariGame(NamedTuple):
    """One Atari game, as ale-py and gymnasium name it.

    Attributes:
        rom: ale-py's ROM id (``"breakout"``, ``"ms_pacman"``): what the C++ engine loads.
        env_id: the gymnasium id ``gym.make`` takes: ``"ALE/Breakout-v5"``, or the
            registered id the game was named by.
    """

    rom: str
    env_id: str


def import_ale() -> ModuleType:
    """``ale_py``, imported (which registers its gymnasium ids), or an ImportError that
    says what to install.

    In a child process (a worker) ALE's log is set to warnings only: its banner is
    printed once, by the parent.

    Example:
        >>> hasattr(import_ale(), "ALEVectorInterface")
        True
    """
    try:
        ale_py = importlib.import_module("ale_py")
    except ImportError as exc:
        raise ImportError(NO_ALE) from exc
    if not hasattr(ale_py, "ALEVectorInterface"):
        raise ImportError(f"{NO_ALE} (found ale-py {getattr(ale_py, '__version__', '?')})")
    if multiprocessing.parent_process() is not None:
        ale_py.ALEInterface.setLoggerMode(ale_py.LoggerMode.Warning)
    return ale_py


def atari_games() -> list[str]:
    """The name of every Atari game, sorted (each also answers in lower case, with
    underscores, or as its gymnasium id).

    Example:
        >>> games = atari_games()
        >>> "Breakout" in games, "MsPacman" in games
        (True, True)
    """
    import_ale()  # registers the ids
    return sorted(_display_name(game) for game in _games().values())


def resolve_game(name: str) -> AtariGame:
    """The game ``name`` names, by the rules of this module's docstring.

    Raises:
        TypeError: ``name`` is not a str.
        ValueError: ``name`` is a registered id of another env, or names no game.
        ImportError: ale-py is missing.

    Example:
        >>> resolve_game("MsPacman")
        AtariGame(rom='ms_pacman', env_id='ALE/MsPacman-v5')
        >>> resolve_game("BreakoutNoFrameskip-v4")
        AtariGame(rom='breakout', env_id='BreakoutNoFrameskip-v4')
        >>> resolve_game("Brekout")
        Traceback (most recent call last):
        ValueError: unknown Atari game 'Brekout' (did you mean 'Breakout'?); expected a game name such as ...
    """
    if not isinstance(name, str):
        raise TypeError(NOT_A_NAME.format(kind=type(name).__name__, name=name))
    import_ale()  # registers the ids
    if name in gym.registry:
        return _registered_game(name)
    games = _games()
    key = _key(name)
    if key in games:
        return games[key]
    raise ValueError(UNKNOWN_GAME.format(name=name, hint=_close_matches(key, games), count=len(games)))


def _registered_game(env_id: str) -> AtariGame:
    spec = gym.registry[env_id]
    if spec.entry_point != ALE_ENTRY_POINT:
        raise ValueError(NOT_ATARI.format(name=env_id, entry_point=spec.entry_point))
    return AtariGame(str(spec.kwargs["game"]), env_id)


def _key(name: str) -> str:
    """``name`` without what rule 2 ignores: ``"ALE/Ms_Pacman-v5"`` -> ``"mspacman"``."""
    return _ID_NOISE.sub("", name).replace("_", "").lower()


def _games() -> dict[str, AtariGame]:
    """Every game, by its key (``_key``), with its ``ALE/<Game>-v5`` id."""
    return {_key(env_id): AtariGame(str(spec.kwargs["game"]), env_id) for env_id, spec in gym.registry.items()
            if env_id.startswith("ALE/") and env_id.endswith("-v5") and spec.entry_point == ALE_ENTRY_POINT}


def _close_matches(key: str, games: dict[str, AtariGame]) -> str:
    """`` (did you mean 'Breakout'?)`` for the games whose keys are close to ``key``, or ``""``."""
    close = difflib.get_close_matches(key, list(games), n=3, cutoff=0.6)
    names = [_display_name(games[c]) for c in close]
    return f" (did you mean {', '.join(repr(n) for n in names)}?)" if names else ""


def _display_name(game: AtariGame) -> str:
    """``"Breakout"`` for ``ALE/Breakout-v5``."""
    return game.env_id[len("ALE/"):-len("-v5")]
