"""One line describing the machine a run measured on."""
from __future__ import annotations

import importlib.metadata
import os
import platform

import psutil

from bench.ceiling import available_cores

__all__ = ["machine_line"]


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
    versions = ", ".join(f"{name} {_version(name)}"
                         for name in ("numpy", "gymnasium", "ale-py", "envpool", "stable_baselines3", "ray"))
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return (f"Machine: {_cpu_model()}, {available_cores()} cores available ({os.cpu_count()} logical / "
            f"{psutil.cpu_count(logical=False)} physical), {psutil.virtual_memory().total / 2**30:.1f} GiB RAM, "
            f"{platform.system()} {platform.release()}; Python {platform.python_version()}, {versions}; "
            f"load average at start {load}")
