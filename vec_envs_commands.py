"""The console commands' entry points: each imports its command inside a Ctrl-C guard.

A command's module imports vec_envs, NumPy and gymnasium before its ``main()`` runs, and
``main()`` turns a Ctrl-C into one line and exit status 130 (``vec_envs.cli.args``). A
Ctrl-C during those imports would end in a ``KeyboardInterrupt`` traceback instead; these
entry points live outside the vec_envs package, so that importing this module imports
nothing but the standard library, and a Ctrl-C while the command is still starting is
one line and exit status 130 as well.
"""
from __future__ import annotations

import importlib
import os
import sys

__all__ = ["check_env", "convert_vecnormalize", "run_atari", "train_multiagent", "train_ppo", "tune"]

EXIT_INTERRUPTED = 130


def _run(module: str) -> int:
    """``vec_envs.cli.<module>.main()``'s exit status; 130 and one line for a Ctrl-C while importing it."""
    try:
        main = importlib.import_module(f"vec_envs.cli.{module}").main
    except KeyboardInterrupt:
        print(f"{os.path.basename(sys.argv[0]) or module}: interrupted: while starting, before any work",
              file=sys.stderr)
        return EXIT_INTERRUPTED
    status: int = main()
    return status


def run_atari() -> int:
    """``vec-envs-run-atari``."""
    return _run("run_atari")


def train_ppo() -> int:
    """``vec-envs-train-ppo``."""
    return _run("train_ppo")


def convert_vecnormalize() -> int:
    """``vec-envs-convert-vecnormalize``."""
    return _run("convert_vecnormalize")


def train_multiagent() -> int:
    """``vec-envs-train-multiagent``."""
    return _run("train_multiagent")


def check_env() -> int:
    """``vec-envs-check``."""
    return _run("check_env")


def tune() -> int:
    """``vec-envs-tune``."""
    return _run("tune")
