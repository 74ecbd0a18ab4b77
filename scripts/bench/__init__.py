"""The benchmark harness behind ``scripts/benchmark.py`` and ``scripts/bench_*.py``.

One module per concern, in the order a run uses them:

- ``envs``, ``workloads``: the envs stepped and the batches made of them (W1..W5, M1..M5).
- ``steppers``, ``methods``: every contender behind one stepping interface, and how each
  is built (ours, ALEVecEnv, gymnasium, SB3, EnvPool; lock-step and recv/send).
- ``timing``: the timing loops (throughput window, per-call latency), shared by every script.
- ``ceiling``: the machine ceiling, one raw env loop per core running at once.
- ``cell``: one method on one workload, measured in a fresh process.
- ``tree``: the parent's side of a cell: its process tree's CPU and memory, timeouts.
- ``machine``: one line describing the machine and the versions measured.
- ``summary``, ``targets``, ``table``, ``report``, ``plot``: from cell records to the
  Markdown report and its chart.
- ``args``, ``extras``, ``cli``: command lines (an ``Args`` dataclass per script) and the
  check for the ``bench`` extra.

The scripts put ``scripts/`` on ``sys.path``, so this package imports as ``bench``.
"""
from __future__ import annotations

from pathlib import Path

SCRIPTS = Path(__file__).resolve().parents[1]
REPO = SCRIPTS.parent
