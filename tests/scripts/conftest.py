"""The package installed from a wheel, once per test session, for the tests of the console commands.

The wheel is built from a copy of the package sources (so the checkout gets no ``build/``
or ``*.egg-info``), without build isolation (no network), and installed with ``pip install
--no-deps --target``: its ``bin/`` holds the commands, and the dependencies come from the
current environment. The checkout is not on ``PYTHONPATH`` of the commands run from it.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SOURCES = ("setup.py", "pyproject.toml", "README.md", "LICENSE", "vec_envs", "wrappers", "vec_envs_commands.py")


def pip(*args: str, cwd: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "pip", *args, "--no-deps", "--no-index", "--quiet"], cwd=cwd,
                          capture_output=True, text=True, timeout=280, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.fixture(scope="session")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding the installed package, its ``bin/`` holding the commands."""
    source, wheels, target = (tmp_path_factory.mktemp(name) for name in ("source", "wheels", "target"))
    for name in SOURCES:
        copy = shutil.copytree if (REPO / name).is_dir() else shutil.copy
        copy(REPO / name, source / name, **({"ignore": shutil.ignore_patterns("__pycache__", "*.so")}
                                            if (REPO / name).is_dir() else {}))
    pip("wheel", ".", "--no-build-isolation", "-w", str(wheels), cwd=source)
    (wheel,) = wheels.glob("vec_envs-*.whl")
    pip("install", "--target", str(target), str(wheel), cwd=source)
    return target


def command_env(installed: Path, *before: Path) -> dict[str, str]:
    """The environment of a command run from the install (``before``: folders ahead of it on ``PYTHONPATH``)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = os.pathsep.join([*map(str, before), str(installed)])
    env["PATH"] = os.pathsep.join([str(installed / "bin"), env.get("PATH", "")])
    return env
