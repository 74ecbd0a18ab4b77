"""The check for the ``bench`` extra (the machine's line is ``vec_envs.timing.machine``'s).

Example:
    >>> missing(["json", "no_such_module_here"])
    ['no_such_module_here']
"""
from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

from vec_envs.extras import install_hint

__all__ = ["missing", "require", "BENCH"]

BENCH = ("psutil", "matplotlib")


def missing(modules: Sequence[str]) -> list[str]:
    """The ``modules`` that cannot be imported here."""
    absent = []
    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError:
            absent.append(name)
    return absent


def require(command: str, modules: Sequence[str] = BENCH, extra: str = "bench") -> None:
    """Exit with one line on stderr (status 1) when any of ``modules`` is not installed."""
    absent = missing(modules)
    if absent:
        print(f"{command} needs {' and '.join(absent)}: {install_hint(extra)}", file=sys.stderr)
        raise SystemExit(1)
