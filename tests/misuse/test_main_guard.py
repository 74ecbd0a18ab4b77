"""A user script without the ``if __name__ == "__main__":`` guard gets told so, with the fix."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from vec_envs.subproc.parent.main_guard import check_main_guard

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HEADER = """\
import gymnasium as gym
from vec_envs import SubprocVecEnv
"""


def run_script(tmp_path, body):
    script = tmp_path / "train.py"
    script.write_text(HEADER + textwrap.dedent(body))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [REPO, os.environ.get("PYTHONPATH")])))
    return subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=90, check=False)


@pytest.mark.parametrize("body", [
    """
    venv = SubprocVecEnv([lambda: gym.make("CartPole-v1")] * 2, in_series=1)
    """,
    """
    def main():
        return SubprocVecEnv([lambda: gym.make("CartPole-v1")] * 2, in_series=1, context="spawn")

    venv = main()
    """,
], ids=["top-level", "in-a-function-called-at-top-level"])
def test_an_unguarded_script_gets_the_fix_and_no_worker_starts(tmp_path, body):
    done = run_script(tmp_path, body)
    assert done.returncode == 1
    assert 'RuntimeError: SubprocVecEnv is created at' in done.stderr
    assert f"{tmp_path / 'train.py'}:" in done.stderr
    assert 'if __name__ == "__main__":\n        venv = SubprocVecEnv(...)' in done.stderr
    assert "EnvWorkerError" not in done.stderr
    assert done.stderr.count("Traceback") == 1


def test_guarded_and_fork_scripts_run(tmp_path):
    done = run_script(tmp_path, """
    forked = SubprocVecEnv([lambda: gym.make("CartPole-v1")] * 2, in_series=1, context="fork")
    forked.close()

    if __name__ == "__main__":
        with SubprocVecEnv([lambda: gym.make("CartPole-v1")] * 2, in_series=1) as venv:
            print(venv.reset().shape)
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "(2, 4)"


def test_inside_this_test_process_nothing_is_flagged():
    check_main_guard("spawn")  # pytest's own entry point is guarded
