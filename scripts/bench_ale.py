"""ALEVecEnv on workload W4, side by side with gymnasium's SyncVectorEnv and our SubprocVecEnv.

W4 is ``scripts/bench_envs.py``'s: ALE/Breakout-v5 (sticky actions 0.25) with gymnasium's
AtariPreprocessing (no-op starts, frame skip 4 with max-pooling, 84x84 gray) and a frame
stack of 4, x 8 envs. ALEVecEnv runs the same preprocessing in ale-py's C++ engine
(``episode_life=False``, ``fire_reset=False`` as AtariPreprocessing). Each cell runs in a
fresh process with ``scripts/benchmark.py``'s measurement loop (build + reset, warm-up,
one timed window of pre-sampled actions); repeats go round-robin over the methods so
machine drift hits them alike; the table shows medians and the ratio to SyncVectorEnv.

    python scripts/bench_ale.py                          # 3 repeats of 5 s windows
    python scripts/bench_ale.py --repeats 1 --window 1   # a quick look
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
from functools import partial
from pathlib import Path
from collections.abc import Callable
from typing import Any

SCRIPTS = Path(__file__).resolve().parent
for _path in (str(SCRIPTS), str(SCRIPTS.parent)):
    if _path not in sys.path:
        sys.path.insert(0, _path)

import benchmark  # noqa: E402
from bench_envs import WORKLOADS, make_env  # noqa: E402

WORKLOAD = WORKLOADS["W4"]
W4_OPTIONS: dict[str, Any] = {"frame_stack": 4, "repeat_action_probability": 0.25, "episode_life": False,
                              "fire_reset": False, "clip_rewards": False, "noop_max": 30}


class AsyncStepper(benchmark.Stepper):
    """ALEVecEnv's recv/send loop: each call sends the last batch's actions and receives
    the next ``batch_size`` envs that finish."""

    stacks_frames = True

    def __init__(self, venv: Any) -> None:
        self.venv, self.num_envs, self.action_space = venv, venv.batch_size, venv.action_space
        self.note = f"batch_size={venv.batch_size} of {venv.num_envs} envs"

    def reset(self, seed: int) -> Any:
        self.venv.seed(seed)
        self.venv.async_reset()
        obs, _, _, _, self.env_ids = self.venv.recv()
        return obs

    def step(self, actions: Any) -> tuple[Any, Any]:
        self.venv.send(actions, self.env_ids)
        obs, _, dones, _, self.env_ids = self.venv.recv()
        return obs, dones

    def close(self) -> None:
        self.venv.close()


class EngineStepper(benchmark.GymVectorStepper):
    """ale-py's own AtariVectorEnv (the engine without our API on top): the ceiling."""

    note = "ale-py AtariVectorEnv, same-step autoreset"

    def reset(self, seed: int) -> Any:
        return self.envs.reset(seed=seed)[0]


def build_ale(batch_size: int | None) -> benchmark.Stepper:
    from vec_envs import ALEVecEnv

    venv = ALEVecEnv("Breakout", WORKLOAD.num_envs, batch_size=batch_size, **W4_OPTIONS)
    return benchmark.VecEnvStepper(venv, stacks_frames=True) if batch_size is None else AsyncStepper(venv)


def build_engine() -> benchmark.Stepper:
    from ale_py.vector_env import AtariVectorEnv

    envs = AtariVectorEnv("breakout", WORKLOAD.num_envs, autoreset_mode="SameStep", stack_num=4,
                          repeat_action_probability=0.25, use_fire_reset=False, reward_clipping=False)
    return EngineStepper(envs, envs.single_action_space, stacks_frames=True)


def build_with(family: str, options: dict) -> Callable[[], benchmark.Stepper]:
    env_fns = [partial(make_env, "W4", i) for i in range(WORKLOAD.num_envs)]
    return lambda: benchmark.BUILDERS[family](WORKLOAD, env_fns, options)


#: key -> (table label, builder)
METHODS: dict[str, tuple[str, Callable[[], benchmark.Stepper]]] = {
    "sync": ("gymnasium SyncVectorEnv + in-script stack", build_with("gymnasium", {"cls": "SyncVectorEnv"})),
    "subproc": ("SubprocVecEnv() + VecFrameStack", build_with("ours", {"backend": "SubprocVecEnv"})),
    "ale": ("ALEVecEnv(frame_stack=4), step()", partial(build_ale, None)),
    "ale-async4": ("ALEVecEnv(batch_size=4), recv/send", partial(build_ale, 4)),
    "ale-async2": ("ALEVecEnv(batch_size=2), recv/send", partial(build_ale, 2)),
    "engine": ("ale-py AtariVectorEnv (raw engine)", build_engine),
}


def tree_cpu_s() -> float:
    """CPU seconds (user + sys) of this process and its live children (SubprocVecEnv's workers)."""
    import psutil

    total = 0.0
    for proc in [psutil.Process(), *psutil.Process().children(recursive=True)]:
        try:
            times = proc.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system
    return total


def measure(key: str, window: float, warmup: float, seed: int) -> dict:
    """One cell, in this process: build + reset, warm up, one timed window (wall and CPU)."""
    stepper = METHODS[key][1]()
    if not stepper.stacks_frames:
        stepper = benchmark.Stacked(stepper, WORKLOAD.frame_stack)
    try:
        stepper.reset(seed)
        actions = stepper.prepare(benchmark.presample(stepper.action_space, stepper.num_envs,
                                                      benchmark.ACTION_TABLE, seed))
        benchmark.step_for(stepper.step, actions, warmup)
        cpu_start = tree_cpu_s()
        calls, seconds = benchmark.step_for(stepper.step, actions, window)
        cpu_s = tree_cpu_s() - cpu_start
    finally:
        stepper.close()
    steps = calls * stepper.num_envs
    return {"steps_per_s": steps / seconds, "steps_per_cpu_s": steps / max(cpu_s, 1e-9)}


def run_cell(key: str, args: argparse.Namespace) -> dict:
    """One cell in a fresh process: its env steps per second (wall) and per CPU second."""
    cmd = [sys.executable, __file__, "--cell", key, "--window", str(args.window), "--warmup", str(args.warmup),
           "--seed", str(args.seed)]
    out = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=300)
    lines = [line for line in out.stdout.splitlines() if line.startswith(benchmark.MARK)]
    if out.returncode != 0 or not lines:
        raise RuntimeError(f"cell {key} failed:\n{out.stderr[-2000:]}")
    return dict(json.loads(lines[-1][len(benchmark.MARK):]))


def table(results: dict[str, list[dict]]) -> str:
    """Medians per method; the ratio to SyncVectorEnv's median (wall), and env steps per
    CPU second (all threads and worker processes), which machine load skews far less."""
    def median(key: str, field: str) -> float:
        return statistics.median(cell[field] for cell in results[key]) if key in results else math.nan

    base = median("sync", "steps_per_s")
    rows = ["| method | env steps/s (median) | runs | x SyncVectorEnv | env steps per CPU s |",
            "|---|---:|---|---:|---:|"]
    for key, cells in results.items():
        rate = median(key, "steps_per_s")
        runs = ", ".join(f"{cell['steps_per_s']:.0f}" for cell in cells)
        ratio = f"{rate / base:.2f}" if not math.isnan(base) else "-"  # no SyncVectorEnv cell
        rows.append(f"| {METHODS[key][0]} | {rate:.0f} | {runs} | {ratio} | {median(key, 'steps_per_cpu_s'):.0f} |")
    return "\n".join(rows)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--methods", default=",".join(METHODS), help=f"comma-separated, of {list(METHODS)}")
    p.add_argument("--repeats", type=int, default=3, help="cells per method, round-robin")
    p.add_argument("--window", type=float, default=5.0, help="seconds of each timed window")
    p.add_argument("--warmup", type=float, default=1.0, help="seconds stepped before the window")
    p.add_argument("--seed", type=int, default=0, help="seeds the envs and the pre-sampled actions")
    p.add_argument("--cell", default="", help="internal: run one method's cell and print its result")
    args = p.parse_args()
    if args.cell:
        print(benchmark.MARK + json.dumps(measure(args.cell, args.window, args.warmup, args.seed)), flush=True)
        return 0
    keys = [key for key in args.methods.split(",") if key]
    unknown = sorted(set(keys) - set(METHODS))
    if unknown:
        p.error(f"unknown methods {unknown}; expected some of {list(METHODS)}")
    results: dict[str, list[dict]] = {key: [] for key in keys}
    for repeat in range(args.repeats):
        for key in keys:
            results[key].append(run_cell(key, args))
            print(f"repeat {repeat + 1}/{args.repeats} {key}: {results[key][-1]['steps_per_s']:.0f} steps/s",
                  flush=True)
    print(f"\nW4: {WORKLOAD.title}, {args.repeats} x {args.window} s windows\n")
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
