"""setup.py's build of the C kernels: flags chosen per compiler family, and a warning that
names each kernel a compiler could not build, what runs instead and how to get it.

Each test builds the kernels in place in a copy of the sources, through a small shell
script standing in for the C compiler (``CC``): one that logs its arguments and calls the
real compiler, one that refuses gcc's and clang's optimization flags, one that always fails.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # runs console commands or scripts in processes of their own

REPO = Path(__file__).resolve().parents[2]
SOURCES = ("setup.py", "pyproject.toml", "README.md", "LICENSE", "vec_envs", "wrappers")
KERNELS = ("vec_envs.wrappers._rms_kernel", "vec_envs.workers._step_kernel", "vec_envs.subproc._lanes_kernel")
LOGGING_CC = '#!/bin/sh\necho "$@" >> "{log}"\nexec {cc} "$@"\n'
PICKY_CC = ('#!/bin/sh\nfor arg; do case "$arg" in -ffp-contract=*|-fno-math-errno) '
            'echo "picky-cc: unknown option $arg" >&2; exit 1;; esac; done\nexec {cc} "$@"\n')
FAILING_CC = '#!/bin/sh\necho "failing-cc: cannot compile" >&2\nexit 1\n'

needs_cc = pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler (cc) on this machine")


def sources_copy(folder: Path) -> Path:
    """The package sources, without built kernels or caches, in ``folder/src``."""
    src = folder / "src"
    src.mkdir()
    for name in SOURCES:
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, src / name, symlinks=True,
                            ignore=shutil.ignore_patterns("__pycache__", "*.so"))
        else:
            shutil.copy(REPO / name, src / name)
    return src


def compiler(folder: Path, script: str) -> Path:
    """An executable shell script standing in for the C compiler."""
    path = folder / "cc.sh"
    path.write_text(script.format(log=folder / "cc.log", cc=shutil.which("cc") or "cc"))
    path.chmod(0o755)
    return path


def build(src: Path, cc: Path) -> subprocess.CompletedProcess[str]:
    """``setup.py build_ext --inplace`` with ``cc`` as the C compiler."""
    env = {**os.environ, "CC": str(cc)}
    return subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace"], cwd=src, env=env,
                          capture_output=True, text=True, timeout=240, check=False)


def built(src: Path) -> list[str]:
    """The kernels found built in ``src``."""
    return [k for k in KERNELS if list(src.glob(k.replace(".", "/") + ".*.so"))]


def compile_lines(log: Path, source: str) -> list[str]:
    """The logged compiler calls that compiled ``source``."""
    lines = log.read_text().splitlines()
    return [line for line in lines if " -c " in line and line.split(" -c ")[1].startswith(source)]


@needs_cc
@pytest.mark.timeout(300)
def test_gcc_and_clang_get_the_kernels_flags(tmp_path):
    src = sources_copy(tmp_path)
    done = build(src, compiler(tmp_path, LOGGING_CC))
    assert done.returncode == 0, done.stderr
    assert built(src) == list(KERNELS)
    (rms,) = compile_lines(tmp_path / "cc.log", "wrappers/_rms_kernel.c")
    assert rms.endswith("-O3 -fno-math-errno -ffp-contract=off"), rms
    (step,) = compile_lines(tmp_path / "cc.log", "vec_envs/workers/_step_kernel.c")
    assert step.endswith("-O2"), step
    assert "WARNING" not in done.stderr


@needs_cc
@pytest.mark.timeout(300)
def test_a_compiler_that_refuses_those_flags_builds_the_kernels_without_them(tmp_path):
    src = sources_copy(tmp_path)
    done = build(src, compiler(tmp_path, PICKY_CC))
    assert done.returncode == 0, done.stderr
    assert built(src) == list(KERNELS)
    assert "WARNING" not in done.stderr


@pytest.mark.timeout(300)
def test_a_failing_compiler_leaves_a_working_install_that_names_each_missing_kernel(tmp_path):
    src = sources_copy(tmp_path)
    done = build(src, compiler(tmp_path, FAILING_CC))
    assert done.returncode == 0, done.stderr
    assert built(src) == []
    warning = done.stderr[done.stderr.index("WARNING: vec_envs installs without some of its optional C kernels"):]
    for kernel, fallback in zip(KERNELS, ("use NumPy", "steps each env in Python", "reads its lanes with NumPy"),
                                strict=True):
        assert f"- {kernel} was not built (compiling with {tmp_path / 'cc.sh'} failed" in warning, warning
        assert fallback in warning, warning
    assert "install a C compiler" in warning
    assert "then reinstall vec_envs" in warning
    report = subprocess.run([sys.executable, "-m", "vec_envs"], cwd=tmp_path, capture_output=True, text=True,
                            timeout=120, check=False, env={**os.environ, "PYTHONPATH": str(src)})
    assert report.returncode == 0, report.stderr
    assert report.stdout.count("not built") == len(KERNELS), report.stdout
    assert_first_use_warns_once_per_kernel(tmp_path, src)


USE_EVERY_KERNEL = """
import gymnasium as gym
import numpy as np
import vec_envs, vec_envs.wrappers
for context in ("forkserver", "spawn"):  # workers import vec_envs anew
    venv = vec_envs.SubprocVecEnv([lambda: gym.make("CartPole-v1")] * 2, context=context)
    venv.reset(); venv.step(np.zeros(2, np.int64)); venv.close()
print("stepped")
"""


def assert_first_use_warns_once_per_kernel(tmp_path: Path, src: Path) -> None:
    """pip hides the build's warning: vec_envs names each missing kernel once when it first
    loads it (its workers stay quiet), and not at all once the switch chooses the fallbacks."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    env.pop("VEC_ENVS_KERNELS", None)
    used = subprocess.run([sys.executable, "-c", USE_EVERY_KERNEL], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, check=False, env=env)
    assert used.returncode == 0 and "stepped" in used.stdout, used.stderr
    for kernel in KERNELS:
        assert used.stderr.count(f"RuntimeWarning: vec_envs: the C kernel {kernel} is not built") == 1, used.stderr
    assert used.stderr.count("install a C compiler and Python's headers, then reinstall vec_envs") == len(KERNELS)
    switched_off = subprocess.run([sys.executable, "-c", "import vec_envs, vec_envs.wrappers"], cwd=tmp_path,
                                  capture_output=True, text=True, timeout=120, check=False,
                                  env={**env, "VEC_ENVS_KERNELS": "0"})
    assert switched_off.returncode == 0 and switched_off.stderr == "", switched_off.stderr
