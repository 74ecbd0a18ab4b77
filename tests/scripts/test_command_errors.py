"""Every console command, run from a non-editable install, keeps the README's exit codes:
a bad command line exits 2, a setup it cannot run with (a missing or bad file, an unknown
env id, an unwritable path, a missing extra) exits 1, each with one line on stderr naming
the file or argument; Ctrl-C exits 130 with one line of what was done, and leaves no
process behind."""
from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import gymnasium as gym
import psutil
import pytest

from tests.helpers import still_running
from tests.scripts.conftest import command_env
from vec_envs import DummyVecEnv
from vec_envs.wrappers import VecNormalize

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]  # slow: runs the installed console commands
CONVERT, PPO, MULTIAGENT, ATARI = ("vec-envs-convert-vecnormalize", "vec-envs-train-ppo",
                                   "vec-envs-train-multiagent", "vec-envs-run-atari")


def hidden(tmp_path: Path, *modules: str) -> Path:
    """A folder whose packages named ``modules`` fail to import, hiding the installed ones."""
    folder = tmp_path / "hidden"
    for module in modules:
        (folder / module).mkdir(parents=True)
        (folder / module / "__init__.py").write_text(f'raise ImportError("No module named {module!r} (hidden)")\n')
    return folder


def run(installed: Path, cwd: Path, command: str, *args: str, before: tuple[Path, ...] = ()
        ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(installed / "bin" / command), *args], cwd=cwd, env=command_env(installed, *before),
                          capture_output=True, text=True, timeout=240, check=False)


def the_error(done: subprocess.CompletedProcess[str], command: str, code: int) -> str:
    """The one line the command wrote to stderr (a convert from SB3 may add its unpickle note)."""
    assert done.returncode == code, done.stderr
    lines = [line for line in done.stderr.splitlines() if not line.startswith("note: reading ")]
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"{command}: error: "), lines[0]
    return lines[0]


@pytest.fixture(scope="module")
def statistics(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A VecNormalize file of CartPole-v1, as ``VecNormalize.save`` writes it."""
    path = tmp_path_factory.mktemp("statistics") / "vecnormalize.npz"
    with VecNormalize(DummyVecEnv([lambda: gym.make("CartPole-v1")])) as venv:
        venv.save(path)
    return path


# ------------------------------------------------------------------ vec-envs-convert-vecnormalize
def test_convert_a_bad_direction_is_a_usage_error(installed, tmp_path, statistics):
    line = the_error(run(installed, tmp_path, CONVERT, "sideways", str(statistics), "x.pkl", "--env-id",
                         "CartPole-v1"), CONVERT, 2)
    assert "invalid choice: 'sideways'" in line


def test_convert_a_missing_source_is_named(installed, tmp_path):
    line = the_error(run(installed, tmp_path, CONVERT, "to-sb3", "nope.npz", "x.pkl", "--env-id", "CartPole-v1"),
                     CONVERT, 1)
    assert line.endswith("source 'nope.npz': no such file")


@pytest.mark.parametrize("direction", ["to-sb3", "from-sb3"])
def test_convert_a_garbage_source_is_named_with_what_it_should_be(installed, tmp_path, direction):
    (tmp_path / "garbage").write_bytes(os.urandom(300))
    line = the_error(run(installed, tmp_path, CONVERT, direction, "garbage", "out", "--env-id", "CartPole-v1"),
                     CONVERT, 1)
    assert "garbage" in line
    assert ("not a readable VecNormalize file" in line if direction == "to-sb3"
            else "cannot be read as an SB3 VecNormalize pickle for CartPole-v1" in line)
    assert not (tmp_path / "out").exists()


def test_convert_a_truncated_statistics_file_is_named(installed, tmp_path, statistics):
    data = statistics.read_bytes()
    (tmp_path / "cut.npz").write_bytes(data[:len(data) // 2])
    line = the_error(run(installed, tmp_path, CONVERT, "to-sb3", "cut.npz", "x.pkl", "--env-id", "CartPole-v1"),
                     CONVERT, 1)
    assert "cut.npz" in line and "truncated" in line


@pytest.mark.parametrize("target, reason", [("missing/x.pkl", "does not exist; create it first"),
                                            (".", "is a directory; expected a file name")])
def test_convert_a_target_that_cannot_be_written_is_named(installed, tmp_path, statistics, target, reason):
    line = the_error(run(installed, tmp_path, CONVERT, "to-sb3", str(statistics), target, "--env-id",
                         "CartPole-v1"), CONVERT, 1)
    assert f"target {target!r}" in line and reason in line


def test_convert_an_unknown_env_id_is_named(installed, tmp_path, statistics):
    line = the_error(run(installed, tmp_path, CONVERT, "to-sb3", str(statistics), "x.pkl", "--env-id",
                         "CartPol-v1"), CONVERT, 1)
    assert "--env-id 'CartPol-v1'" in line and "Did you mean" in line


def test_convert_a_statistics_file_of_another_env_is_named(installed, tmp_path, statistics):
    line = the_error(run(installed, tmp_path, CONVERT, "to-sb3", str(statistics), "x.pkl", "--env-id",
                         "Pendulum-v1"), CONVERT, 1)
    assert str(statistics) in line and "observation space" in line


def test_convert_without_sb3_names_the_extra(installed, tmp_path, statistics):
    line = the_error(run(installed, tmp_path, CONVERT, "to-sb3", str(statistics), "x.pkl", "--env-id",
                         "CartPole-v1", before=(hidden(tmp_path, "stable_baselines3"),)), CONVERT, 1)
    assert line.endswith('needs Stable-Baselines3: pip install -e ".[sb3]" (from a checkout) or '
                         'pip install "vec_envs[sb3]"')


# ------------------------------------------------------------------ vec-envs-train-ppo
def test_train_ppo_a_bad_number_is_a_usage_error(installed, tmp_path):
    line = the_error(run(installed, tmp_path, PPO, "--num-envs", "many"), PPO, 2)
    assert "argument --num-envs: expected a positive int, received 'many'" in line


def test_train_ppo_an_unknown_env_id_is_named(installed, tmp_path):
    line = the_error(run(installed, tmp_path, PPO, "--env-id", "CartPol-v1"), PPO, 1)
    assert "--env-id 'CartPol-v1'" in line


def test_train_ppo_an_unwritable_output_is_named_before_training(installed, tmp_path):
    (tmp_path / "file").write_text("")
    line = the_error(run(installed, tmp_path, PPO, "--output", "file/run"), PPO, 1)
    assert "--output 'file/run' is not a writable folder" in line


def test_train_ppo_without_sb3_names_the_extra(installed, tmp_path):
    line = the_error(run(installed, tmp_path, PPO, before=(hidden(tmp_path, "stable_baselines3"),)), PPO, 1)
    assert 'pip install "vec_envs[sb3]"' in line


# ------------------------------------------------------------------ vec-envs-train-multiagent
def test_train_multiagent_a_bad_backend_is_a_usage_error(installed, tmp_path):
    line = the_error(run(installed, tmp_path, MULTIAGENT, "--backend", "threads"), MULTIAGENT, 2)
    assert "argument --backend: invalid choice: 'threads'" in line


@pytest.mark.parametrize("module, extra", [("mpe2", "multiagent"), ("stable_baselines3", "sb3")])
def test_train_multiagent_without_an_extra_names_it(installed, tmp_path, module, extra):
    line = the_error(run(installed, tmp_path, MULTIAGENT, before=(hidden(tmp_path, module),)), MULTIAGENT, 1)
    assert f'pip install "vec_envs[{extra}]"' in line


def test_train_multiagent_help_says_what_it_does(installed, tmp_path):
    done = run(installed, tmp_path, MULTIAGENT, "--help")
    assert done.returncode == 0
    assert "Train one shared PPO policy on every agent of PettingZoo's simple_spread_v3" in done.stdout


# ------------------------------------------------------------------ vec-envs-run-atari
def test_run_atari_a_bad_number_is_a_usage_error(installed, tmp_path):
    line = the_error(run(installed, tmp_path, ATARI, "--num-envs", "0"), ATARI, 2)
    assert "expected a positive int, received '0'" in line


def test_run_atari_an_unknown_game_is_named(installed, tmp_path):
    line = the_error(run(installed, tmp_path, ATARI, "--env-id", "Brekout"), ATARI, 1)
    assert "unknown Atari game 'Brekout' (did you mean 'Breakout'?)" in line


def test_run_atari_without_ale_py_names_the_extra(installed, tmp_path):
    line = the_error(run(installed, tmp_path, ATARI, before=(hidden(tmp_path, "ale_py"),)), ATARI, 1)
    assert 'pip install "vec_envs[atari]"' in line


# ------------------------------------------------------------------ Ctrl-C
def interrupt_once_running(installed: Path, cwd: Path, command: str, *args: str, children: int
                           ) -> tuple[subprocess.CompletedProcess[str], list[int]]:
    """Start ``command``, wait for its ``children`` worker processes, then Ctrl-C (SIGINT to
    its process group, as a terminal sends it); the result and the pids it had."""
    proc = subprocess.Popen([str(installed / "bin" / command), *args], cwd=cwd, env=command_env(installed),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline, pids = time.monotonic() + 180, []
    while time.monotonic() < deadline and proc.poll() is None:
        pids = [p.pid for p in psutil.Process(proc.pid).children(recursive=True)]
        if len(pids) >= children:
            break
        time.sleep(0.2)
    time.sleep(3.0)  # well into its run
    pids = [p.pid for p in psutil.Process(proc.pid).children(recursive=True)] if proc.poll() is None else pids
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err), pids


@pytest.mark.parametrize("command, args, children, said", [
    (PPO, ("--num-envs", "2", "--batch-size", "64", "--no-progress-bar"), 2, "interrupted: after "),
    (MULTIAGENT, ("--num-envs", "2", "--no-progress-bar"), 2, "interrupted: after "),
    (ATARI, ("--num-envs", "2", "--steps", "10000000"), 2, ""),
])
def test_ctrl_c_exits_130_with_one_line_and_leaves_no_process(installed, tmp_path, command, args, children, said):
    done, pids = interrupt_once_running(installed, tmp_path, command, *args, children=children)
    assert done.returncode == 130, done.stderr
    assert len(pids) >= children
    if said:  # the training commands: one line on stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"{command}: {said}"), done.stderr
        assert lines[0].endswith("the envs are closed" if command == MULTIAGENT else "nothing saved")
    else:  # run-atari: its summary so far on stdout
        assert done.stdout.strip().splitlines()[-1].startswith("interrupted: steps "), done.stdout
    assert still_running(pids) == []
