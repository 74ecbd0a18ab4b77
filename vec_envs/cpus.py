"""How many CPUs this process may use: the one count ``in_series="auto"`` and spinning use.

In order: the ``VEC_ENVS_CPUS`` environment variable (an int >= 1) if set; else the CPUs
this process may run on (``os.sched_getaffinity``), capped by the container's CPU quota
(cgroup v2 ``cpu.max``, or cgroup v1 ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us``),
rounded up.

Example:
    >>> available_cpus(environ={"VEC_ENVS_CPUS": "3"})
    3
    >>> available_cpus(environ={}) >= 1
    True
"""
from __future__ import annotations

import math
import os
from collections.abc import Mapping
from pathlib import Path

__all__ = ["CPUS_VARIABLE", "available_cpus", "cgroup_cpu_quota"]

CPUS_VARIABLE = "VEC_ENVS_CPUS"
CGROUP_ROOT = Path("/sys/fs/cgroup")


def available_cpus(environ: Mapping[str, str] | None = None, cgroup_root: Path = CGROUP_ROOT) -> int:
    """CPUs this process may use (see the module's docstring)."""
    environ = os.environ if environ is None else environ
    override = environ.get(CPUS_VARIABLE)
    if override is not None:
        return _parse_override(override)
    cpus = _affinity()
    quota = cgroup_cpu_quota(cgroup_root)
    return cpus if quota is None else max(1, min(cpus, quota))


def _parse_override(value: str) -> int:
    try:
        cpus = int(value)
    except ValueError:
        cpus = 0
    if cpus < 1:
        raise ValueError(f"{CPUS_VARIABLE} must be an int >= 1 (the CPUs vec_envs may use), received {value!r}")
    return cpus


def _affinity() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def cgroup_cpu_quota(cgroup_root: Path = CGROUP_ROOT) -> int | None:
    """The container's CPU quota in CPUs, rounded up (None: no quota, or no cgroup files)."""
    v2 = _read(cgroup_root / "cpu.max")
    if v2 is not None:
        quota, _, period = v2.partition(" ")
        return _cpus(quota, period or "100000")
    quota_v1 = _read(cgroup_root / "cpu" / "cpu.cfs_quota_us") or _read(cgroup_root / "cpu.cfs_quota_us")
    period_v1 = _read(cgroup_root / "cpu" / "cpu.cfs_period_us") or _read(cgroup_root / "cpu.cfs_period_us")
    if quota_v1 is None or period_v1 is None:
        return None
    return _cpus(quota_v1, period_v1)


def _cpus(quota: str, period: str) -> int | None:
    """``quota / period`` rounded up; None for "max" or -1 (no limit) or what does not parse."""
    try:
        quota_us, period_us = int(quota), int(period)
    except ValueError:
        return None  # "max": no limit
    if quota_us <= 0 or period_us <= 0:
        return None
    return max(1, math.ceil(quota_us / period_us))


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None
