"""Types of the C kernel ``_step_kernel.c`` (EnvSlice's step loop, and the infos of envs with nothing to say)."""
from collections.abc import Callable
from typing import Any

import numpy as np

from vec_envs.types import Info

def step_quiet(rows: tuple, actions: Any, offset: int, start: int, stop: int, infos: list[Info],
               on_done: Callable[[int], None] | Any | None = None, said: list[int] | None = None,
               ) -> tuple[int, Any, BaseException | None, bool, Info | None]: ...
def ended_infos(n: int, ended: np.ndarray, ids: np.ndarray, rows: Any, truncated: np.ndarray,
                reset_infos: list[Info] | None) -> list[Info]: ...
