"""The files and functions of vec_envs one call passes through, in the parent and in a
worker: what a reader follows to understand a step.

    python scripts/probes/step_path.py --list-functions

Four cells, SubprocVecEnv of CartPole-v1 envs (``--in-series`` per worker, no slice in
the parent): a lock-step ``step()`` and a ``recv()`` + ``send()`` pair
(``batch_size = num_envs / 2``), each with envs whose infos are empty and with envs that
return an info every step (as ALE's envs do with ``lives``). ``sys.settrace`` records
every Python call into ``vec_envs/``: in the parent over the call(s), after a warm-up; in
worker 0 from inside one env step to the same point of the next (one turn of the
worker's loop: the rest of a serving, the wait, the next serving), so the recording
starts and ends in the env, whatever the tree. Only the public API is used: the same
command measures any tree of vec_envs (``PYTHONPATH``).

What it found, and the counts per call: scripts/BENCHMARKS.md, "The path of one step".

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

from vec_envs.cli.args import parse_args

__all__ = ["StepPathArgs", "StepTrace", "TracedEnv", "run_step_path", "markdown_table"]

OURS = ("vec_envs",)
Calls = set[tuple[str, str]]


@dataclass
class StepPathArgs:
    """The files and functions of a lock-step and a recv/send step, in the parent and a worker."""

    num_envs: int = field(default=4, metadata={"help": "CartPole-v1 envs"})
    in_series: int = field(default=2, metadata={"help": "envs per worker"})
    warmup: int = field(default=200, metadata={"help": "steps before the traced one"})
    list_functions: bool = field(default=False, metadata={"help": "list every function, by file"})


def markdown_table(header: list[str], rows: list[list[str]]) -> list[str]:
    """The lines of a Markdown table: the first column left-aligned, the others right."""
    lines = ["| " + " | ".join(header) + " |", "|---|" + "---:|" * (len(header) - 1)]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


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
    """CartPole-v1 (``infos``: returning ``{"lives": 3}`` every step) that traces its worker
    from inside step ``at`` to the same point of step ``at + 1``; ``trace_report`` returns it."""

    def __init__(self, infos: bool = False) -> None:
        super().__init__(gym.make("CartPole-v1"))
        self.infos, self.steps, self.at = infos, 0, -1
        self.calls: list[tuple[str, str]] = []

    def trace_at(self, at: int) -> None:
        self.at = self.steps + at

    def step(self, action: Any) -> Any:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.steps += 1
        if self.steps == self.at:
            _WORKER_TRACE.start()
        elif self.steps == self.at + 1:
            _WORKER_TRACE.stop()
            self.calls = list(_WORKER_TRACE.calls)
        return obs, reward, terminated, truncated, ({"lives": 3} if self.infos else info)

    def trace_report(self) -> list[tuple[str, str]]:
        return sorted(set(self.calls))


def traced_env(infos: bool) -> TracedEnv:
    return TracedEnv(infos)


def trace_cell(args: StepPathArgs, recv_send: bool, infos: bool) -> tuple[Calls, Calls]:
    """The (file, function) pairs of one call in the parent and of one turn of worker 0."""
    import functools

    from vec_envs import SubprocVecEnv

    n = args.num_envs
    venv = SubprocVecEnv([functools.partial(traced_env, infos)] * n, in_series=args.in_series, step_in_parent=False,
                         batch_size=n // 2 if recv_send else None)
    parent = StepTrace()
    try:
        venv.reset()
        venv.env_method("trace_at", args.warmup // 4 if recv_send else args.warmup, indices=[0])
        actions = np.zeros(n, np.int64)
        if recv_send:
            venv.async_reset()
            k, sent_to_first = 0, 0  # env 0 must be stepped through its traced turn, however it is scheduled
            while k < args.warmup * 2 or sent_to_first < args.warmup // 4 + 2:
                if k == args.warmup:
                    parent.start()
                env_ids = venv.recv()[4]
                venv.send(actions[env_ids], env_ids)
                if k == args.warmup:
                    parent.stop()
                k, sent_to_first = k + 1, sent_to_first + int(0 in env_ids)
            while True:  # every env back, so the env access can run
                try:
                    venv.recv(timeout=5.0)
                except Exception:  # noqa: BLE001 (none left in flight: the round is over)
                    break
        else:
            for k in range(args.warmup * 2):
                if k == args.warmup:
                    parent.start()
                venv.step(actions)
                if k == args.warmup:
                    parent.stop()
        worker = {(path, name) for path, name in venv.env_method("trace_report", indices=[0])[0]}
    finally:
        venv.close()
    return set(parent.calls), worker


def run_step_path(args: StepPathArgs) -> int:
    """Trace the four cells and print how many files and functions each side passes through."""
    rows, listings = [], []
    for recv_send in (False, True):
        for infos in (False, True):
            name = f"{'recv() + send()' if recv_send else 'step()'}, {'info every step' if infos else 'empty infos'}"
            parent, worker = trace_cell(args, recv_send, infos)
            rows.append([name, *(str(n) for side in (parent, worker)
                                 for n in (len({path for path, _ in side}), len(side)))])
            listings.append((name, parent, worker))
    print(f"SubprocVecEnv of {args.num_envs} CartPole-v1 envs, in_series={args.in_series}; recv/send with "
          f"batch_size={args.num_envs // 2}:")
    print("\n".join(markdown_table(["call", "parent files", "parent functions", "worker files", "worker functions"],
                                   rows)))
    if args.list_functions:
        for name, parent, worker in listings:
            for side, calls in (("parent", parent), ("worker", worker)):
                print(f"\n{name}, {side}:")
                for path in sorted({path for path, _ in calls}):
                    print(f"  {path}: {', '.join(sorted(n for p, n in calls if p == path))}")
    return 0


if __name__ == "__main__":
    raise SystemExit(run_step_path(parse_args(StepPathArgs, prog="step_path.py")))
