"""What to install for an optional part of vec_envs: one wording for every missing-extra error.

The hint fits both a checkout (``pip install -e ".[sb3]"``) and an installed package
(``pip install "vec_envs[sb3]"``).

Example:
    >>> install_hint("sb3")
    'pip install -e ".[sb3]" (from a checkout) or pip install "vec_envs[sb3]"'
    >>> str(missing_extra("sb3", "to_sb3() needs Stable-Baselines3"))
    'to_sb3() needs Stable-Baselines3: pip install -e ".[sb3]" (from a checkout) or pip install "vec_envs[sb3]"'
"""
from __future__ import annotations

__all__ = ["install_hint", "missing_extra"]


def install_hint(extra: str) -> str:
    """The pip command that installs the extra ``extra`` (``atari``, ``ray``, ``video``, ``bench``, ``sb3``)."""
    return f'pip install -e ".[{extra}]" (from a checkout) or pip install "vec_envs[{extra}]"'


def missing_extra(extra: str, what: str) -> ImportError:
    """An ``ImportError`` saying ``what`` is missing, then how to install the extra that brings it."""
    return ImportError(f"{what}: {install_hint(extra)}")
