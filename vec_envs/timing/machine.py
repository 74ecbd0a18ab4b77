"""The machine a measurement ran on, in one line: what every report of the timing harness
prints with its figures (CPU model, cores, memory, load, the versions that matter).

Example:
    >>> machine_line().startswith("Machine: ")
    True
    >>> available_cores() >= 1
    True
"""
from __future__ import annotations

import importlib.metadata
import os
import platform

from vec_envs.timing.process_tree import psutil_module

__all__ = ["available_cores", "machine_line"]

VERSIONS = ("numpy", "gymnasium", "ale-py", "envpool", "stable_baselines3", "ray")


def available_cores() -> int:
    """CPUs this process may run on (its affinity mask where the OS has one)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            return next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or "unknown CPU"


def machine_line() -> str:
    """CPU model, cores, RAM, load, and the versions that matter."""
    psutil = psutil_module()
    versions = ", ".join(f"{name} {_version(name)}" for name in VERSIONS)
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return (f"Machine: {_cpu_model()}, {available_cores()} cores available ({os.cpu_count()} logical / "
            f"{psutil.cpu_count(logical=False)} physical), {psutil.virtual_memory().total / 2**30:.1f} GiB RAM, "
            f"{platform.system()} {platform.release()}; Python {platform.python_version()}, {versions}; "
            f"load average at start {load}")
