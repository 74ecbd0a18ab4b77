"""The machine a run measures on: one line describing it, and the check for the ``bench`` extra.

Example:
    >>> missing(["json", "no_such_module_here"])
    ['no_such_module_here']
"""
from __future__ import annotations

import importlib
import importlib.metadata
import os
import platform
import sys
from collections.abc import Sequence

from vec_envs.extras import install_hint

__all__ = ["machine_line", "missing", "require", "BENCH"]

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


def _version(name: str) -> str:
    """The installed version of distribution ``name``."""
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _cpu_model() -> str:
    """The CPU's model name."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            return next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or "unknown CPU"


def machine_line() -> str:
    """CPU model, cores, RAM, load, and the versions that matter."""
    import psutil

    from bench.harness import available_cores

    versions = ", ".join(f"{name} {_version(name)}"
                         for name in ("numpy", "gymnasium", "ale-py", "envpool", "stable_baselines3", "ray"))
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return (f"Machine: {_cpu_model()}, {available_cores()} cores available ({os.cpu_count()} logical / "
            f"{psutil.cpu_count(logical=False)} physical), {psutil.virtual_memory().total / 2**30:.1f} GiB RAM, "
            f"{platform.system()} {platform.release()}; Python {platform.python_version()}, {versions}; "
            f"load average at start {load}")
