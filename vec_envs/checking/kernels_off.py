"""The rows of DummyVecEnv with every C kernel off, from a fresh Python process.

The switch (``VEC_ENVS_KERNELS=0``) is read when vec_envs is first imported, so the rows
come from a child process started with it set: ``python -m vec_envs.checking.kernels_off
JOB OUT``. Both sides are in this file: ``rows_without_kernels`` (the caller's side) writes
the job (the env factory, pickled by cloudpickle, the seed and the actions), runs the
child and reads its rows back; ``main`` (the child's side) records them.
"""
from __future__ import annotations

import os
import pickle
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import cloudpickle
from gymnasium.vector import AutoresetMode

from vec_envs import kernels
from vec_envs.checking.vec_rows import DUMMY, Rows, record

__all__ = ["rows_without_kernels", "main"]

CHILD_TIMEOUT_S = 120.0


def rows_without_kernels(env_fn: Callable[[], Any], num_envs: int, seed: int, actions: Sequence[Any]) -> Rows:
    """DummyVecEnv's same-step rows in a child process with ``VEC_ENVS_KERNELS=0``.

    Raises:
        RuntimeError: the child failed (its last lines of stderr), or ran its kernels anyway.
    """
    with tempfile.TemporaryDirectory(prefix="vec_envs_check_") as folder:
        job, out = Path(folder) / "job.pkl", Path(folder) / "rows.pkl"
        job.write_bytes(cloudpickle.dumps({"env_fn": env_fn, "num_envs": num_envs, "seed": seed,
                                           "actions": list(actions)}))
        paths = os.pathsep.join(path for path in sys.path if path)  # the caller's modules, as spawn gives them
        done = subprocess.run([sys.executable, "-m", __name__, str(job), str(out)], capture_output=True, text=True,
                              env={**os.environ, kernels.SWITCH: "0", "PYTHONPATH": paths},
                              timeout=CHILD_TIMEOUT_S, check=False)
        if done.returncode != 0:
            raise RuntimeError(done.stderr.strip().splitlines()[-1] if done.stderr.strip() else
                               f"exit status {done.returncode}")
        result = pickle.loads(out.read_bytes())
    if result["kernels_running"]:
        raise RuntimeError(f"the child ran its C kernels although {kernels.SWITCH}=0")
    rows: Rows = result["rows"]
    return rows


def main(argv: Sequence[str]) -> int:
    """In the child: record the job's rows and write them, with whether any kernel ran."""
    job = pickle.loads(Path(argv[0]).read_bytes())
    envs = DUMMY.build(job["env_fn"], job["num_envs"], AutoresetMode.SAME_STEP)
    rows = record(envs, job["seed"], job["actions"], AutoresetMode.SAME_STEP)
    running = any(status["running"] for status in kernels.report().values())
    Path(argv[1]).write_bytes(pickle.dumps({"rows": rows, "kernels_running": running}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
