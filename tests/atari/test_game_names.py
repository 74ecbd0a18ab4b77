"""One way to name an Atari game and one way to import ale-py: ``vec_envs.ale.games``, and every
Atari entry point (ALEVecEnv, make_atari, make_atari_env) answering with its rules and messages."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("ale_py", reason="the Atari tests need ale-py: pip install -e '.[atari]'")

from vec_envs import ALEVecEnv, DummyVecEnv  # noqa: E402
from vec_envs.ale.games import AtariGame, atari_games, resolve_game  # noqa: E402
from vec_envs.wrappers.atari import make_atari, make_atari_env  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
UNKNOWN = (r"unknown Atari game 'Brekout' \(did you mean 'Breakout'\?\); expected a game name such as "
           r"'Breakout' or 'Pong', or an Atari env id such as 'BreakoutNoFrameskip-v4' or 'ALE/Breakout-v5'; "
           r"vec_envs.ale.atari_games\(\) lists the \d+ games")
NOT_ATARI = (r"'CartPole-v1' is a registered gymnasium id, but not an Atari env: its entry point is "
             r"'gymnasium.envs.classic_control.cartpole:CartPoleEnv', expected 'ale_py.env:AtariEnv'")
ENTRY_POINTS = {
    "ALEVecEnv": lambda name: ALEVecEnv(name, 1).close(),
    "make_atari": lambda name: make_atari(name).close(),
    "make_atari_env": lambda name: make_atari_env(name, 1, vec_env_cls=DummyVecEnv).close(),
}


@pytest.mark.parametrize("name, game", [
    ("Breakout", AtariGame("breakout", "ALE/Breakout-v5")),
    ("breakout", AtariGame("breakout", "ALE/Breakout-v5")),
    ("spaceinvaders", AtariGame("space_invaders", "ALE/SpaceInvaders-v5")),
    ("MsPacman", AtariGame("ms_pacman", "ALE/MsPacman-v5")),
    ("ms_pacman", AtariGame("ms_pacman", "ALE/MsPacman-v5")),
    ("ALE/Pong-v5", AtariGame("pong", "ALE/Pong-v5")),
    ("BreakoutNoFrameskip-v4", AtariGame("breakout", "BreakoutNoFrameskip-v4")),
    ("Breakout-v0", AtariGame("breakout", "Breakout-v0")),
])
def test_every_way_of_naming_a_game_gives_its_rom_and_gymnasium_id(name, game):
    assert resolve_game(name) == game


def test_a_game_name_with_an_unregistered_version_is_the_game():
    assert resolve_game("ALE/Breakout-v4") == AtariGame("breakout", "ALE/Breakout-v5")


def test_an_unknown_game_is_named_with_close_matches_and_how_to_list_every_game():
    with pytest.raises(ValueError, match=UNKNOWN):
        resolve_game("Brekout")


def test_a_registered_id_of_another_env_names_its_entry_point():
    with pytest.raises(ValueError, match=NOT_ATARI):
        resolve_game("CartPole-v1")


def test_a_name_that_is_not_a_str_is_a_type_error():
    with pytest.raises(TypeError, match=r"an Atari game is named by a str such as 'Breakout' or "
                                        r"'ALE/Breakout-v5', received int 3"):
        resolve_game(3)


def test_every_game_answers_by_its_listed_name_and_its_rom_id():
    games = atari_games()
    assert len(games) > 100
    assert [resolve_game(name).env_id for name in games] == [f"ALE/{name}-v5" for name in games]
    assert [resolve_game(resolve_game(name).rom) for name in games] == [resolve_game(name) for name in games]


@pytest.mark.parametrize("call", ["resolve_game('joust')", "ALEVecEnv('joust', 1)"], ids=["resolve", "ALEVecEnv"])
def test_a_multiplayer_rom_is_an_unknown_game_not_the_end_of_the_process(call):
    code = textwrap.dedent(f"""
        from vec_envs import ALEVecEnv
        from vec_envs.ale.games import resolve_game
        try:
            {call}
        except ValueError as exc:
            print(exc)
    """)
    out = subprocess.run([sys.executable, "-c", code], check=False, cwd=REPO, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("unknown Atari game 'joust'; expected a game name such as 'Breakout'"), out.stdout


@pytest.mark.parametrize("entry_point", list(ENTRY_POINTS))
def test_every_entry_point_gives_the_same_error_for_an_unknown_game(entry_point):
    with pytest.raises(ValueError, match=UNKNOWN):
        ENTRY_POINTS[entry_point]("Brekout")


@pytest.mark.parametrize("entry_point", list(ENTRY_POINTS))
def test_every_entry_point_gives_the_same_error_for_another_registered_env(entry_point):
    with pytest.raises(ValueError, match=NOT_ATARI):
        ENTRY_POINTS[entry_point]("CartPole-v1")


@pytest.mark.parametrize("call", [
    "resolve_game('Breakout')",
    "ALEVecEnv('Breakout', 2)",
    "make_atari('Breakout')",
    "make_atari_env('Breakout', 2, vec_env_cls=DummyVecEnv)",
])
def test_without_ale_py_every_entry_point_says_what_to_install(call):
    code = textwrap.dedent(f"""
        import sys
        sys.modules["ale_py"] = None          # as if ale-py were not installed
        from vec_envs import ALEVecEnv, DummyVecEnv
        from vec_envs.ale.games import resolve_game
        from vec_envs.wrappers.atari import make_atari, make_atari_env
        try:
            {call}
        except ImportError as exc:
            print(exc)
    """)
    out = subprocess.run([sys.executable, "-c", code], check=False, cwd=REPO, capture_output=True, text=True,
                         timeout=60)
    assert out.stdout.strip() == ('Atari needs ale-py >= 0.12 (the emulator, its ROMs and its C++ vector engine '
                                  'ALEVectorInterface): pip install -e ".[atari]" (from a checkout) or '
                                  'pip install "vec_envs[atari]"'), out.stderr
