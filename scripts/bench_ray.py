"""RayVecEnv against SubprocVecEnv, side by side: per-step latency and env steps per second.

Each (workload, backend) pair builds its VecEnv, resets it, warms up, then times
``--steps`` calls of ``step`` one by one. Repeats go round-robin over the backends so
that machine drift hits both alike; the table shows the median over repeats. A last
line gives the bare Ray round trip (a no-op actor call), the floor of every RayVecEnv
call. Ray runs locally (started by the first RayVecEnv, stopped at the end).

Usage:
    python scripts/bench_ray.py                          # CartPole-v1 x 64 and ALE/Pong-v5 x 8
    python scripts/bench_ray.py --steps 100 --repeats 1  # a quick look
    python scripts/bench_ray.py --workloads cartpole     # CartPole-v1 x 64 only
    RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 RAY_AUTH_MODE=disabled python scripts/bench_ray.py
                                                         # the local Ray runtime on loopback only
"""
from __future__ import annotations

import os
import statistics
import sys
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

SCRIPTS = Path(__file__).resolve().parent
for _path in (str(SCRIPTS.parent), str(SCRIPTS)):
    if _path not in sys.path:
        sys.path.insert(0, _path)

from bench.args import parse  # noqa: E402
from bench.envs import ENVS, make_env  # noqa: E402
from bench.table import LatencyStats, fmt, markdown_table  # noqa: E402
from bench.timing import presample, time_calls  # noqa: E402

from vec_envs import RayVecEnv, SubprocVecEnv  # noqa: E402

WORKLOADS = {"cartpole": 64, "pong": 8}   # env of bench.envs -> envs in the batch
BACKENDS: dict[str, Any] = {"SubprocVecEnv": SubprocVecEnv, "RayVecEnv": RayVecEnv}


@dataclass
class Args:
    """The command line of ``bench_ray.py``."""

    workloads: str = field(default="cartpole,pong", metadata={
        "help": "comma-separated: cartpole (CartPole-v1 x 64), pong (ALE/Pong-v5 x 8)"})
    steps: int = field(default=300, metadata={"help": "timed step() calls per measurement"})
    warmup: int = field(default=30, metadata={"help": "untimed step() calls before each measurement"})
    repeats: int = field(default=3, metadata={"help": "measurements per (workload, backend), round-robin"})
    in_series: str = field(default="auto", metadata={"help": 'envs per worker, both backends: an int or "auto"'})
    pings: int = field(default=300, metadata={"help": "no-op Ray actor calls timed for the bare round trip"})


def _check(args: Args) -> str | None:
    """What is wrong with ``args`` (None: nothing)."""
    unknown = set(args.workloads.split(",")) - set(WORKLOADS)
    if unknown:
        return f"--workloads: unknown {sorted(unknown)}; expected a comma-separated subset of {list(WORKLOADS)}"
    if min(args.steps, args.repeats, args.pings) < 1 or args.warmup < 0:
        return "--steps, --repeats and --pings must be >= 1, --warmup >= 0"
    if args.in_series != "auto" and not args.in_series.isdigit():
        return f'--in-series must be a positive int or "auto"; received {args.in_series!r}'
    return None


def measure(backend: Any, env: str, args: Args) -> dict[str, Any]:
    """Build and reset (timed), warm up, then time ``args.steps`` single steps."""
    num_envs = WORKLOADS[env]
    in_series = args.in_series if args.in_series == "auto" else int(args.in_series)
    start = time.perf_counter()
    venv = backend([partial(make_env, env)] * num_envs, in_series=in_series)
    try:
        venv.seed(0)
        venv.reset()
        build_s = time.perf_counter() - start
        actions = presample(venv.action_space, num_envs, args.warmup + args.steps, seed=0)
        time_calls(venv.step, actions[:args.warmup])
        seconds = time_calls(venv.step, actions[args.warmup:])
        workers = len(venv.workers)
    finally:
        venv.close()
    return {"build_s": build_s, "workers": workers, "latency": LatencyStats.of(seconds),
            "steps_per_s": num_envs * len(seconds) / seconds.sum()}


def ray_round_trip(pings: int) -> LatencyStats:
    """Call times of a no-op method on a fresh RayVecEnv actor."""
    import ray

    with RayVecEnv([partial(make_env, "cartpole")]) as venv:
        actor = venv.workers[0].actor
        ray.get(actor.where.remote())
        return LatencyStats.of(time_calls(lambda _: ray.get(actor.where.remote()), range(pings)))


def report(results: dict[tuple[str, str], list[dict[str, Any]]], round_trip: LatencyStats, args: Args) -> None:
    """One row per (workload, backend): medians over the repeats."""
    rows = []
    for (env, backend), runs in results.items():
        latency = [run["latency"].median_ms for run in runs]
        p90 = [run["latency"].p90_ms for run in runs]
        rows.append([f"{ENVS[env]} x {WORKLOADS[env]}", backend, str(runs[0]["workers"]),
                     fmt(statistics.median(r["build_s"] for r in runs), ".1f"),
                     f"{statistics.median(latency):.2f} ({statistics.median(p90):.2f})",
                     fmt(statistics.median(r["steps_per_s"] for r in runs))])
    print(f"\n{os.cpu_count()} CPUs, in_series={args.in_series!r}, {args.steps} timed steps, "
          f"median of {args.repeats} repeat(s)\n")
    header = ["workload", "backend", "workers", "build s", "step latency ms (p90)", "env steps/s"]
    print("\n".join(markdown_table(header, rows, "llrrrr")))
    print(f"\nbare Ray round trip (no-op actor call): {round_trip.median_ms:.2f} ms median")


def main() -> None:
    args = parse(Args, None, __doc__.split("\n\n")[0], _check)
    # workers (spawned processes, Ray actors) import vec_envs and bench from here, wherever we run from
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SCRIPTS.parent), str(SCRIPTS),
                                                             os.environ.get("PYTHONPATH")]))
    results: dict[tuple[str, str], list[dict[str, Any]]] = {}
    try:
        for env in args.workloads.split(","):
            for _ in range(args.repeats):
                for name, backend in BACKENDS.items():
                    results.setdefault((env, name), []).append(measure(backend, env, args))
        round_trip = ray_round_trip(args.pings)
    finally:
        import ray

        ray.shutdown()  # the runtime the first RayVecEnv started
    report(results, round_trip, args)


if __name__ == "__main__":
    main()
