"""Under recv/send an env that ended was reset in its step (same-step autoreset): the
row ``recv`` returns for it leaves the new episode's reset info in ``reset_infos``, on
every backend and transport, as DummyVecEnv does."""
from __future__ import annotations

import functools

import numpy as np
import pytest

from tests.backends import dummy, ray, ray_marks, subproc
from tests.envs import SeededEnv

N = 4
BACKENDS = [
    pytest.param(dummy, id="dummy"),
    pytest.param(functools.partial(subproc, in_series=2), id="subproc-shm-series2"),
    pytest.param(functools.partial(subproc, in_series=1), id="subproc-shm-series1"),
    pytest.param(functools.partial(subproc, in_series=2, step_in_parent=True), id="subproc-shm-parent-slice"),
    pytest.param(functools.partial(subproc, in_series=2, shared_memory=False), id="subproc-pipes"),
    pytest.param(functools.partial(ray, in_series=2), id="ray-series2", marks=ray_marks),
]


@pytest.mark.parametrize("batch_size", [1, 2])
@pytest.mark.parametrize("make", BACKENDS)
def test_reset_infos_hold_the_new_episodes_reset_info_after_recv(make, batch_size, closing):
    venv = closing(make([functools.partial(SeededEnv, length=2 + i) for i in range(N)], batch_size=batch_size))
    venv.async_reset()
    resets = [0] * N  # SeededEnv's reset info counts its resets
    seen = 0
    for _ in range(60):
        _, _, dones, _, env_ids = venv.recv()
        for j, i in enumerate(env_ids.tolist()):
            resets[i] += 1 if dones[j] or resets[i] == 0 else 0
            assert venv.reset_infos[i] == {"reset_count": resets[i]}, f"env {i}"
            seen += int(dones[j])
        venv.send(np.zeros(len(env_ids), np.int64), env_ids)
    assert seen >= 10
