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

A second table isolates the parent's cost per row: envs that cost almost nothing to step
(``Echo``: 3 agents, or a single agent, with simple_spread's spaces and 25-step
episodes) on SubprocVecEnv with 2 workers and the parent only driving: the parent's CPU
per agent-step against its CPU per env step of a single-agent VecEnv with as many rows,
and with as many envs. The same envs stepped packed (the backend under the rows, one row
per env) and both again in-process show what the rows layer itself costs.

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

import gymnasium as gym
import numpy as np
from gymnasium import spaces

#: a contender: (step once, agent-steps per step, close)
Contender = tuple[Callable[[], Any], int, Callable[[], None]]


@dataclass
class MultiagentArgs:
    """``benchmark.py multiagent``: agent rows against a raw loop and SuperSuit."""

    num_envs: int = field(default=8, metadata={"help": "copies of simple_spread_v3 per contender"})
    rounds: int = field(default=7, metadata={"help": "alternated rounds (medians are over these)"})
    steps: int = field(default=200, metadata={"help": "batched steps per contender per round"})
    max_cycles: int = field(default=25, metadata={"help": "steps per simple_spread episode"})


class Echo:
    """A ParallelEnv (3 agents by default) that costs almost nothing: fixed observations,
    25-step episodes truncated together."""

    metadata = {"name": "echo_v0"}

    def __init__(self, n_agents: int = 3) -> None:
        self.possible_agents = [f"agent_{k}" for k in range(n_agents)]
        self.agents: list[str] = []
        self._obs = {a: np.zeros(18, np.float32) for a in self.possible_agents}
        self._zeros = dict.fromkeys(self.possible_agents, 0.0)
        self._false = dict.fromkeys(self.possible_agents, False)
        self._true = dict.fromkeys(self.possible_agents, True)
        self._infos: dict[str, dict] = {a: {} for a in self.possible_agents}
        self.t = 0

    def observation_space(self, agent: str) -> spaces.Space:
        return spaces.Box(-np.inf, np.inf, (18,), np.float32)

    def action_space(self, agent: str) -> spaces.Space:
        return spaces.Discrete(5)

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        self.agents, self.t = list(self.possible_agents), 0
        return self._obs, self._infos

    def step(self, actions: dict) -> tuple[dict, dict, dict, dict, dict]:
        self.t += 1
        over = self.t >= 25
        if over:
            self.agents = []
        return self._obs, self._zeros, self._false, self._true if over else self._false, self._infos


class EchoSingle(gym.Env):
    """Echo's single-agent twin: the same observation, action space and episodes."""

    observation_space = spaces.Box(-np.inf, np.inf, (18,), np.float32)
    action_space = spaces.Discrete(5)

    def __init__(self) -> None:
        self._obs, self.t = np.zeros(18, np.float32), 0

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        self.t = 0
        return self._obs, {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        self.t += 1
        return self._obs, 0.0, False, self.t >= 25, {}


def echo_parallel_env() -> Any:
    from pettingzoo.utils.env import ParallelEnv

    return type("EchoParallelEnv", (Echo, ParallelEnv), {})()


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


def echo_rows(args: MultiagentArgs, backend: str, packed: bool = False) -> Contender:
    """8 Echo envs as agent rows; ``packed``: step the backend under the rows directly (one
    row per env, the agents packed), so the difference is what the rows layer costs."""
    from vec_envs.multiagent import make_multiagent_vec_env

    kwargs = {"in_series": max(1, args.num_envs // 2), "step_in_parent": False} if backend == "subproc" else {}
    venv = make_multiagent_vec_env(echo_parallel_env, args.num_envs, vec_env_cls=backend, vec_env_kwargs=kwargs)
    venv.reset()
    actions = np.ones(venv.num_envs, np.int64)
    if packed:
        return functools.partial(venv.venv.step, actions.reshape(args.num_envs, -1)), venv.num_envs, venv.close
    return functools.partial(venv.step, actions), venv.num_envs, venv.close


def echo_single(rows: int) -> Contender:
    from vec_envs import SubprocVecEnv

    venv = SubprocVecEnv([EchoSingle] * rows, in_series=max(1, rows // 2), step_in_parent=False)
    venv.reset()
    return functools.partial(venv.step, np.ones(rows, np.int64)), rows, venv.close


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


def parent_cost_contenders(args: MultiagentArgs) -> dict[str, Contender]:
    return {f"{args.num_envs} Echo envs x 3 agents (agent rows)": echo_rows(args, "subproc"),
            f"{args.num_envs} Echo envs x 3 agents, packed (the backend under the rows)": echo_rows(
                args, "subproc", packed=True),
            f"{args.num_envs * 3} EchoSingle envs (single-agent, as many rows)": echo_single(args.num_envs * 3),
            f"{args.num_envs} EchoSingle envs (single-agent, as many envs)": echo_single(args.num_envs),
            f"in-process (dummy): {args.num_envs} Echo envs x 3 agents (agent rows)": echo_rows(args, "dummy"),
            f"in-process (dummy): {args.num_envs} Echo envs x 3 agents, packed": echo_rows(args, "dummy", packed=True)}


def tree_cpu() -> float:
    """CPU seconds so far of this process and every live process under it (the workers)."""
    import psutil

    total = 0.0
    me = psutil.Process()
    for process in [me, *me.children(recursive=True)]:
        try:
            times = process.cpu_times()
        except psutil.Error:  # gone meanwhile
            continue
        total += times.user + times.system
    return total


def time_segment(step: Callable[[], Any], steps: int) -> tuple[float, float, float]:
    """(wall seconds, driving-thread CPU seconds, CPU seconds of every process) of ``steps``
    calls to ``step``."""
    step()  # a warm call: the first one after another contender's segment may wake workers
    tree, cpu, wall = tree_cpu(), time.thread_time(), time.perf_counter()
    for _ in range(steps):
        step()
    return time.perf_counter() - wall, time.thread_time() - cpu, tree_cpu() - tree


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
    """Time every contender and print both tables."""
    results = measure(contenders(args), args)
    raw = next(iter(results.values()))[0]
    print(f"simple_spread_v3, {args.num_envs} envs x 3 agents, {args.rounds} rounds of {args.steps} steps "
          f"(medians)\n")
    print("| contender | agent-steps/s | x raw loop | driving-thread CPU us / agent-step | "
          "all processes' CPU us / agent-step |")
    print("|---|---:|---:|---:|---:|")
    for name, (rate, cpu, tree) in results.items():
        print(f"| {name} | {rate:,.0f} | {rate / raw:.2f} | {cpu:.1f} | {tree:.1f} |")
    print("\nThe parent's cost per row, envs that cost nothing (SubprocVecEnv, 2 workers, parent drives; "
          "the last two rows: everything in-process)\n")
    print("| rows | row-steps/s | parent CPU us / row-step |")
    print("|---|---:|---:|")
    for name, (rate, cpu, _) in measure(parent_cost_contenders(args), args).items():
        print(f"| {name} | {rate:,.0f} | {cpu:.2f} |")
    return 0
