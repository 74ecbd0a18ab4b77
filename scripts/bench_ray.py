"""RayVecEnv against SubprocVecEnv, side by side: per-step latency and env steps per second.

Each (workload, backend) pair builds its VecEnv, resets it, warms up, then times
``--steps`` calls of ``step`` one by one. Repeats go round-robin over the backends so
that machine drift hits both alike; the table shows the median over repeats. A last
line gives the bare Ray round trip (a no-op actor call), the floor of every RayVecEnv
call. Ray runs locally (started by the first RayVecEnv, stopped at the end).

Usage:
    python scripts/bench_ray.py                          # CartPole-v1 x 64 and ALE/Pong-v5 x 8
    python scripts/bench_ray.py --steps 100 --repeats 1  # a quick look
    RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 RAY_AUTH_MODE=disabled python scripts/bench_ray.py
                                                         # the local Ray runtime on loopback only
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from dataclasses import dataclass, field, fields
from typing import Callable

import gymnasium as gym
import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from vec_envs import RayVecEnv, SubprocVecEnv  # noqa: E402


@dataclass
class Args:
    steps: int = field(default=300, metadata={"help": "timed step() calls per measurement"})
    warmup: int = field(default=30, metadata={"help": "untimed step() calls before each measurement"})
    repeats: int = field(default=3, metadata={"help": "measurements per (workload, backend), round-robin"})
    in_series: str = field(default="auto", metadata={"help": 'envs per worker, both backends: an int or "auto"'})
    pings: int = field(default=300, metadata={"help": "no-op Ray actor calls timed for the bare round trip"})


WORKLOADS = {"CartPole-v1 x 64": ("CartPole-v1", 64), "ALE/Pong-v5 x 8": ("ALE/Pong-v5", 8)}
BACKENDS: dict[str, Callable] = {"SubprocVecEnv": SubprocVecEnv, "RayVecEnv": RayVecEnv}


def make_env(env_id: str) -> Callable[[], gym.Env]:
    """A factory that registers the ALE envs in whichever process builds the env."""
    def thunk() -> gym.Env:
        if env_id.startswith("ALE/"):
            import ale_py

            gym.register_envs(ale_py)
        return gym.make(env_id)
    return thunk


def measure(backend: Callable, env_id: str, num_envs: int, args: Args) -> dict:
    """Build, reset, warm up, then time ``args.steps`` single steps."""
    in_series = args.in_series if args.in_series == "auto" else int(args.in_series)
    start = time.perf_counter()
    venv = backend([make_env(env_id)] * num_envs, in_series=in_series)
    try:
        venv.seed(0)
        venv.reset()
        build_s = time.perf_counter() - start
        actions = np.random.default_rng(0).integers(0, venv.action_space.n, (args.warmup + args.steps, num_envs))
        for action in actions[:args.warmup]:
            venv.step(action)
        latencies = []
        for action in actions[args.warmup:]:
            t = time.perf_counter()
            venv.step(action)
            latencies.append(time.perf_counter() - t)
        workers = len(venv.workers)
    finally:
        venv.close()
    return {"build_s": build_s, "workers": workers, "latency_ms": 1000 * statistics.median(latencies),
            "p90_ms": 1000 * float(np.percentile(latencies, 90)),
            "steps_per_s": num_envs * len(latencies) / sum(latencies)}


def ray_round_trip_ms(pings: int) -> float:
    """Median milliseconds of a no-op call on a fresh RayVecEnv actor."""
    import ray

    with RayVecEnv([make_env("CartPole-v1")]) as venv:
        actor = venv.workers[0].actor
        ray.get(actor.where.remote())
        times = []
        for _ in range(pings):
            t = time.perf_counter()
            ray.get(actor.where.remote())
            times.append(time.perf_counter() - t)
    return 1000 * statistics.median(times)


def report(results: dict, round_trip_ms: float, args: Args) -> None:
    print(f"\n{os.cpu_count()} CPUs, in_series={args.in_series!r}, {args.steps} timed steps, "
          f"median of {args.repeats} repeat(s)\n")
    print("| workload | backend | workers | build s | step latency ms (p90) | env steps/s |")
    print("|---|---|---:|---:|---:|---:|")
    for (workload, backend), runs in results.items():
        med = {key: statistics.median(run[key] for run in runs) for key in runs[0]}
        print(f"| {workload} | {backend} | {med['workers']:.0f} | {med['build_s']:.1f} | "
              f"{med['latency_ms']:.2f} ({med['p90_ms']:.2f}) | {med['steps_per_s']:,.0f} |")
    print(f"\nbare Ray round trip (no-op actor call): {round_trip_ms:.2f} ms median")


def parse_args() -> Args:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for f in fields(Args):
        parser.add_argument(f"--{f.name.replace('_', '-')}", type=type(f.default), default=f.default,
                            help=f.metadata["help"])
    return Args(**vars(parser.parse_args()))


if __name__ == "__main__":
    args = parse_args()
    # workers (spawned processes, Ray actors) import vec_envs from the repo, wherever we run from
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [REPO, os.environ.get("PYTHONPATH")]))
    results: dict = {}
    for workload, (env_id, num_envs) in WORKLOADS.items():
        for _ in range(args.repeats):
            for name, backend in BACKENDS.items():
                results.setdefault((workload, name), []).append(measure(backend, env_id, num_envs, args))
                print(f"{workload} / {name}: {results[workload, name][-1]}", file=sys.stderr, flush=True)
    round_trip = ray_round_trip_ms(args.pings)
    import ray

    ray.shutdown()  # the runtime the first RayVecEnv started
    report(results, round_trip, args)
