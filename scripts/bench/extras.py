"""The ``bench`` extra: what the benchmark needs beyond vec_envs, and one line when it is missing.

Example:
    >>> missing(["json", "no_such_module_here"])
    ['no_such_module_here']
"""
from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

__all__ = ["missing", "require"]

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


def require(script: str, modules: Sequence[str] = BENCH, extra: str = "bench") -> None:
    """Exit with one line on stderr (status 1) when any of ``modules`` is not installed."""
    absent = missing(modules)
    if absent:
        print(f"{script} needs {' and '.join(absent)}: pip install -e \".[{extra}]\"", file=sys.stderr)
        raise SystemExit(1)
