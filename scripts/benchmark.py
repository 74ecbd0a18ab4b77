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

from bench.micro import (
    InteropArgs,
    RayArgs,
    StepPathArgs,
    WrappersArgs,
    run_interop,
    run_ray,
    run_step_path,
    run_wrappers,
)
from bench.overhead import OverheadArgs, run_overhead
from bench.plot import PlotArgs, run_plot
from bench.suite import PRESETS, WorkloadsArgs, run_workloads

from vec_envs.cli.args import parse_subcommands, require_extra, run_command

COMMANDS: dict[str, tuple[type[Any], Callable[[Any], int] | None]] = {  # None: a workloads run (main runs it)
    "workloads": (WorkloadsArgs, None),
    **{name: (args, None) for name, args in PRESETS.items()},
    "overhead": (OverheadArgs, run_overhead),
    "wrappers": (WrappersArgs, run_wrappers),
    "interop": (InteropArgs, run_interop),
    "ray": (RayArgs, run_ray),
    "step-path": (StepPathArgs, run_step_path),
    "plot": (PlotArgs, run_plot),
}
NEEDS = {  # command -> (module, extra) beyond the bench extra's
    "ale": [("ale_py", "atari")],
    "autoreset": [("ale_py", "atari")],
    "ray": [("ray", "ray")],
    "interop": [("stable_baselines3", "sb3")],
    "multiagent": [("pettingzoo", "multiagent"), ("mpe2", "multiagent")],
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run one subcommand; returns its exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    name, args = parse_subcommands({key: cls for key, (cls, _) in COMMANDS.items()}, argv,
                                   __doc__.split("\n\n")[0], prog="benchmark.py")
    needs = [("psutil", "bench"), ("matplotlib", "bench"), *NEEDS.get(name, [])]
    needs += [("ale_py", "atari")] if name == "wrappers" and args.env == "pong" else []
    run = COMMANDS[name][1]
    command = " ".join(["python scripts/benchmark.py", *argv])  # the workloads report quotes its command line

    def body() -> int:
        for module, extra in needs:
            require_extra(module, extra, module)
        return run(args) if run is not None else run_workloads(args, command)

    return run_command(body)


if __name__ == "__main__":
    raise SystemExit(main())
