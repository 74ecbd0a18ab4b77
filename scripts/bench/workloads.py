"""The workloads of ``scripts/benchmark.py``: which env, how many copies, what on top.

W1..W5 are sized for a laptop (8 or 64 envs); M1, M3, M4, M5 for a 16-64 core machine
(the many-core targets), on the same envs.

Example:
    >>> WORKLOADS["M4"].num_envs, WORKLOADS["M4"].frame_stack
    (32, 4)
    >>> WORKLOADS["W4"].title
    'ALE/Breakout-v5 (frameskip 1) + AtariPreprocessing 84x84 gray skip 4 + frame stack 4 x 8'
"""
from __future__ import annotations

from dataclasses import dataclass

from bench.envs import ENVS

__all__ = ["Workload", "WORKLOADS"]


@dataclass(frozen=True)
class Workload:
    """``num_envs`` copies of one env of ``bench.envs``.

    Attributes:
        key: short name on the command line (``W1`` .. ``W5``, ``M1`` .. ``M5``).
        env: the env's key in ``bench.envs.ENVS``.
        num_envs: envs in the batch.
        frame_stack: frames stacked over the batch after stepping (0: none).
    """

    key: str
    env: str
    num_envs: int
    frame_stack: int = 0

    @property
    def title(self) -> str:
        """What the table heading says."""
        stack = f" + frame stack {self.frame_stack}" if self.frame_stack else ""
        return f"{ENVS[self.env]}{stack} x {self.num_envs}"

    @property
    def many_core(self) -> bool:
        """Sized for a 16-64 core machine (the M workloads)."""
        return self.key.startswith("M")


WORKLOADS: dict[str, Workload] = {w.key: w for w in [
    Workload("W1", "cartpole", 8),
    Workload("W2", "cartpole", 64),
    Workload("W3", "pong", 8),
    Workload("W4", "breakout", 8, frame_stack=4),
    Workload("W5", "busy", 8),
    Workload("M1", "cartpole", 256),
    Workload("M3", "pong", 32),
    Workload("M4", "breakout", 32, frame_stack=4),
    Workload("M5", "busy", 32),
]}
