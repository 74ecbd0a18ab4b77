"""The infos command: what an info every step costs a backend, CartPole with and without one.

Real envs return infos (ALE's envs ``lives`` every step, many MuJoCo envs their reward
terms, every PettingZoo env one per agent), so a transport that is fast only when every
info is empty is fast on benchmarks alone. This command steps CartPole-v1 x N on each
backend twice, once as it is and once returning ``{"lives": 3}`` every step, in rounds
that alternate the cells, and reports env-steps/s and the CPU of the whole process tree
(the parent and every worker) per env step, with the two ratios that matter: CPU with
infos over CPU without (per backend), and steps/s of each backend with infos over
DummyVecEnv's with infos. It uses only the public API, so the same command measures any
tree of vec_envs (``PYTHONPATH``).

Example:
    >>> summary({"a": [(100.0, 10.0), (120.0, 12.0)]})["a"]
    (110.0, 11.0)
"""
from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bench.envs import cartpole, cartpole_with_infos
from bench.report import markdown_table

__all__ = ["InfosArgs", "run_infos", "summary"]

BACKENDS = ("subproc", "dummy")


@dataclass
class InfosArgs:
    """``benchmark.py infos``: CartPole-v1 with and without an info every step, per backend, alternated."""

    num_envs: int = field(default=8, metadata={"help": "CartPole-v1 envs"})
    seconds: float = field(default=2.0, metadata={"help": "seconds of each timed window"})
    rounds: int = field(default=3, metadata={"help": "rounds; each runs every cell once, in a rotated order"})
    backends: str = field(default="subproc,dummy", metadata={"help": f"comma-separated, of {BACKENDS}"})
    warmup: float = field(default=0.3, metadata={"help": "seconds stepped before each window"})

    def __post_init__(self) -> None:
        unknown = [b for b in self.backends.split(",") if b not in BACKENDS]
        if unknown or self.num_envs < 1 or self.seconds <= 0 or self.rounds < 1:
            raise ValueError(f"--backends must be a subset of {BACKENDS} (received {unknown}); --num-envs, "
                             "--seconds and --rounds must be positive")


def _make(backend: str, env_fn: Callable[[], Any], num_envs: int) -> Any:
    from vec_envs import DummyVecEnv, SubprocVecEnv

    if backend == "dummy":
        return DummyVecEnv([env_fn] * num_envs)
    return SubprocVecEnv([env_fn] * num_envs)


def _cell(backend: str, infos: bool, args: InfosArgs) -> tuple[float, float]:
    """One cell, built afresh: (env-steps/s, process-tree CPU us per env step)."""
    from bench.tree import own_tree_cpu  # psutil: the command checks for it first
    venv = _make(backend, cartpole_with_infos if infos else cartpole, args.num_envs)
    try:
        venv.seed(0)
        venv.reset()
        actions = np.random.default_rng(0).integers(0, 2, (256, args.num_envs))
        end = time.perf_counter() + args.warmup
        while time.perf_counter() < end:
            venv.step(actions[0])
        steps, cpu, start = 0, own_tree_cpu(), time.perf_counter()
        end = start + args.seconds
        while time.perf_counter() < end:
            venv.step(actions[steps % len(actions)])
            steps += 1
        wall, cpu = time.perf_counter() - start, own_tree_cpu() - cpu
    finally:
        venv.close()
    env_steps = steps * args.num_envs
    return env_steps / wall, cpu / env_steps * 1e6


def summary(samples: dict[str, list[tuple[float, float]]]) -> dict[str, tuple[float, float]]:
    """The median of each column of each cell's samples."""
    return {name: (statistics.median(s for s, _ in rows), statistics.median(c for _, c in rows))
            for name, rows in samples.items()}


def run_infos(args: InfosArgs) -> int:
    """Run the alternated rounds and print the table and the ratios."""
    cells = [(backend, infos) for backend in args.backends.split(",") for infos in (False, True)]
    samples: dict[str, list[tuple[float, float]]] = {f"{b} {'info' if i else 'empty'}": [] for b, i in cells}
    for r in range(args.rounds):
        shift = r % len(cells)
        for backend, infos in cells[shift:] + cells[:shift]:
            samples[f"{backend} {'info' if infos else 'empty'}"].append(_cell(backend, infos, args))
    medians = summary(samples)
    rows = []
    for name, rounds in samples.items():
        rate, cpu = medians[name]
        rows.append([name, f"{rate:,.0f}", f"{min(s for s, _ in rounds):,.0f}-{max(s for s, _ in rounds):,.0f}",
                     f"{cpu:.1f}", f"{min(c for _, c in rounds):.1f}-{max(c for _, c in rounds):.1f}"])
    print(f"CartPole-v1 x {args.num_envs}, {args.rounds} alternated rounds of {args.seconds:g} s (medians, ranges):")
    print("\n".join(markdown_table(["backend, infos", "env-steps/s", "range", "tree CPU us / env step", "range"],
                                   rows)))
    backends = args.backends.split(",")
    for backend in backends:
        ratio = medians[f"{backend} info"][1] / medians[f"{backend} empty"][1]
        print(f"{backend}: CPU per env step with an info every step / without: {ratio:.2f}x")
    if "dummy" in backends:
        for backend in (b for b in backends if b != "dummy"):
            ratio = medians[f"{backend} info"][0] / medians["dummy info"][0]
            print(f"{backend} with infos: env-steps/s / DummyVecEnv's with infos: {ratio:.2f}x")
    return 0
