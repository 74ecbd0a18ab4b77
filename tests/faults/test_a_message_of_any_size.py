"""What an env says reaches the parent whatever its size: an info of a megabyte, eight of
32 KB from one worker, a large reset info, lock-step and recv/send, never stall a
SubprocVecEnv (the parent reads a message as it is written, however full the pipe)."""
from __future__ import annotations

import functools

import numpy as np
import pytest

from tests.faulty_envs import BigInfoEnv, OutputEnv
from vec_envs import SubprocVecEnv

TIMEOUT = 20.0  # a stall would be an EnvTimeoutError here, not a hang
LAYOUTS = [pytest.param(2, 1, 131072, id="1MB-info-x2"), pytest.param(8, 8, 4096, id="32KB-info-x8-one-worker")]


@pytest.mark.parametrize("num_envs, in_series, size", LAYOUTS)
@pytest.mark.parametrize("shared_memory", [True, False], ids=["shm", "pipes"])
def test_large_infos_arrive_in_lock_step(num_envs, in_series, size, shared_memory, closing):
    venv = closing(SubprocVecEnv([functools.partial(BigInfoEnv, size)] * num_envs, in_series=in_series,
                                 shared_memory=shared_memory, timeout=TIMEOUT))
    venv.reset()
    for _ in range(3):
        infos = venv.step(np.zeros(num_envs, np.int64))[3]
        assert all(info["x"].shape == (size,) and info["x"].sum() == size for info in infos)


@pytest.mark.parametrize("num_envs, in_series, size", LAYOUTS)
def test_large_infos_arrive_under_recv_send(num_envs, in_series, size, closing):
    venv = closing(SubprocVecEnv([functools.partial(BigInfoEnv, size)] * num_envs, in_series=in_series,
                                 batch_size=max(1, num_envs // 2), timeout=TIMEOUT))
    venv.async_reset()
    for _ in range(6):
        _, _, _, infos, env_ids = venv.recv()
        assert all(info == {} or info["x"].shape == (size,) for info in infos)
        venv.send(np.zeros(len(env_ids), np.int64), env_ids)


def test_a_large_reset_info_arrives(closing):
    big = {"x": np.ones(131072)}
    venv = closing(SubprocVecEnv([functools.partial(OutputEnv, reset_info=big)] * 2, in_series=1, timeout=TIMEOUT))
    venv.reset()
    assert all(info["x"].shape == (131072,) for info in venv.reset_infos)
    venv.async_reset()
    _, _, _, infos, _ = venv.recv()
    assert all(info["x"].shape == (131072,) for info in infos)
