"""``python -m vec_envs``: what this install of vec_envs runs with.

Prints the version, the Python and platform, the CPUs a VecEnv plans for, which C
kernels are built and which run (``VEC_ENVS_KERNELS=0`` turns them off), and which way
SubprocVecEnv's workers share the steps (the env lanes in shared memory where the CPU
keeps stores in order, the pipes elsewhere).

Example:
    >>> "kernels" in describe()
    True
"""
from __future__ import annotations

import os
import platform
import sys

from vec_envs import __version__, kernels
from vec_envs.cpus import available_cpus
from vec_envs.subproc.subproc_vec_env import describe_transport

__all__ = ["describe", "main"]


def describe() -> str:
    """The report ``python -m vec_envs`` prints."""
    lines = [f"vec_envs {__version__} on Python {platform.python_version()}, {platform.system()} "
             f"{platform.machine()}",
             f"CPUs a VecEnv plans for: {available_cpus()} (VEC_ENVS_CPUS overrides)",
             f"C kernels ({kernels.SWITCH}={os.environ.get(kernels.SWITCH, 'unset')}):"]
    for name, status in kernels.report().items():
        state = "running" if status["running"] else "built, switched off" if status["built"] else "not built"
        lines.append(f"  {name:6} {state:20} {status['module']}")
    lines.append(describe_transport())
    return "\n".join(lines)


def main() -> int:
    print(describe())
    return 0


if __name__ == "__main__":
    sys.exit(main())
