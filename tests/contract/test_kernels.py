"""The C kernels: built where a compiler is, reported by ``kernels.report()`` and
``python -m vec_envs``, all off with ``VEC_ENVS_KERNELS=0`` (their fallbacks give the
same results: the contract, fault and asynchronous suites run that way too in CI)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from vec_envs import kernels

REPO = Path(__file__).resolve().parents[2]
LOADED = ("import sys; from vec_envs.workers import env_slice; from vec_envs.subproc import lanes; "
          "from vec_envs.wrappers import running_mean_std as r; "
          "print(env_slice._kernel is None, lanes._kernel is None, r._rms_kernel is None)")


def _run(code: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120,
                          check=False, env={**os.environ, **env})


def test_every_kernel_is_built_and_runs_unless_switched_off():
    if not kernels.enabled():
        pytest.skip(f"{kernels.SWITCH}=0: the kernels are switched off here")
    report = kernels.report()
    assert sorted(report) == ["lanes", "rms", "step"]
    missing = [status["module"] for status in report.values() if not status["built"]]
    assert not missing, f"not built (no C compiler at install?): {missing}; every loop they hold runs in Python"
    assert all(status["running"] for status in report.values())


def test_one_switch_turns_every_kernel_off():
    off = _run(LOADED, **{kernels.SWITCH: "0"})
    assert off.returncode == 0, off.stderr
    assert off.stdout.split() == ["True", "True", "True"]
    report = _run("from vec_envs import kernels; print([s['running'] for s in kernels.report().values()])",
                  **{kernels.SWITCH: "off"})
    assert report.stdout.strip() == "[False, False, False]"


def test_python_m_vec_envs_says_which_kernels_are_built_and_which_run():
    done = subprocess.run([sys.executable, "-m", "vec_envs"], cwd=REPO, capture_output=True, text=True, timeout=120,
                          check=False, env={**os.environ, kernels.SWITCH: "0"})
    assert done.returncode == 0, done.stderr
    assert f"{kernels.SWITCH}=0" in done.stdout
    for name in ("step", "lanes", "rms"):
        line = next(line for line in done.stdout.splitlines() if line.strip().startswith(name))
        assert "switched off" in line or "not built" in line
    assert "SubprocVecEnv steps through" in done.stdout
