"""A user script without the ``if __name__ == "__main__":`` guard gets told so, with the fix."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from vec_envs.subproc.main_guard import check_main_guard

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


def run_from_stdin(tmp_path, body, *args):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [REPO, os.environ.get("PYTHONPATH")])))
    return subprocess.run([sys.executable, "-", *args], input=HEADER + textwrap.dedent(body), cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=90, check=False)


@pytest.mark.parametrize("context", ["forkserver", "spawn"])
def test_a_script_piped_through_python_dash_is_told_why_its_workers_cannot_start(tmp_path, context):
    done = run_from_stdin(tmp_path, f"""
    if __name__ == "__main__":
        SubprocVecEnv([lambda: gym.make("CartPole-v1")] * 2, in_series=1, context={context!r})
    """)
    assert done.returncode == 1
    assert (f"RuntimeError: SubprocVecEnv cannot start workers with start method {context!r} from this script: "
            "its workers import the main script again, and it has no file to import ('<stdin>'") in done.stderr
    assert 'Save the script to a file and run that, or pass context="fork"' in done.stderr
    assert "EnvWorkerError" not in done.stderr and "FileNotFoundError" not in done.stderr


def test_a_script_piped_through_python_dash_runs_with_fork(tmp_path):
    done = run_from_stdin(tmp_path, """
    with SubprocVecEnv([lambda: gym.make("CartPole-v1")] * 2, in_series=1, context="fork") as venv:
        print(venv.reset().shape)
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "(2, 4)"


def docstring_example(obj) -> str:
    """The doctest example of ``obj``'s docstring as a script: the prompts taken off, the
    expected output dropped."""
    import doctest

    examples = doctest.DocTestParser().get_examples(obj.__doc__)
    return "".join(example.source for example in examples)


@pytest.mark.parametrize("name", ["SubprocVecEnv", "make_vec_env"])
def test_a_public_example_pasted_into_a_script_runs(tmp_path, name):
    """help(SubprocVecEnv)'s example, saved as a script and run with the default start
    method, does what it shows: no main-guard error (the example holds its guard)."""
    import vec_envs

    script = tmp_path / "example.py"
    script.write_text(docstring_example(getattr(vec_envs, name)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [REPO, os.environ.get("PYTHONPATH")])))
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=90, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip(), "the example printed nothing: its guarded part did not run"


def test_a_script_edited_while_it_runs_is_not_judged_by_its_new_lines(tmp_path):
    """A long run's script is often edited while it runs: the guard is judged by the lines
    that run, never by a file whose lines moved (here every line moves 40 lines down, out
    of the guard's span as the file now has it)."""
    done = run_script(tmp_path, """
    if __name__ == "__main__":
        source = open(__file__).read()
        open(__file__, "w").write("\\n" * 40 + source)
        with SubprocVecEnv([lambda: gym.make("CartPole-v1")] * 2, in_series=1, context="forkserver") as venv:
            print(venv.reset().shape)
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "(2, 4)"
