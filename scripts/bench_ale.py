"""ALEVecEnv on workload W4, side by side with gymnasium's SyncVectorEnv, our SubprocVecEnv
and ale-py's bare engine.

W4 is ALE/Breakout-v5 (sticky actions 0.25) with gymnasium's AtariPreprocessing (no-op
starts, frame skip 4 with max-pooling, 84x84 gray) and a frame stack of 4, x 8 envs.
ALEVecEnv runs the same preprocessing in ale-py's C++ engine (``episode_life=False``,
``fire_reset=False`` as AtariPreprocessing). A preset of ``scripts/benchmark.py``: the
same cells (a fresh process each, build + reset, warm-up, one timed window of
pre-sampled actions), repeats round-robin over the methods; the table shows medians, the
ratio to SyncVectorEnv, and env steps per CPU second of the cell's whole process tree
(threads and workers), which the load of a shared machine skews far less.

Usage:
    python scripts/bench_ale.py                          # 3 repeats of 5 s windows
    python scripts/bench_ale.py --repeats 1 --window 1   # a quick look
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parent
for _path in (str(SCRIPTS.parent), str(SCRIPTS)):
    if _path not in sys.path:
        sys.path.insert(0, _path)

from bench.args import parse  # noqa: E402
from bench.extras import require  # noqa: E402

#: key -> (benchmark.py's method, label in this table)
METHODS = {
    "sync": ("gym-sync", "gymnasium SyncVectorEnv + in-script stack"),
    "subproc": ("subproc", "SubprocVecEnv() + VecFrameStack"),
    "ale": ("ale", "ALEVecEnv(frame_stack=4), step()"),
    "ale-async4": ("ale-async", "ALEVecEnv(batch_size=4), recv/send"),
    "ale-async2": ("ale-async-4", "ALEVecEnv(batch_size=2), recv/send"),
    "engine": ("ale-engine", "ale-py AtariVectorEnv (raw engine)"),
}
CELL_TIMEOUT_S = 300.0


@dataclass
class Args:
    """The command line of ``bench_ale.py``."""

    methods: str = field(default=",".join(METHODS), metadata={"help": f"comma-separated, of {list(METHODS)}"})
    repeats: int = field(default=3, metadata={"help": "cells per method, round-robin"})
    window: float = field(default=5.0, metadata={"help": "seconds of each timed window"})
    warmup: float = field(default=1.0, metadata={"help": "seconds stepped before the window"})
    seed: int = field(default=0, metadata={"help": "seeds the envs and the pre-sampled actions"})


def _check(args: Args) -> str | None:
    """What is wrong with ``args`` (None: nothing)."""
    unknown = sorted(set(args.methods.split(",")) - set(METHODS))
    if unknown:
        return f"--methods: unknown {unknown}; expected some of {list(METHODS)}"
    if args.repeats < 1 or args.window <= 0 or args.warmup < 0:
        return "--repeats must be >= 1, --window > 0, --warmup >= 0"
    return None


def measure(args: Args) -> dict[str, list[dict[str, float]]]:
    """Every cell's steps/s and CPU %, by method key; exits with the error of a cell that failed."""
    from bench.cell import CellSpec
    from bench.methods import METHODS as BENCHMARK_METHODS
    from bench.methods import unavailable
    from bench.tree import run_cell_process
    from bench.workloads import WORKLOADS

    keys = args.methods.split(",")
    for key in keys:
        why = unavailable(BENCHMARK_METHODS[METHODS[key][0]], WORKLOADS["W4"])
        if why:
            raise SystemExit(f"bench_ale.py: {key}: {why}")
    cells: dict[str, list[dict[str, float]]] = {key: [] for key in keys}
    for repeat in range(args.repeats):
        for key in keys[repeat % len(keys):] + keys[:repeat % len(keys)]:
            spec = CellSpec("W4", METHODS[key][0], repeat, args.seed, args.window, args.warmup, handshake=True)
            record = run_cell_process(spec, CELL_TIMEOUT_S)
            if "error" in record:
                raise SystemExit(f"bench_ale.py: {key} failed: {record['error']}")
            cells[key].append(record)
            print(f"repeat {repeat + 1}/{args.repeats} {key}: {record['steps_per_s']:.0f} steps/s", file=sys.stderr)
    return cells


def report(cells: dict[str, list[dict[str, float]]], args: Args) -> None:
    """One row per method: median steps/s, every run, the ratio to SyncVectorEnv, steps per CPU s."""
    from bench.summary import summarize
    from bench.table import markdown_table
    from bench.workloads import WORKLOADS

    sums = summarize([{"workload": "W4", "method": key, **cell} for key, runs in cells.items() for cell in runs])
    sync = sums["W4", "sync"].rate if "sync" in cells else None
    rows = [[METHODS[key][1], f"{sums['W4', key].rate:.0f}", ", ".join(f"{c['steps_per_s']:.0f}" for c in runs),
             f"{sums['W4', key].rate / sync:.2f}" if sync else "-", f"{sums['W4', key].per_cpu_s:.0f}"]
            for key, runs in cells.items()]
    print(f"\nW4: {WORKLOADS['W4'].title}, {args.repeats} x {args.window:g} s windows\n")
    header = ["method", "env steps/s (median)", "runs", "x SyncVectorEnv", "env steps per CPU s"]
    print("\n".join(markdown_table(header, rows, "lrlrr")))


if __name__ == "__main__":
    arguments = parse(Args, None, __doc__.split("\n\n")[0], _check)
    require("bench_ale.py")
    require("bench_ale.py", ["ale_py"], "atari")
    report(measure(arguments), arguments)
