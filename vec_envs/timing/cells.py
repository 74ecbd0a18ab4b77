"""One measurement (a cell) in a fresh process, and the parent that watches its process tree.

A cell builds a batch with a builder named ``"module:function"`` (called with the cell's
options and seed; it returns a ``Stepper``, or a callable that measures on its own),
resets it (build time), steps it for a warm-up, then for the timed window with
pre-sampled actions, and reports env steps per second. Both sides are in this file:

- the cell (``python -m vec_envs.timing.cells SPEC``, ``SPEC`` the JSON of a ``CellSpec``):
  ``measure``; it talks to the parent through marker lines on stdout: ``window-start`` and
  ``window-end`` around the window (with ``handshake`` it then waits for a line on stdin,
  so that its workers are still alive to be read), then ``result`` or ``error``;
- the parent: ``run_cell`` starts it, reads the tree's CPU (``process_tree``) at the two
  window markers, samples its peak memory, kills it with everything it started past its
  timeout, and kills what outlives it. Its record: the cell's result, ``cpu_pct`` (CPU of
  the tree over the window / wall; 100 = one core), ``other_cpu_pct`` (what the rest of
  the machine used meanwhile), ``peak_mb``, ``leftover_processes``, or ``error``.

The cell imports what the parent imports: its ``PYTHONPATH`` is the parent's ``sys.path``.

Example:
    >>> spec = CellSpec("vec_envs.timing.cells:cartpole_stepper", {"num_envs": 2}, window=0.05, warmup=0.0)
    >>> record = run_cell(spec, timeout=60)
    >>> record["steps_per_s"] > 0 and record["cpu_pct"] > 0
    True
"""
from __future__ import annotations

import collections
import importlib
import json
import os
import subprocess
import sys
import threading
import time
import traceback
from dataclasses import asdict, dataclass, field
from functools import partial
from typing import Any

from vec_envs.timing.loops import presample, run_for
from vec_envs.timing.process_tree import (
    TreeSampler,
    kill_leftovers,
    kill_tree,
    machine_busy_s,
    psutil_module,
    tree_cpu,
)
from vec_envs.timing.steppers import Stepper, VecEnvStepper

__all__ = ["MARK", "ACTION_TABLE", "CellSpec", "measure", "run_cell", "cartpole_stepper", "main"]

MARK = "@@cell "              # prefix of the lines a cell sends its parent on stdout
ACTION_TABLE = 256            # pre-sampled action batches, cycled


@dataclass(frozen=True)
class CellSpec:
    """What one cell measures.

    Attributes:
        build: ``"module:function"``: ``function(seed=..., **options)`` returns a ``Stepper``
            (reset and stepped here), or a callable ``(warmup, window, window_start,
            window_end) -> result`` that measures on its own (a machine ceiling).
        options: the builder's keyword arguments (JSON values).
        seed: env i gets ``seed + i``; also seeds the pre-sampled actions.
        window: seconds of the timed window.
        warmup: seconds stepped before it.
        handshake: wait for a line on stdin after ``window-end``.
    """

    build: str
    options: dict[str, Any] = field(default_factory=dict)
    seed: int = 0
    window: float = 1.0
    warmup: float = 0.25
    handshake: bool = True

    def to_json(self) -> str:
        """The command-line form of this spec."""
        return json.dumps(asdict(self))


# ---------------------------------------------------------------- the cell's side
def emit(kind: str, payload: dict[str, Any] | None = None) -> None:
    """Send the parent one marker line."""
    print(MARK + kind + " " + json.dumps(payload or {}), flush=True)


def window_end(spec: CellSpec) -> None:
    """Mark the end of the timed window; with a handshake, wait until the parent has read."""
    emit("window-end")
    if spec.handshake:
        sys.stdin.readline()


def _builder(name: str) -> Any:
    module, _, function = name.partition(":")
    return getattr(importlib.import_module(module), function)


def _shutdown_ray() -> None:
    """Stop a Ray runtime this cell started (RayVecEnv starts one if none is running)."""
    if "ray" in sys.modules and sys.modules["ray"].is_initialized():
        sys.modules["ray"].shutdown()


def measure(spec: CellSpec) -> dict[str, Any]:
    """Build + reset (timed), warm up, time one window: ``steps``, ``seconds``, ``steps_per_s``,
    ``build_s``, ``note``."""
    start = time.perf_counter()
    made = _builder(spec.build)(seed=spec.seed, **spec.options)
    if not isinstance(made, Stepper):
        result: dict[str, Any] = made(spec.warmup, spec.window, partial(emit, "window-start"),
                                      partial(window_end, spec))
        return result
    try:
        made.start(spec.seed)
        build_s = time.perf_counter() - start
        actions = made.rows(presample(made.action_space, made.num_envs, ACTION_TABLE, spec.seed))
        run_for(made.step, actions, spec.warmup)
        emit("window-start")
        calls, seconds = run_for(made.step, actions, spec.window)
        window_end(spec)
    finally:
        made.close()
        _shutdown_ray()
    steps = calls * made.steps_per_call
    return {"steps": steps, "seconds": seconds, "steps_per_s": steps / seconds, "build_s": build_s,
            "note": made.note}


def main(argv: list[str]) -> int:
    """Measure the cell ``argv[0]`` (JSON); print its result, or its error, as a marker line."""
    try:
        result = measure(CellSpec(**json.loads(argv[0])))
    except Exception as exc:
        emit("error", {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()})
        return 1
    emit("result", result)
    return 0


def cartpole_stepper(seed: int, num_envs: int = 2) -> Stepper:
    """DummyVecEnv of CartPole-v1 in lock-step: the cell of the examples."""
    import gymnasium as gym

    from vec_envs.make_vec_env import backend_class

    return VecEnvStepper(backend_class("dummy")([lambda: gym.make("CartPole-v1")] * num_envs))


# ---------------------------------------------------------------- the parent's side
def _read_markers(proc: subprocess.Popen[str], root: Any) -> dict[str, Any]:
    """Follow the cell's marker lines; the tree's CPU % over its window, and the CPU other
    processes of the machine used meanwhile (``other_cpu_pct``: noise)."""
    record: dict[str, Any] = {}
    cpu0: dict[int, float] = {}
    busy0 = t0 = 0.0
    assert proc.stdout is not None and proc.stdin is not None  # both are pipes (run_cell)
    for line in proc.stdout:
        if not line.startswith(MARK):
            continue
        kind, _, payload = line[len(MARK):].partition(" ")
        if kind == "window-start":
            cpu0, busy0, t0 = tree_cpu(root), machine_busy_s(), time.perf_counter()
        elif kind == "window-end":
            wall, cpu1, busy = time.perf_counter() - t0, tree_cpu(root), machine_busy_s() - busy0
            tree = sum(t - cpu0.get(pid, 0.0) for pid, t in cpu1.items())
            record["cpu_pct"], record["other_cpu_pct"] = 100 * tree / wall, 100 * (busy - tree) / wall
            try:
                proc.stdin.write("go\n")
                proc.stdin.flush()
            except OSError:
                pass  # the cell died; its exit code tells
        else:
            record.update(json.loads(payload))
    return record


def cell_environ() -> dict[str, str]:
    """The cell's environment: this one, with this process's ``sys.path`` as ``PYTHONPATH``."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join(path for path in sys.path if path)}


def run_cell(spec: CellSpec, timeout: float, environ: dict[str, str] | None = None) -> dict[str, Any]:
    """Run one cell in a fresh process; its result plus CPU %, peak MB, or an error."""
    psutil = psutil_module()
    cmd = [sys.executable, "-m", __name__, spec.to_json()]
    with subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          env=environ or cell_environ()) as proc:
        root, timed_out = psutil.Process(proc.pid), threading.Event()
        sampler = TreeSampler(root)
        stderr_tail: collections.deque[str] = collections.deque(maxlen=20)
        drain = threading.Thread(target=lambda: stderr_tail.extend(proc.stderr or ()), daemon=True)
        killer = threading.Timer(timeout, kill_tree, (root, timed_out))
        for thread in (sampler, drain, killer):
            thread.start()
        try:
            record = _read_markers(proc, root)
            proc.wait()
        except KeyboardInterrupt:
            kill_tree(root, threading.Event())
            raise
        finally:
            killer.cancel()
            sampler.stopped.set()
            sampler.join()
            drain.join(timeout=5)
    record["peak_mb"] = sampler.peak / 2**20
    record["leftover_processes"] = kill_leftovers(list(sampler.seen.values()))
    if proc.returncode != 0 and "error" not in record:
        reason = f"timed out after {timeout:g} s" if timed_out.is_set() else "crashed"
        record["error"] = f"cell {reason} (exit code {proc.returncode}): " + "".join(stderr_tail)[-500:]
    return record


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
