"""Infos in both layouts: a list of per-env dicts (ours, SB3's) and gymnasium's dict of arrays.

gymnasium's vector API keeps one array per info key with a boolean mask ``_key`` saying
which envs set it (nested dicts are nested the same way). ``split_infos`` turns that back
into one dict per env; the other direction is gymnasium's own ``VectorEnv._add_info``.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from vec_envs.types import Info

__all__ = ["split_infos"]


def split_infos(infos: dict[str, Any], num_envs: int) -> list[Info]:
    """gymnasium's batched ``infos`` as a list of ``num_envs`` dicts.

    A key reaches env i when its mask ``_key`` is True at i (every env when the key has
    no mask); nested dicts are split the same way.

    Example:
        >>> infos = {"lives": np.array([3, 0]), "_lives": np.array([True, False])}
        >>> split_infos(infos, 2)
        [{'lives': np.int64(3)}, {}]
    """
    out: list[Info] = [{} for _ in range(num_envs)]
    for key, value in infos.items():
        if key.startswith("_") and key[1:] in infos:
            continue  # a mask, read with its key
        mask = infos.get(f"_{key}")
        envs = range(num_envs) if mask is None else np.flatnonzero(mask)
        rows = split_infos(value, num_envs) if isinstance(value, dict) else value
        for i in envs:
            out[int(i)][key] = rows[int(i)]
    return out
