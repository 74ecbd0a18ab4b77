"""The benchmark harness behind ``scripts/benchmark.py``, one module per concern:

- ``envs``: the envs stepped and the workloads made of them (W1..W5, M1..M5).
- ``contenders``: every contender behind one stepping interface, and how each is built.
- ``harness``: the measurement, once: timing loops, one cell in a fresh process, the
  machine ceiling.
- ``tree``: the parent's side of a cell: its process tree's CPU and memory, timeouts.
- ``report``: medians, targets, Markdown tables and the chart.
- ``machine``: the machine line and the check for the ``bench`` extra.
- ``micro``: the focused measurements (ALEVecEnv on W4, wrappers, interop, Ray, agent pauses).
- ``overhead``: where a batch's CPU goes (the driving thread, the workers) and the cost model.

``python scripts/benchmark.py`` puts ``scripts/`` first on ``sys.path``, so this package
imports as ``bench``.
"""
from __future__ import annotations

from pathlib import Path

SCRIPTS = Path(__file__).resolve().parents[1]
