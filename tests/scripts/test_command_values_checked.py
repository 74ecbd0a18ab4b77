"""The console commands check every value before doing anything, as the commands page
promises: a number out of range is one line and exit status 2 (never a traceback, never
a run that does nothing and exits 0); ``vec-envs-convert-vecnormalize`` refuses a target
that is its source or is named as the other format (exit 2) and a source that is not a
regular file or is of the other format (exit 1), each in one line; a Ctrl-C while a
command is still importing is one line and exit status 130."""
from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import gymnasium as gym
import pytest

from tests.scripts.conftest import command_env
from tests.worker_groups import imports_sb3
from vec_envs import DummyVecEnv
from vec_envs.cli import convert_vecnormalize, run_atari, train_multiagent, train_ppo
from vec_envs.wrappers import VecNormalize


def usage_error(main, argv, capsys) -> str:
    """The one line ``main(argv)`` writes before exiting 2."""
    with pytest.raises(SystemExit) as done:
        main(argv)
    assert done.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


@pytest.mark.parametrize(("argv", "message"), [
    (["--num-envs", "0"], "argument --num-envs: expected a positive int, received '0'"),
    (["--num-envs", "-1"], "argument --num-envs: expected a positive int, received '-1'"),
    (["--batch-size", "0"], "argument --batch-size: expected a positive int"),
    (["--n-steps", "0"], "argument --n-steps: expected a positive int"),
    (["--eval-episodes", "0"], "argument --eval-episodes: expected a positive int"),
    (["--total-timesteps", "-5"], "argument --total-timesteps: expected a positive int, received '-5'"),
    (["--n-epochs", "0"], "argument --n-epochs: expected a positive int"),
    (["--seed", "-3"], "argument --seed: expected an int >= 0, received '-3'"),
    (["--gamma", "1.5"], "argument --gamma: expected a number from 0 to 1, received '1.5'"),
    (["--gamma", "nan"], "argument --gamma: expected a number from 0 to 1, received 'nan'"),
    (["--learning-rate", "-1"], "argument --learning-rate: expected a finite number > 0, received '-1'"),
    (["--clip-range", "inf"], "argument --clip-range: expected a finite number > 0, received 'inf'"),
])
def test_train_ppo_refuses_a_number_out_of_range(argv, message, capsys):
    assert message in usage_error(train_ppo.main, argv, capsys)


@pytest.mark.parametrize(("argv", "message"), [
    (["--num-envs", "0"], "argument --num-envs: expected a positive int"),
    (["--max-cycles", "0"], "argument --max-cycles: expected a positive int, received '0'"),
    (["--total-timesteps", "-5"], "argument --total-timesteps: expected a positive int"),
    (["--seed", "-1"], "argument --seed: expected an int >= 0, received '-1'"),
    (["--learning-rate", "nan"], "argument --learning-rate: expected a finite number > 0, received 'nan'"),
    (["--n-epochs", "0"], "argument --n-epochs: expected a positive int"),
    (["--ent-coef", "-0.1"], "argument --ent-coef: expected a finite number >= 0, received '-0.1'"),
])
def test_train_multiagent_refuses_a_number_out_of_range(argv, message, capsys):
    assert message in usage_error(train_multiagent.main, argv, capsys)


def test_run_atari_refuses_more_envs_than_it_can_hold(capsys):
    line = usage_error(run_atari.main, ["--num-envs", "100000000"], capsys)
    assert f"argument --num-envs: expected a positive int up to {run_atari.MAX_ENVS}, received '100000000'" in line


@pytest.fixture(scope="module")
def statistics(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("statistics") / "vecnormalize.npz"
    with VecNormalize(DummyVecEnv([lambda: gym.make("CartPole-v1")])) as venv:
        venv.save(path)
    return path


def convert(*argv: str) -> list[str]:
    return ["--env-id", "CartPole-v1", *argv]


def test_convert_refuses_a_target_that_is_its_source(statistics, capsys):
    before = statistics.read_bytes()
    line = usage_error(convert_vecnormalize.main, convert("to-sb3", str(statistics), str(statistics)), capsys)
    assert "source and target are the same file" in line
    assert statistics.read_bytes() == before


@pytest.mark.parametrize(("direction", "target", "message"), [
    ("to-sb3", "out.npz", "target 'out.npz' is named as a .npz file, but to-sb3 writes an SB3 pickle"),
    ("from-sb3", "out.pkl", "target 'out.pkl' is named as a .pkl file, but from-sb3 writes vec_envs' .npz"),
])
def test_convert_refuses_a_target_named_as_the_other_format(statistics, direction, target, message, capsys):
    assert message in usage_error(convert_vecnormalize.main, convert(direction, str(statistics), target), capsys)


def one_error(argv: list[str], capsys) -> str:
    assert convert_vecnormalize.main(argv) == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


@imports_sb3
def test_convert_names_a_source_that_is_no_regular_file(tmp_path, capsys):
    line = one_error(convert("to-sb3", os.devnull, str(tmp_path / "out.pkl")), capsys)
    assert f"source '{os.devnull}': is not a regular file" in line


@imports_sb3
def test_convert_from_sb3_names_a_source_in_our_format(statistics, tmp_path, capsys):
    line = one_error(convert("from-sb3", str(statistics), str(tmp_path / "out.npz")), capsys)
    assert "is vec_envs' .npz statistics, not an SB3 pickle; to write it in SB3's format use to-sb3" in line


@imports_sb3
def test_convert_to_sb3_names_a_source_in_sb3s_format(statistics, tmp_path, capsys):
    pickle = tmp_path / "theirs.pkl"
    assert convert_vecnormalize.main(convert("to-sb3", str(statistics), str(pickle))) == 0
    capsys.readouterr()
    line = one_error(convert("to-sb3", str(pickle), str(tmp_path / "again.pkl")), capsys)
    assert "is a pickle (SB3's format), not vec_envs' .npz; to read it use from-sb3" in line


@pytest.mark.slow  # installs the package from a wheel (once per session) to run the command
def test_ctrl_c_while_a_command_imports_is_one_line_and_exit_130(installed, tmp_path):
    slow = tmp_path / "slow" / "gymnasium"  # an import the command makes first, held until the Ctrl-C
    slow.mkdir(parents=True)
    (slow / "__init__.py").write_text("import sys, time\nprint('importing', flush=True)\ntime.sleep(120)\n")
    proc = subprocess.Popen([str(installed / "bin" / "vec-envs-train-ppo"), "--help"], cwd=tmp_path,
                            env=command_env(installed, slow.parent), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "importing"
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert err.strip().splitlines() == ["vec-envs-train-ppo: interrupted: while starting, before any work"]
