"""Types of the C kernel ``_step_kernel.c`` (EnvSlice's step loop for the envs with nothing to say)."""
from typing import Any

from vec_envs.types import Info

def step_quiet(rows: tuple, actions: Any, offset: int, start: int, stop: int,
               infos: list[Info], marks: tuple | None = None) -> tuple[int, Any, BaseException | None, bool]: ...
