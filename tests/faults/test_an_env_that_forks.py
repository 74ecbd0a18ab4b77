"""An env that forks a helper process: the helper never holds the worker's pipe, so the
worker's death is seen at once and ``close()`` does not wait for the helper."""
from __future__ import annotations

import functools
import time

import numpy as np
import pytest

from tests.faulty_envs import ForkingEnv
from vec_envs import SubprocVecEnv
from vec_envs.errors import EnvWorkerError


def test_a_worker_killed_while_an_env_it_forked_holds_its_pipe_is_seen_dead_at_once():
    """The worker's end is seen on its process: a child an env forked, holding a copy of
    nothing of the worker's pipe, cannot keep the parent waiting."""
    venv = SubprocVecEnv([functools.partial(ForkingEnv, 40.0)] * 2, in_series=1, step_in_parent=False)
    try:
        venv.reset()
        venv.workers[0].process.kill()
        with pytest.raises(EnvWorkerError, match="killed by signal SIGKILL"):
            venv.step(np.zeros(2, np.int64))
    finally:
        start = time.monotonic()
        venv.close()
    assert time.monotonic() - start < 5.0
