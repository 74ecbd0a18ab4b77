"""The package after a non-editable install (the ``installed`` fixture of
``tests/scripts/conftest.py``): the wrappers inside its namespace, and each console
command's ``--help`` from another folder."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.scripts.conftest import command_env

pytestmark = pytest.mark.slow  # runs console commands or scripts in processes of their own

COMMANDS = {  # command -> an option its --help must name
    "vec-envs-run-atari": "--num-envs",
    "vec-envs-train-ppo": "--total-timesteps",
    "vec-envs-convert-vecnormalize": "--env-id",
    "vec-envs-train-multiagent": "--num-envs",
    "vec-envs-check": "--steps",
    "vec-envs-tune": "--seconds",
}


def run_python(installed: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], cwd=cwd, env=command_env(installed), capture_output=True,
                          text=True, timeout=120, check=False)


@pytest.mark.timeout(300)
def test_the_package_comes_from_the_install_not_the_checkout(installed, tmp_path):
    done = run_python(installed, tmp_path, "-c", "import vec_envs.cli.args as m; print(m.__file__)")
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()).is_relative_to(installed), done.stdout


@pytest.mark.timeout(300)
def test_the_wrappers_install_as_vec_envs_wrappers_and_nothing_named_wrappers(installed, tmp_path):
    assert (installed / "vec_envs" / "wrappers" / "vec_normalize.py").is_file()
    assert (installed / "vec_envs" / "wrappers" / "py.typed").is_file()
    assert not (installed / "wrappers").exists()
    done = run_python(installed, tmp_path, "-c", "import wrappers")
    assert done.returncode != 0
    assert "ModuleNotFoundError: No module named 'wrappers'" in done.stderr
    done = run_python(installed, tmp_path, "-c", "from vec_envs.wrappers import VecNormalize, VecFrameStack, "
                      "VecMonitor; from vec_envs import kernels; print(VecNormalize.__module__, "
                      "kernels.report()['rms']['built'])")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["vec_envs.wrappers.vec_normalize", "True"]


USERS_SCRIPT = """
import wrappers  # the user's own module, beside this script
from vec_envs import DummyVecEnv
from vec_envs.wrappers import VecFrameStack, VecMonitor, VecNormalize
from vec_envs.wrappers.atari import make_atari_env

venv = VecNormalize(VecFrameStack(VecMonitor(DummyVecEnv([wrappers.make_env] * 2)), 2))
venv.reset()
obs, rewards, dones, infos = venv.step([0, 1])
print(wrappers.WHOSE, obs.shape, callable(make_atari_env))
venv.close()
"""


@pytest.mark.timeout(300)
def test_a_users_own_wrappers_py_beside_the_script_does_not_clash(installed, tmp_path):
    (tmp_path / "wrappers.py").write_text(
        "import gymnasium as gym\n\nWHOSE = 'mine'\n\n\ndef make_env():\n    return gym.make('CartPole-v1')\n")
    (tmp_path / "train.py").write_text(USERS_SCRIPT)
    done = run_python(installed, tmp_path, "train.py")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["mine", "(2,", "8)", "True"]


@pytest.mark.timeout(300)
@pytest.mark.parametrize("command", list(COMMANDS))
def test_each_command_prints_its_help_from_any_folder(installed, tmp_path, command):
    executable = shutil.which(command, path=str(installed / "bin"))
    assert executable, f"{command} is not in {installed / 'bin'}: {sorted(os.listdir(installed / 'bin'))}"
    done = subprocess.run([executable, "--help"], cwd=tmp_path, env=command_env(installed), capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"usage: {command} ")
    assert COMMANDS[command] in done.stdout


@pytest.mark.timeout(300)
def test_the_installed_run_atari_steps_envs_in_worker_processes(installed, tmp_path):
    pytest.importorskip("ale_py", reason="vec-envs-run-atari needs ale-py (the atari extra)")
    done = subprocess.run([str(installed / "bin" / "vec-envs-run-atari"), "--backend", "subproc", "--num-envs", "2",
                           "--steps", "16"], cwd=tmp_path, env=command_env(installed), capture_output=True, text=True,
                          timeout=240, check=False)
    assert done.returncode == 0, done.stderr
    assert "Breakout" in done.stdout
    assert "2 envs on subproc" in done.stdout
    assert "summary: steps 16 |" in done.stdout
