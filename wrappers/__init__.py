"""wrappers: VecEnv wrappers (one per module) and the Atari preprocessing."""
from __future__ import annotations

__all__: list[str] = []
