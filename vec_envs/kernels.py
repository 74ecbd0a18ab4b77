"""The optional C kernels: which are built, which run, and one switch that turns them all off.

Three loops have a C version, built by the install where a C compiler is found
(``setup.py``), and a NumPy / Python version that gives the same bits where it is not:

- ``vec_envs.workers._step_kernel``: a slice's step loop (every backend), and the
  infos of envs that had nothing to say;
- ``vec_envs.subproc._lanes_kernel``: the subprocess transport's look at its
  lanes (both sides) and a worker's answers;
- ``vec_envs.wrappers._rms_kernel``: ``RunningMeanStd`` over uint8 images (VecNormalize).

Setting the environment variable ``VEC_ENVS_KERNELS=0`` before the first import turns
every kernel off (the fallbacks run, as on a machine without a compiler). ``report()``
and ``python -m vec_envs`` say which kernels are built and which run. A kernel that is
not built (pip hides the install's warning) is named in a ``RuntimeWarning`` the first
time it is loaded in a process tree (the workers stay quiet), with what runs instead and how to build it;
``VEC_ENVS_KERNELS=0`` chooses the fallbacks and silences it.

Example:
    >>> sorted(KERNELS)
    ['lanes', 'rms', 'step']
    >>> status = report()
    >>> set(status["step"]) == {"module", "built", "running"}
    True
"""
from __future__ import annotations

import importlib
import importlib.util
import os
import warnings
from types import ModuleType

__all__ = ["KERNELS", "FALLBACKS", "SWITCH", "enabled", "load", "report"]

#: the environment variable that turns every C kernel off ("0")
SWITCH = "VEC_ENVS_KERNELS"
#: short name -> the module the C kernel builds
KERNELS = {
    "step": "vec_envs.workers._step_kernel",
    "lanes": "vec_envs.subproc._lanes_kernel",
    "rms": "vec_envs.wrappers._rms_kernel",
}
_WARNED = "_VEC_ENVS_KERNELS_WARNED"  # the kernels already named in a warning in this process tree
#: short name -> what runs where the kernel is not built
FALLBACKS = {
    "step": "every backend steps each env in Python (same results, more CPU per step)",
    "lanes": "SubprocVecEnv reads its lanes with NumPy (same results, more CPU per step)",
    "rms": "VecNormalize's running statistics over uint8 images use NumPy (same results, slower)",
}


def enabled() -> bool:
    """False when ``VEC_ENVS_KERNELS`` is ``0`` (or ``off``, ``false``, ``no``): every fallback runs."""
    return os.environ.get(SWITCH, "1").strip().lower() not in ("0", "off", "false", "no")


def load(name: str) -> ModuleType | None:
    """The kernel ``name`` (a key of ``KERNELS``), or None where it is not built or switched off."""
    if not enabled():
        return None
    try:
        return importlib.import_module(KERNELS[name])
    except ImportError:
        if not _built(KERNELS[name]):
            _warn_not_built(name)
        return None


def _warn_not_built(name: str) -> None:
    """Warn once per kernel in a process tree: the processes it starts (workers) inherit the mark."""
    warned = os.environ.get(_WARNED, "").split(",")
    if name in warned:
        return
    os.environ[_WARNED] = ",".join(filter(None, [*warned, name]))
    warnings.warn(f"vec_envs: the C kernel {KERNELS[name]} is not built (no C compiler at install time?); "
                  f"without it {FALLBACKS[name]}. To build it, install a C compiler and Python's headers, then "
                  f"reinstall vec_envs (pip install --force-reinstall --no-deps vec_envs; in a checkout: pip "
                  f"install -e .). {SWITCH}=0 chooses the fallbacks and silences this.", RuntimeWarning, stacklevel=3)


def _built(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # its package is not installed (the wrappers, in a trimmed install)
        return False


def report() -> dict[str, dict[str, object]]:
    """``{name: {"module", "built", "running"}}`` for every kernel."""
    return {name: {"module": module, "built": _built(module), "running": _built(module) and enabled()}
            for name, module in KERNELS.items()}
