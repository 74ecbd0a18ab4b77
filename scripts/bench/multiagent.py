"""Agent-steps per second of PettingZoo's simple_spread_v3: vec_envs' agent rows against a
raw loop and SuperSuit, side by side in one run.

Every contender steps ``--num-envs`` copies of ``simple_spread_v3`` (3 agents, 25-step
episodes, discrete actions) with the same fixed actions. Contenders are built once and
timed in alternated rounds (one segment of ``--steps`` batched steps each per round);
the table gives medians over rounds. Columns: agent-steps/s, the ratio to the raw loop,
the driving thread's CPU per agent-step (``time.thread_time()``: for a worker backend,
what the parent spends; for in-process contenders, everything), and the CPU per
agent-step of every process (this one and all under it, with psutil): what a contender
costs whatever else runs on the machine, where agent-steps/s depends on the free cores.

What the rows layer costs on its own: ``scripts/probes/multiagent_rows.py``.

    pip install -e ".[multiagent]"           # supersuit too, for its rows
    python scripts/benchmark.py multiagent --rounds 9
"""
from __future__ import annotations

import functools
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

#: a contender: (step once, agent-steps per step, close)
Contender = tuple[Callable[[], Any], int, Callable[[], None]]


@dataclass
class MultiagentArgs:
    """``benchmark.py multiagent``: agent rows against a raw loop and SuperSuit."""

    num_envs: int = field(default=8, metadata={"help": "copies of simple_spread_v3 per contender"})
    rounds: int = field(default=7, metadata={"help": "alternated rounds (medians are over these)"})
    steps: int = field(default=200, metadata={"help": "batched steps per contender per round"})
    max_cycles: int = field(default=25, metadata={"help": "steps per simple_spread episode"})


def spread(max_cycles: int) -> Any:
    from mpe2 import simple_spread_v3

    return simple_spread_v3.parallel_env(max_cycles=max_cycles)


def raw_loop(args: MultiagentArgs) -> Contender:
    """The envs in this process, one ParallelEnv call after another: what people write by hand."""
    envs = [spread(args.max_cycles) for _ in range(args.num_envs)]
    for e, env in enumerate(envs):
        env.reset(seed=e)
    agents = envs[0].possible_agents
    actions = {agent: 1 for agent in agents}

    def step() -> None:
        for env in envs:
            env.step({agent: actions[agent] for agent in env.agents})
            if not env.agents:
                env.reset()

    return step, args.num_envs * len(agents), lambda: None


def ours(args: MultiagentArgs, backend: str, **kwargs: Any) -> Contender:
    from vec_envs.multiagent import make_multiagent_vec_env

    venv = make_multiagent_vec_env(functools.partial(spread, args.max_cycles), args.num_envs,
                                   vec_env_cls=backend, vec_env_kwargs=kwargs)
    venv.seed(0)
    venv.reset()
    actions = np.ones(venv.num_envs, np.int64)
    return functools.partial(venv.step, actions), venv.num_envs, venv.close


def supersuit_vec_env(args: MultiagentArgs, num_cpus: int) -> Contender:
    import supersuit as ss

    env = ss.pettingzoo_env_to_vec_env_v1(spread(args.max_cycles))
    venv = ss.concat_vec_envs_v1(env, args.num_envs, num_cpus=num_cpus, base_class="stable_baselines3")
    venv.reset()  # SuperSuit's ConcatVecEnv has no seed()
    actions = np.ones(venv.num_envs, np.int64)
    return functools.partial(venv.step, actions), venv.num_envs, venv.close


def contenders(args: MultiagentArgs) -> dict[str, Contender]:
    made = {
        "raw loop (ParallelEnv.step in series)": raw_loop(args),
        "vec_envs dummy": ours(args, "dummy"),
        "vec_envs subproc (auto: 1 worker + parent)": ours(args, "subproc"),
        "vec_envs subproc (2 workers, parent drives)": ours(args, "subproc", in_series=max(1, args.num_envs // 2),
                                                            step_in_parent=False),
    }
    try:
        import supersuit  # noqa: F401
    except ImportError:
        print("supersuit is not installed: its rows are left out")
    else:
        made["SuperSuit num_cpus=0"] = supersuit_vec_env(args, 0)
        made["SuperSuit num_cpus=2"] = supersuit_vec_env(args, 2)
    return made


def time_segment(step: Callable[[], Any], steps: int) -> tuple[float, float, float]:
    """(wall seconds, driving-thread CPU seconds, CPU seconds of every process) of ``steps``
    calls to ``step``."""
    from bench.tree import own_tree_cpu  # psutil: the command checks for it first

    step()  # a warm call: the first one after another contender's segment may wake workers
    tree, cpu, wall = own_tree_cpu(), time.thread_time(), time.perf_counter()
    for _ in range(steps):
        step()
    return time.perf_counter() - wall, time.thread_time() - cpu, own_tree_cpu() - tree


def measure(made: dict[str, Contender], args: MultiagentArgs) -> dict[str, tuple[float, float, float]]:
    """Medians over alternated rounds of each contender's row-steps/s, driving-thread CPU us
    per row-step and every process's CPU us per row-step; closes every contender."""
    samples: dict[str, list[tuple[float, float, float]]] = {name: [] for name in made}
    try:
        for _ in range(args.rounds):
            for name, (step, per_step, _) in made.items():
                wall, cpu, tree = time_segment(step, args.steps)
                rows = args.steps * per_step
                samples[name].append((rows / wall, cpu / rows * 1e6, tree / rows * 1e6))
    finally:
        for _, _, close in made.values():
            close()
    return {name: tuple(statistics.median(column) for column in zip(*rounds))
            for name, rounds in samples.items()}


def run_multiagent(args: MultiagentArgs) -> int:
    """Time every contender and print the table."""
    results = measure(contenders(args), args)
    raw = next(iter(results.values()))[0]
    print(f"simple_spread_v3, {args.num_envs} envs x 3 agents, {args.rounds} rounds of {args.steps} steps "
          f"(medians)\n")
    print("| contender | agent-steps/s | x raw loop | driving-thread CPU us / agent-step | "
          "all processes' CPU us / agent-step |")
    print("|---|---:|---:|---:|---:|")
    for name, (rate, cpu, tree) in results.items():
        print(f"| {name} | {rate:,.0f} | {rate / raw:.2f} | {cpu:.1f} | {tree:.1f} |")
    return 0
