"""The step-path command: the files and functions of vec_envs one call passes through, in the
parent and in a worker: what a reader follows to understand a step.

SubprocVecEnv of ``--num-envs`` CartPole-v1 envs, with the constructor's defaults
(``in_series="auto"``) and with ``--in-series``: a lock-step ``step()`` and a ``recv()`` +
``send()`` pair (``batch_size = num_envs / 2``), each with envs whose infos are empty and
with envs that return an info every step (as ALE's envs do with ``lives``).
``sys.settrace`` records every Python call into a file under a ``vec_envs`` folder,
whatever its name: in the parent over the call(s), after a warm-up; in the worker of env 0
from inside one env step to the same point of the next (one turn of the worker's loop),
so the recording starts and ends in the env. Only the public API is used.

Example:
    >>> trace = StepTrace()
    >>> trace.record("/x/vec_envs/a.py", "f"); trace.record("/x/site-packages/gymnasium/core.py", "g")
    >>> trace.calls
    [('vec_envs/a.py', 'f')]
"""
from __future__ import annotations

import functools
import os
import sys
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

import gymnasium as gym
import numpy as np

from bench.report import markdown_table

__all__ = ["StepPathArgs", "StepTrace", "TracedEnv", "run_step_path"]

Calls = set[tuple[str, str]]


@dataclass
class StepPathArgs:
    """The files and functions of a step() and a recv()/send(), in the parent and a worker, by layout."""

    num_envs: int = field(default=8, metadata={"help": "CartPole-v1 envs"})
    in_series: int = field(default=2, metadata={"help": "envs per worker of the layout beside the default"})
    warmup: int = field(default=200, metadata={"help": "steps before the traced one"})
    list_functions: bool = field(default=False, metadata={"help": "list every function, by file"})

    def __post_init__(self) -> None:
        if self.num_envs < 2 or self.in_series < 1 or self.warmup < 4:
            raise ValueError(f"--num-envs must be >= 2, --in-series >= 1, --warmup >= 4; received {self.num_envs}, "
                             f"{self.in_series}, {self.warmup}")


class StepTrace:
    """The calls into files under a ``vec_envs`` folder, in order, while ``start()``-ed."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def record(self, filename: str, function: str) -> None:
        parts = filename.split(os.sep)
        if "vec_envs" in parts and "site-packages" not in parts:
            at = len(parts) - 1 - parts[::-1].index("vec_envs")
            self.calls.append(("/".join(parts[at:]), function))

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
    """CartPole-v1 (``infos``: returning ``{"lives": 3}`` every step) that traces its process
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


def _recv_send(venv: Any, parent: StepTrace, warmup: int) -> None:
    """recv/send rounds; round ``warmup`` traced in the parent; env 0 stepped through its traced turn."""
    actions = np.zeros(venv.num_envs, np.int64)
    venv.async_reset()
    k, sent_to_first = 0, 0  # env 0 must be stepped through its traced turn, however it is scheduled
    while k < warmup * 2 or sent_to_first < warmup // 4 + 2:
        if k == warmup:
            parent.start()
        env_ids = venv.recv()[4]
        venv.send(actions[env_ids], env_ids)
        if k == warmup:
            parent.stop()
        k, sent_to_first = k + 1, sent_to_first + int(0 in env_ids)
    while True:  # every env back, so the env access can run
        try:
            venv.recv(timeout=5.0)
        except Exception:  # noqa: BLE001 (none left in flight: the round is over)
            break


def trace_cell(args: StepPathArgs, in_series: int | str, recv_send: bool, infos: bool) -> tuple[Calls, Calls]:
    """The (file, function) pairs of one call in the parent and of one turn of env 0's worker."""
    from vec_envs import SubprocVecEnv

    n = args.num_envs
    venv = SubprocVecEnv([functools.partial(TracedEnv, infos)] * n, in_series=in_series,
                         batch_size=n // 2 if recv_send else None)
    parent = StepTrace()
    try:
        venv.reset()
        venv.env_method("trace_at", args.warmup // 4 if recv_send else args.warmup, indices=[0])
        if recv_send:
            _recv_send(venv, parent, args.warmup)
        else:
            for k in range(args.warmup * 2):
                if k == args.warmup:
                    parent.start()
                venv.step(np.zeros(n, np.int64))
                if k == args.warmup:
                    parent.stop()
        worker = {(path, name) for path, name in venv.env_method("trace_report", indices=[0])[0]}
    finally:
        venv.close()
    return set(parent.calls), worker


def run_step_path(args: StepPathArgs) -> int:
    """Trace every cell and print how many files and functions each side passes through."""
    rows, listings = [], []
    for in_series in ("auto", args.in_series):
        for recv_send in (False, True):
            for infos in (False, True):
                name = (f"in_series={in_series!r}: {'recv() + send()' if recv_send else 'step()'}, "
                        f"{'info every step' if infos else 'empty infos'}")
                parent, worker = trace_cell(args, in_series, recv_send, infos)
                rows.append([name, *(str(n) for side in (parent, worker)
                                     for n in (len({path for path, _ in side}), len(side)))])
                listings.append((name, parent, worker))
    print(f"SubprocVecEnv of {args.num_envs} CartPole-v1 envs; recv/send with batch_size={args.num_envs // 2}:")
    print("\n".join(markdown_table(["call", "parent files", "parent functions", "worker files", "worker functions"],
                                   rows)))
    if args.list_functions:
        for name, parent, worker in listings:
            for side, calls in (("parent", parent), ("worker", worker)):
                print(f"\n{name}, {side}:")
                for path in sorted({path for path, _ in calls}):
                    print(f"  {path}: {', '.join(sorted(n for p, n in calls if p == path))}")
    return 0
