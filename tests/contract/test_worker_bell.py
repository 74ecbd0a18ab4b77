"""Sleeping workers are woken by one ring of the bell they share (``wake_up.WorkerBell``),
not by a WAKE message each, under lock-step and recv/send alike."""
from __future__ import annotations

import time
import warnings

import gymnasium as gym
import numpy as np
import pytest

from vec_envs import SubprocVecEnv
from vec_envs.subproc import lane_batches, wake_up, worker_handle
from vec_envs.subproc.control import ControlBlock, ParentColumn

NEVER_S = 60.0  # the parent's fallback nap: a ring lost would show as a test timeout
PAUSE_S = 0.02  # between steps: long enough for every worker to go to sleep


@pytest.fixture
def wakes(monkeypatch):
    """WAKE messages sent (the parent's naps last a minute: only the bell can wake a worker in time)."""
    monkeypatch.setattr(wake_up, "FALLBACK_S", NEVER_S)
    monkeypatch.setattr(lane_batches, "FALLBACK_S", NEVER_S)
    monkeypatch.setattr(worker_handle, "FALLBACK_S", NEVER_S)
    sent: list[int] = []
    wake = worker_handle.SubprocWorker.wake

    def counted(self: worker_handle.SubprocWorker) -> None:
        sent.append(self.index)
        wake(self)

    monkeypatch.setattr(worker_handle.SubprocWorker, "wake", counted)
    return sent


def _venv(closing, **options) -> SubprocVecEnv:
    venv = closing(SubprocVecEnv([lambda: gym.make("CartPole-v1")] * 6, in_series=2, step_in_parent=False,
                                 **options))
    if venv._bell is None:
        pytest.skip("no eventfd here: workers are woken by WAKE messages")
    return venv


def _all_asleep(venv: SubprocVecEnv) -> bool:
    end = time.monotonic() + 5
    while not all(venv._lanes.sleeping(w) for w in range(len(venv.workers))) and time.monotonic() < end:
        time.sleep(PAUSE_S)
    return all(venv._lanes.sleeping(w) for w in range(len(venv.workers)))


@pytest.mark.timeout(30)
def test_lock_step_rings_once_for_all_sleeping_workers(wakes, closing):
    venv = _venv(closing)
    venv.reset()
    steps = 5
    for _ in range(steps):
        assert _all_asleep(venv)
        rings = int(venv._lanes.block.parent_row[ParentColumn.RINGS])
        venv.step(np.zeros(6, np.int64))
        assert int(venv._lanes.block.parent_row[ParentColumn.RINGS]) == rings + 1
    assert wakes == []


@pytest.mark.timeout(30)
def test_recv_send_rings_the_bell_for_sleeping_workers(wakes, closing):
    venv = _venv(closing, batch_size=6)
    venv.async_reset()
    env_ids = venv.recv()[4]
    for _ in range(5):
        assert _all_asleep(venv)
        venv.send(np.zeros(6, np.int64), env_ids)
        env_ids = venv.recv()[4]
        assert sorted(env_ids.tolist()) == list(range(6))
    assert wakes == []


def test_a_ring_quiets_the_fd_of_the_next_ring_before_it_counts():
    block = ControlBlock(np.zeros(ControlBlock.words(2, workers=1), np.int64), n=2, workers=1)
    bell = wake_up.WorkerBell(block)
    try:
        for _ in range(2 * len(bell.fds)):
            bell.ring()
            rings = int(block.parent_row[ParentColumn.RINGS])
            readable = [wake_up._readable(fd) for fd in bell.fds]
            assert readable[rings % len(bell.fds)]  # a worker that read rings - 1 wakes
            assert not readable[(rings + 1) % len(bell.fds)]  # one that read rings sleeps on
    finally:
        bell.close()


@pytest.mark.timeout(30)
def test_close_wakes_the_workers_that_missed_their_ring(wakes, closing, monkeypatch):
    """A worker asleep on a bell rung while it was slow to get up sleeps on: ``close()``
    with its envs in flight wakes it (a WAKE each) instead of waiting out the drain."""
    venv = _venv(closing, batch_size=6)
    venv.async_reset()
    env_ids = venv.recv()[4]
    assert _all_asleep(venv)
    monkeypatch.setattr(wake_up.WorkerBell, "ring", lambda self: None)  # every ring missed
    venv.send(np.zeros(6, np.int64), env_ids)
    start = time.monotonic()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "were still busy ... and were killed"
        venv.close()
    assert time.monotonic() - start < 0.5  # not the drain's second
