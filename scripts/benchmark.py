"""Benchmark vec_envs' backends against gymnasium's, SB3's and EnvPool's (where installed).

    python scripts/benchmark.py workloads                 # W1..W5: every method, 3 repeats of 5 s
    python scripts/benchmark.py workloads --quick         # a short run
    python scripts/benchmark.py workloads --workloads M   # the many-core workloads
    python scripts/benchmark.py overhead                  # where a batch's CPU goes; the cost model
    python scripts/benchmark.py ale                       # ALEVecEnv on W4, side by side
    python scripts/benchmark.py wrappers --env pong       # what the wrapper stack adds to a step
    python scripts/benchmark.py interop --clock cpu       # what each interop adapter adds
    python scripts/benchmark.py ray                       # RayVecEnv against SubprocVecEnv
    python scripts/benchmark.py multiagent                # agent rows of simple_spread_v3 against SuperSuit
    python scripts/benchmark.py infos                     # what an info every step costs each backend
    python scripts/benchmark.py autoreset                 # next-step autoreset against same-step
    python scripts/benchmark.py plot RUN_DIR --out DIR    # a workloads run's cells as PNGs (the docs' plots)
    python scripts/benchmark.py COMMAND --help            # every option, with its default

The harness lives in ``scripts/bench/``; results and their commands in ``scripts/BENCHMARKS.md``.
Investigations of the transport (a step's path, the slice loop, wake-ups, an agent pausing
between steps) are small scripts of their own in ``scripts/probes/``.
"""
from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

from bench.autoreset import AutoresetArgs, run_autoreset
from bench.infos import InfosArgs, run_infos
from bench.machine import require
from bench.micro import InteropArgs, RayArgs, WrappersArgs, run_interop, run_ray, run_wrappers
from bench.multiagent import MultiagentArgs, run_multiagent
from bench.overhead import OverheadArgs, run_overhead
from bench.plot import PlotArgs, run_plot
from bench.suite import AleArgs, WorkloadsArgs, run_ale, run_workloads

from vec_envs.cli.args import parse_subcommands

COMMANDS: dict[str, tuple[type[Any], Callable[[Any], int]]] = {  # workloads and ale are run by main
    "workloads": (WorkloadsArgs, lambda args: 0),
    "overhead": (OverheadArgs, run_overhead),
    "ale": (AleArgs, lambda args: 0),
    "wrappers": (WrappersArgs, run_wrappers),
    "interop": (InteropArgs, run_interop),
    "ray": (RayArgs, run_ray),
    "multiagent": (MultiagentArgs, run_multiagent),
    "infos": (InfosArgs, run_infos),
    "autoreset": (AutoresetArgs, run_autoreset),
    "plot": (PlotArgs, run_plot),
}
NEEDS = {  # command -> (modules, extra) beyond the bench extra
    "ale": (["ale_py"], "atari"),
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
    if name in ("workloads", "ale"):  # the report quotes its command line
        command = " ".join(["python scripts/benchmark.py", *argv])
        return run_workloads(args, command) if name == "workloads" else run_ale(args, command)
    return COMMANDS[name][1](args)


if __name__ == "__main__":
    raise SystemExit(main())
