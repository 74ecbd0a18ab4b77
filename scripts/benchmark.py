"""Benchmark vec_envs' backends against gymnasium's, SB3's and EnvPool's (where installed).

    python scripts/benchmark.py workloads                 # W1..W6: every method, 3 repeats of 5 s
    python scripts/benchmark.py workloads --quick         # a short run
    python scripts/benchmark.py workloads --workloads M   # the many-core workloads
    python scripts/benchmark.py ale                       # ALEVecEnv on W4, side by side
    python scripts/benchmark.py infos                     # what an info every step costs each backend
    python scripts/benchmark.py autoreset                 # next-step autoreset against same-step
    python scripts/benchmark.py multiagent                # agent rows of simple_spread_v3 against SuperSuit
    python scripts/benchmark.py fairness                  # steps per env under recv/send, by in_series
    python scripts/benchmark.py overhead                  # where a batch's CPU goes; the cost model
    python scripts/benchmark.py wrappers --env pong       # what the wrapper stack adds to a step
    python scripts/benchmark.py interop --clock cpu       # what each interop adapter adds
    python scripts/benchmark.py ray                       # RayVecEnv against SubprocVecEnv
    python scripts/benchmark.py step-path                 # the files and functions one step passes through
    python scripts/benchmark.py plot RUN_DIR --out DIR    # a workloads run's cells as PNGs (the docs' plots)
    python scripts/benchmark.py COMMAND --help            # every option, with its default

The harness lives in ``scripts/bench/`` over ``vec_envs.timing`` (the timing loops and one
cell per process, shared with ``vec_envs.tune``); results and their commands in
``scripts/BENCHMARKS.md``.
"""
from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

from bench.machine import require
from bench.micro import InteropArgs, RayArgs, WrappersArgs, run_interop, run_ray, run_wrappers
from bench.overhead import OverheadArgs, run_overhead
from bench.plot import PlotArgs, run_plot
from bench.step_path import StepPathArgs, run_step_path
from bench.suite import (
    AleArgs,
    AutoresetArgs,
    FairnessArgs,
    InfosArgs,
    MultiagentArgs,
    PresetArgs,
    WorkloadsArgs,
    run_workloads,
)

from vec_envs.cli.args import parse_subcommands

COMMANDS: dict[str, tuple[type[Any], Callable[[Any], int] | None]] = {  # None: a workloads run (main runs it)
    "workloads": (WorkloadsArgs, None),
    "ale": (AleArgs, None),
    "infos": (InfosArgs, None),
    "autoreset": (AutoresetArgs, None),
    "multiagent": (MultiagentArgs, None),
    "fairness": (FairnessArgs, None),
    "overhead": (OverheadArgs, run_overhead),
    "wrappers": (WrappersArgs, run_wrappers),
    "interop": (InteropArgs, run_interop),
    "ray": (RayArgs, run_ray),
    "step-path": (StepPathArgs, run_step_path),
    "plot": (PlotArgs, run_plot),
}
NEEDS = {  # command -> (modules, extra) beyond the bench extra
    "ale": (["ale_py"], "atari"),
    "autoreset": (["ale_py"], "atari"),
    "ray": (["ray"], "ray"),
    "interop": (["stable_baselines3"], "sb3"),
    "multiagent": (["pettingzoo", "mpe2"], "multiagent"),
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run one subcommand; returns its exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    name, args = parse_subcommands({key: cls for key, (cls, _) in COMMANDS.items()}, argv,
                                   __doc__.split("\n\n")[0], prog="benchmark.py")
    require(f"benchmark.py {name}")
    if name in NEEDS:
        require(f"benchmark.py {name}", *NEEDS[name])
    if name == "wrappers" and args.env == "pong":
        require("benchmark.py wrappers --env pong", ["ale_py"], "atari")
    run = COMMANDS[name][1]
    if run is not None:
        return run(args)
    command = " ".join(["python scripts/benchmark.py", *argv])  # the report quotes its command line
    return run_workloads(args.as_workloads() if isinstance(args, PresetArgs) else args, command)


if __name__ == "__main__":
    raise SystemExit(main())
