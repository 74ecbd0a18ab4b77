"""Benchmark vec_envs' backends against gymnasium's, SB3's and EnvPool's (when installed).

Each cell (workload x method x repeat) runs in a fresh process: it builds and resets the
batch, warms up, then steps it for a timed window with pre-sampled actions and reports
env steps per second (summed over the batch). The parent samples the cell's whole
process tree (CPU, peak memory). Lock-step methods call ``step``; recv/send methods
loop ``recv()`` + ``send(actions[ids], ids)``. The machine ceiling is one raw env loop
per available core, all at once. The harness lives in ``scripts/bench/``.

Usage:
    python scripts/benchmark.py                      # the 2-core workloads W1..W5, 3 repeats of 5 s
    python scripts/benchmark.py --quick              # a short run
    python scripts/benchmark.py --workloads M        # the many-core workloads M1, M3, M4, M5
    python scripts/benchmark.py --workloads W1,W5 --methods ceiling,dummy,subproc,subproc-async,gym-sync
    python scripts/benchmark.py --list               # workloads and method keys
"""
from __future__ import annotations

import sys
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parent
for _path in (str(SCRIPTS.parent), str(SCRIPTS)):
    if _path not in sys.path:
        sys.path.insert(0, _path)

from bench.extras import require  # noqa: E402

if __name__ == "__main__":
    require("benchmark.py")
    from bench.cli import main

    sys.exit(main())
