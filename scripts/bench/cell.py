"""One cell: one method on one workload, measured in a fresh process.

``python -m bench.cell SPEC`` (``SPEC``: the JSON of a ``CellSpec``) builds and resets
the batch (build time), warms up, then runs the timed window with pre-sampled actions.
It talks to the parent (``bench.tree``) through marker lines on stdout:
``window-start`` and ``window-end`` around the window (the parent reads the process
tree's CPU times there; with ``handshake`` the cell then waits for a line on stdin, so
that its workers are still alive to be read), then ``result`` or ``error``.
"""
from __future__ import annotations

import json
import sys
import time
import traceback
from dataclasses import asdict, dataclass
from functools import partial
from typing import Any

from bench.ceiling import measure_ceiling
from bench.envs import make_env
from bench.methods import METHODS, EnvFns, build
from bench.steppers import Stacked
from bench.timing import presample, run_for
from bench.workloads import WORKLOADS

__all__ = ["MARK", "CellSpec", "measure", "main"]

MARK = "@@bench "             # prefix of the lines a cell sends its parent on stdout
ACTION_TABLE = 256            # pre-sampled action batches, cycled


@dataclass(frozen=True)
class CellSpec:
    """What one cell measures.

    Attributes:
        workload: a key of ``WORKLOADS``.
        method: a key of ``METHODS``.
        repeat: which repeat this is (for the record only).
        seed: env i gets ``seed + i``; also seeds the pre-sampled actions.
        window: seconds of the timed window.
        warmup: seconds stepped before it.
        spin_per_ms: the busy env's loop iterations per millisecond.
        handshake: wait for a line on stdin after ``window-end``.
    """

    workload: str
    method: str
    repeat: int = 0
    seed: int = 0
    window: float = 1.0
    warmup: float = 0.25
    spin_per_ms: int = 25_000
    handshake: bool = False

    def to_json(self) -> str:
        """The command-line form of this spec."""
        return json.dumps(asdict(self))


def emit(kind: str, payload: dict[str, Any] | None = None) -> None:
    """Send the parent one marker line."""
    print(MARK + kind + " " + json.dumps(payload or {}), flush=True)


def window_end(spec: CellSpec) -> None:
    """Mark the end of the timed window; with a handshake, wait until the parent has read."""
    emit("window-end")
    if spec.handshake:
        sys.stdin.readline()


def shutdown_ray() -> None:
    """Stop a Ray runtime this cell started (RayVecEnv starts one if none is running)."""
    if "ray" in sys.modules and sys.modules["ray"].is_initialized():
        sys.modules["ray"].shutdown()


def measure(spec: CellSpec) -> dict[str, Any]:
    """Build + reset (timed), warm up, time one window; the cell's result."""
    workload, method = WORKLOADS[spec.workload], METHODS[spec.method]
    if method.family == "ceiling":
        return measure_ceiling(workload.env, spec.spin_per_ms, spec.seed, spec.warmup, spec.window,
                               partial(emit, "window-start"), partial(window_end, spec))
    env_fns: EnvFns = [partial(make_env, workload.env, i, spec.spin_per_ms) for i in range(workload.num_envs)]
    start = time.perf_counter()
    stepper = build(workload, env_fns, method, spec.seed)
    if workload.frame_stack and not stepper.stacks_frames:
        stepper = Stacked(stepper, workload.frame_stack)
    try:
        stepper.start(spec.seed)
        build_s = time.perf_counter() - start
        actions = stepper.rows(presample(stepper.action_space, stepper.num_envs, ACTION_TABLE, spec.seed))
        run_for(stepper.step, actions, spec.warmup)
        emit("window-start")
        calls, seconds = run_for(stepper.step, actions, spec.window)
        window_end(spec)
    finally:
        stepper.close()
        shutdown_ray()
    steps = calls * stepper.steps_per_call
    return {"steps": steps, "seconds": seconds, "steps_per_s": steps / seconds, "build_s": build_s,
            "note": stepper.note}


def main(argv: list[str]) -> int:
    """Measure the cell ``argv[0]`` (JSON); print its result, or its error, as a marker line."""
    try:
        result = measure(CellSpec(**json.loads(argv[0])))
    except Exception as exc:
        emit("error", {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()})
        return 1
    emit("result", result)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
