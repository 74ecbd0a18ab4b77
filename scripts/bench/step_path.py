"""The files and functions of vec_envs one ``SubprocVecEnv.step()`` passes through, in the
parent and in a worker: what a reader follows to understand a step.

``sys.settrace`` records every Python call into ``vec_envs/`` and ``wrappers/`` during one
lock-step ``step()`` of CartPole-v1 envs, after a warm-up. In the parent the trace spans
the ``step()`` call; in worker 0 an env wrapper starts the trace (through ``env_method``)
and reports it, keeping only the calls from the worker's first wait after that command up
to the dispatch of the reporting one: one step, without the round trips that fetch it.
``--cpus`` plans ``in_series="auto"`` (and spinning) for that many CPUs.

Example:
    >>> trace = StepTrace()
    >>> trace.record("/x/vec_envs/a.py", "f"); trace.record("/x/site-packages/gymnasium/core.py", "g")
    >>> trace.calls
    [('vec_envs/a.py', 'f')]
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

import gymnasium as gym
import numpy as np

from bench.report import markdown_table

__all__ = ["StepPathArgs", "StepTrace", "run_step_path"]

OURS = ("vec_envs", "wrappers")


@dataclass
class StepPathArgs:
    """``benchmark.py step-path``: the files and functions of one ``SubprocVecEnv.step()``."""

    cpus: int = field(default=16, metadata={"help": "plan in_series='auto' for this many CPUs (VEC_ENVS_CPUS)"})
    num_envs: int = field(default=32, metadata={"help": "CartPole-v1 envs"})
    warmup: int = field(default=200, metadata={"help": "steps before the traced one"})
    list_functions: bool = field(default=False, metadata={"help": "list every function, by file"})


class StepTrace:
    """The calls into our packages, in order, while ``start()``-ed."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def record(self, filename: str, function: str) -> None:
        parts = filename.split(os.sep)
        if "site-packages" in parts:
            return
        for package in OURS:
            if package in parts:
                at = len(parts) - 1 - parts[::-1].index(package)
                self.calls.append(("/".join(parts[at:]), function))
                return

    def _trace(self, frame: FrameType, event: str, arg: Any) -> None:
        if event == "call":
            self.record(frame.f_code.co_filename, frame.f_code.co_name)

    def start(self) -> None:
        self.calls.clear()
        sys.settrace(self._trace)

    def stop(self) -> None:
        sys.settrace(None)


_WORKER_TRACE = StepTrace()


class TracedEnv(gym.Wrapper):
    """CartPole-v1 whose worker can trace itself (``trace_on`` / ``trace_report``)."""

    def __init__(self) -> None:
        super().__init__(gym.make("CartPole-v1"))

    def trace_on(self) -> None:
        _WORKER_TRACE.start()

    def trace_report(self) -> list[tuple[str, str]]:
        """The worker's calls from its first wait after ``trace_on`` up to the dispatch of this command."""
        _WORKER_TRACE.stop()
        names = [name for _, name in _WORKER_TRACE.calls]
        start = names.index("_wait_for_work")
        stop = len(names) - 1 - names[::-1].index("_serve_pipe_command")
        return sorted(set(_WORKER_TRACE.calls[start:stop]))


def trace_one_step(args: StepPathArgs) -> tuple[set[tuple[str, str]], set[tuple[str, str]]]:
    """The (file, function) pairs of one step: in the parent, in worker 0."""
    os.environ["VEC_ENVS_CPUS"] = str(args.cpus)
    from vec_envs import SubprocVecEnv

    venv = SubprocVecEnv([TracedEnv] * args.num_envs, in_series="auto", step_in_parent=False)
    try:
        venv.reset()
        actions = np.zeros(args.num_envs, np.int64)
        for _ in range(args.warmup):
            venv.step(actions)
        venv.env_method("trace_on", indices=[0])
        parent = StepTrace()
        parent.start()
        venv.step(actions)
        parent.stop()
        worker = {(path, name) for path, name in venv.env_method("trace_report", indices=[0])[0]}
    finally:
        venv.close()
    return set(parent.calls), worker


def run_step_path(args: StepPathArgs) -> int:
    """Trace one step and print how many files and functions each side passes through."""
    parent, worker = trace_one_step(args)
    rows = []
    for side, calls in (("parent", parent), ("worker", worker), ("together", parent | worker)):
        rows.append([side, str(len({path for path, _ in calls})), str(len(calls))])
    print(f"One SubprocVecEnv.step() of {args.num_envs} CartPole-v1 envs, in_series='auto' for {args.cpus} CPUs:")
    print("\n".join(markdown_table(["side", "files", "functions"], rows)))
    if args.list_functions:
        for side, calls in (("parent", parent), ("worker", worker)):
            print(f"\n{side}:")
            for path in sorted({path for path, _ in calls}):
                print(f"  {path}: {', '.join(sorted(name for p, name in calls if p == path))}")
    return 0
