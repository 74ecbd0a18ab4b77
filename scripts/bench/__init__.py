"""The benchmark behind ``scripts/benchmark.py``, over the timing harness of ``vec_envs.timing``
(the timing loops, one cell per fresh process, the CPU of its process tree), one module per concern:

- ``envs``: the envs stepped and the workloads made of them (W1..W6, M1..M5, I1, MA).
- ``contenders``: every contender behind the one stepping interface, and how each is built.
- ``harness``: a cell of one method on one workload, and the machine ceiling.
- ``tree``: the parent's side of the cells: run them, keep their workload, method and repeat.
- ``suite``: the workloads command and its presets (ale, infos, autoreset, multiagent, fairness).
- ``report``: medians, targets and the Markdown report; ``plot``: its PNGs.
- ``machine``: the check for the ``bench`` extra.
- ``micro``: the paired measurements (wrappers, interop, Ray).
- ``overhead``: where a batch's CPU goes (the driving thread, the workers) and the cost model.
- ``step_path``: the files and functions one call passes through.

``python scripts/benchmark.py`` puts ``scripts/`` first on ``sys.path``, so this package
imports as ``bench``.
"""
from __future__ import annotations

from pathlib import Path

SCRIPTS = Path(__file__).resolve().parents[1]
