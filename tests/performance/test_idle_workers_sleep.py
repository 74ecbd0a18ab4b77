"""Workers with nothing in flight sleep on their pipes: no naps, no polling, no CPU."""
from __future__ import annotations

import time

import numpy as np
import psutil
import pytest

from tests.envs import SeededEnv
from vec_envs import SubprocVecEnv

pytestmark = pytest.mark.slow  # times, probes or plots the benchmark

IDLE_S = 1.0
MOST_WAKE_UPS = 10  # a sleeping worker wakes once a second to see whether its parent lives


def voluntary_switches(venv: SubprocVecEnv) -> int:
    return sum(psutil.Process(worker.process.pid).num_ctx_switches().voluntary for worker in venv.workers)


@pytest.mark.parametrize("batch_size", [None, 2], ids=["lock-step", "recv-send"])
def test_idle_workers_do_not_wake_up(closing, batch_size):
    venv = closing(SubprocVecEnv([SeededEnv] * 4, in_series=2, step_in_parent=False, batch_size=batch_size))
    if batch_size is None:
        venv.reset()
        venv.step(np.zeros(4, np.int64))
    else:
        venv.async_reset()
        for _ in range(2):  # every env returned, none sent: nothing in flight
            venv.recv()
    time.sleep(0.1)  # past any spin
    before = voluntary_switches(venv)
    time.sleep(IDLE_S)
    assert voluntary_switches(venv) - before <= MOST_WAKE_UPS
