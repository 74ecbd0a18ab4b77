"""The autoreset command: next-step autoreset against same-step, CartPole and Atari x N.

Each cell steps one VecEnv with random actions for a timed window, in a fresh Python
process, and reports env-steps/s and the CPU of that process tree (the cell and its
workers) per env step. The cells are SubprocVecEnv lock-step ``step()`` and the same
VecEnv behind ``to_gymnasium``, each built ``autoreset_mode="same_step"`` and
``"next_step"``, ALEVecEnv in both modes (Atari), and with ``--baseline-tree`` the
next-step emulation of an older tree (``to_gymnasium(venv, autoreset_mode=NEXT_STEP)``
over a ``batch_size=1`` SubprocVecEnv, driven env by env through recv/send), whose
cell runs with that tree first on ``PYTHONPATH``. Rounds alternate the cells in a
rotated order; the table gives medians and ranges, and next-step over same-step.

Example:
    >>> [cell.name for cell in cells("cartpole", baseline=False)]
    ['subproc same_step', 'subproc next_step', 'to_gymnasium same_step', 'to_gymnasium next_step']
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import SCRIPTS
from bench.report import markdown_table

__all__ = ["AutoresetArgs", "Cell", "cells", "run_autoreset"]

ENVS = ("cartpole", "atari")
CHILD = "import sys; sys.path.insert(0, {scripts!r}); from bench.autoreset import child; child(sys.argv[1])"


@dataclass
class AutoresetArgs:
    """``benchmark.py autoreset``: next-step against same-step autoreset, alternated rounds."""

    envs: str = field(default="cartpole,atari", metadata={"help": f"comma-separated, of {ENVS}"})
    num_envs: int = field(default=8, metadata={"help": "envs per VecEnv"})
    seconds: float = field(default=2.0, metadata={"help": "seconds of each timed window"})
    rounds: int = field(default=3, metadata={"help": "rounds; each runs every cell once, in a rotated order"})
    warmup: float = field(default=0.3, metadata={"help": "seconds stepped before each window"})
    baseline_tree: str = field(default="", metadata={
        "help": "a vec_envs checkout whose to_gymnasium emulates next-step over batch_size=1 (empty: no such cell)"})

    def __post_init__(self) -> None:
        unknown = [e for e in self.envs.split(",") if e not in ENVS]
        if unknown or self.num_envs < 1 or self.seconds <= 0 or self.rounds < 1:
            raise ValueError(f"--envs must be a subset of {ENVS} (received {unknown}); --num-envs, --seconds "
                             "and --rounds must be positive")


@dataclass(frozen=True)
class Cell:
    """One measured configuration: ``how`` (subproc, gym, ale, emulation) in ``mode``."""

    name: str
    env: str
    how: str
    mode: str


def cells(env: str, baseline: bool) -> list[Cell]:
    """The cells of ``env``: lock-step and to_gymnasium in both modes (+ ALEVecEnv, + the emulation)."""
    out = [Cell(f"{label} {mode}", env, how, mode)
           for how, label in (("subproc", "subproc"), ("gym", "to_gymnasium")) for mode in ("same_step", "next_step")]
    if env == "atari":
        out += [Cell(f"ALEVecEnv {mode}", env, "ale", mode) for mode in ("same_step", "next_step")]
    if baseline:
        out.append(Cell("emulation: to_gymnasium(NEXT_STEP), batch_size=1", env, "emulation", "next_step"))
    return out


def _measure(cell: Cell, args: AutoresetArgs, tree: str) -> tuple[float, float]:
    """Run ``cell`` in a fresh process with ``tree`` first on PYTHONPATH: (env-steps/s, CPU us / env step)."""
    spec = json.dumps({"cell": cell.__dict__, "num_envs": args.num_envs, "seconds": args.seconds,
                       "warmup": args.warmup})
    env = {**os.environ, "PYTHONPATH": tree}  # the cwd too: "-c" puts it first on sys.path
    proc = subprocess.run([sys.executable, "-c", CHILD.format(scripts=str(SCRIPTS)), spec], env=env, cwd=tree,
                          capture_output=True, text=True, timeout=120 + 2 * args.seconds, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"cell {cell.name} ({cell.env}) failed:\n{proc.stderr[-3000:]}")
    rate, cpu = json.loads(proc.stdout.strip().splitlines()[-1])
    return float(rate), float(cpu)


def _build(cell: Cell, num_envs: int):  # type: ignore[no-untyped-def]
    """The stepped object and its step function, built with the vec_envs on PYTHONPATH."""
    import functools

    import gymnasium as gym
    import numpy as np

    from vec_envs import SubprocVecEnv
    from vec_envs.interop import to_gymnasium

    if cell.how == "ale":
        from vec_envs import ALEVecEnv

        engine = ALEVecEnv("Breakout", num_envs, autoreset_mode=cell.mode)
        return engine, engine.reset, engine.step
    kwargs: dict[str, Any] = {"batch_size": 1} if cell.how == "emulation" else {"autoreset_mode": cell.mode}
    if cell.env == "atari":
        from vec_envs.ale.make_atari_env import make_atari_env

        venv: Any = make_atari_env("Breakout", num_envs, vec_env_cls=SubprocVecEnv, vec_env_kwargs=kwargs)
    else:
        venv = SubprocVecEnv([functools.partial(gym.make, "CartPole-v1")] * num_envs, **kwargs)
    if cell.how == "subproc":
        return venv, venv.reset, venv.step
    envs = to_gymnasium(venv, autoreset_mode="NextStep") if cell.how == "emulation" else to_gymnasium(venv)
    return envs, functools.partial(envs.reset, seed=0), lambda actions: envs.step(np.asarray(actions))


def child(spec_json: str) -> None:
    """In the cell's process: build, warm up, step for the window; print ``[rate, cpu_us]``."""
    import time

    import numpy as np

    from bench.tree import own_tree_cpu

    spec = json.loads(spec_json)
    cell, num_envs = Cell(**spec["cell"]), spec["num_envs"]
    stepped, reset, step = _build(cell, num_envs)
    try:
        reset()
        actions = np.random.default_rng(0).integers(0, 4 if cell.env == "atari" else 2, (256, num_envs))
        end = time.perf_counter() + spec["warmup"]
        while time.perf_counter() < end:
            step(actions[0])
        steps, cpu, start = 0, own_tree_cpu(), time.perf_counter()
        end = start + spec["seconds"]
        while time.perf_counter() < end:
            step(actions[steps % len(actions)])
            steps += 1
        wall, cpu = time.perf_counter() - start, own_tree_cpu() - cpu
    finally:
        stepped.close()
    print(json.dumps([steps * num_envs / wall, cpu / (steps * num_envs) * 1e6]))


def _table(samples: dict[Cell, list[tuple[float, float]]], env: str) -> list[str]:
    medians = {cell: (statistics.median(s for s, _ in rows), statistics.median(c for _, c in rows))
               for cell, rows in samples.items() if cell.env == env}
    rows = []
    for cell, (rate, cpu) in medians.items():
        rounds = samples[cell]
        rows.append([cell.name, f"{rate:,.0f}", f"{min(s for s, _ in rounds):,.0f}-{max(s for s, _ in rounds):,.0f}",
                     f"{cpu:.1f}", f"{min(c for _, c in rounds):.1f}-{max(c for _, c in rounds):.1f}"])
    lines = markdown_table(["cell", "env-steps/s", "range", "tree CPU us / env step", "range"], rows)
    by_name = {cell.name: value for cell, value in medians.items()}
    for prefix in ("subproc", "to_gymnasium", "ALEVecEnv"):
        same, later = by_name.get(f"{prefix} same_step"), by_name.get(f"{prefix} next_step")
        if same and later:
            lines.append(f"{prefix}: next-step / same-step: env-steps/s {later[0] / same[0]:.3f}x, "
                         f"CPU per env step {later[1] / same[1]:.3f}x")
    return lines


def run_autoreset(args: AutoresetArgs) -> int:
    """Run the alternated rounds and print one table per env."""
    import vec_envs

    tree = str(Path(vec_envs.__file__).resolve().parents[1])
    all_cells = [cell for env in args.envs.split(",") for cell in cells(env, bool(args.baseline_tree))]
    samples: dict[Cell, list[tuple[float, float]]] = {cell: [] for cell in all_cells}
    for r in range(args.rounds):
        shift = r % len(all_cells)
        for cell in all_cells[shift:] + all_cells[:shift]:
            samples[cell].append(_measure(cell, args, args.baseline_tree if cell.how == "emulation" else tree))
    for env in args.envs.split(","):
        print(f"\n{env} x {args.num_envs}, {args.rounds} alternated rounds of {args.seconds:g} s (medians, ranges):")
        print("\n".join(_table(samples, env)))
    return 0
