"""The parent sleeping on its workers' answers is woken by them (``wake_up.py``), not by naps."""
from __future__ import annotations

import functools
import gc
import os
import select
import time
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import psutil
import pytest

from tests.faulty_envs import SlowStepEnv
from tests.helpers import fns_with
from vec_envs import SubprocVecEnv
from vec_envs.subproc import lane_batches, wake_up, worker_handle
from vec_envs.subproc.control import ControlBlock, ParentColumn, WorkerLanes

STEP_S = 0.03  # long enough that the parent goes to sleep on every wait
NEVER_S = 60.0  # the fallback nap, made so long that a lost wake-up would show in ``naps``


@pytest.fixture
def no_fallback(monkeypatch):
    """The parent's naps last a minute: only the workers' writes can end them in time."""
    monkeypatch.setattr(wake_up, "FALLBACK_S", NEVER_S)
    monkeypatch.setattr(lane_batches, "FALLBACK_S", NEVER_S)
    monkeypatch.setattr(worker_handle, "FALLBACK_S", NEVER_S)


@pytest.mark.timeout(30)  # a wake-up lost would sleep NEVER_S
def test_recv_is_woken_by_the_answers(no_fallback, closing):
    venv = closing(SubprocVecEnv([functools.partial(SlowStepEnv, STEP_S)] * 4, in_series=2, batch_size=4))
    venv.async_reset()
    venv.send(np.zeros(4, np.int64), venv.recv()[4])
    rounds = 6
    for _ in range(rounds):  # every env is sent just before: each recv sleeps on them
        env_ids = venv.recv()[4]
        venv.send(np.zeros(4, np.int64), env_ids)
    sleeper = venv._async_batches.sleeper
    assert sleeper.naps == 0
    assert sleeper.wakes >= rounds


@pytest.mark.timeout(30)
def test_step_waiting_on_the_lanes_is_woken_by_the_answers(no_fallback, closing):
    venv = closing(SubprocVecEnv([functools.partial(SlowStepEnv, STEP_S)] * 2, in_series=2, step_in_parent=False))
    if venv.workers[0].lanes is None:
        pytest.skip("no env lanes here (not x86-64)")
    venv.reset()
    steps = 6
    for _ in range(steps):
        venv.step(np.zeros(2, np.int64))
    sleeper = venv.workers[0].sleeper
    assert sleeper.naps == 0
    assert sleeper.wakes >= steps


@contextmanager
def _parent_and_two_workers(envs_each: int) -> Iterator[tuple[wake_up.ParentSleep, WorkerLanes, WorkerLanes]]:
    """The parent's sleep and two workers' lanes of ``envs_each`` envs, over one control block."""
    n = 2 * envs_each
    block = ControlBlock(np.zeros(ControlBlock.words(n, workers=2), np.int64), n=n, workers=2)
    fd = wake_up.WakeFd()
    try:
        yield (wake_up.ParentSleep(block, fd),
               WorkerLanes(block, 0, 0, envs_each, wake_up.Waker(block, fd.write_fd).answered),
               WorkerLanes(block, 1, envs_each, n, wake_up.Waker(block, fd.write_fd).answered))
    finally:
        fd.close()


def test_workers_write_once_their_answers_make_what_the_parent_waits_for():
    with _parent_and_two_workers(envs_each=2) as (sleeper, first, second):
        first.answer(0, 1, has_message=False)  # nobody sleeps: nothing is written
        assert sleeper.sleep(lambda: False, [], 0.01) == []
        assert (sleeper.wakes, sleeper.naps) == (0, 1)
        answers = [(first, 1), (second, 0), (first, 0)]  # arriving while the parent sleeps for 3 of them
        total = sum(sleeper.answers()) + 3
        sleeper.sleep(lambda: [lanes.answer(k, 2, False) for lanes, k in answers[:2]] and False, [], 0.0, total)
        assert (sleeper.wakes, sleeper.naps) == (0, 2)  # 2 of 3: nobody wrote
        total = sum(sleeper.answers()) + 3
        sleeper.sleep(lambda: [lanes.answer(k, 3, False) for lanes, k in answers] and False, [], NEVER_S, total)
        assert (sleeper.wakes, sleeper.naps) == (1, 2)  # the third wrote: no minute-long sleep


@pytest.mark.timeout(30)  # a total out of reach would sleep NEVER_S
def test_an_answer_counted_between_the_look_and_the_sleep_leaves_the_total_in_reach():
    with _parent_and_two_workers(envs_each=1) as (sleeper, first, second):
        total = sum(sleeper.answers()) + 2  # the parent's look: it waits for both workers
        first.answer(0, 1, has_message=False)  # answered before the sleep begins
        sleeper.sleep(lambda: second.answer(0, 1, has_message=False) and False, [], NEVER_S, total)
        assert (sleeper.wakes, sleeper.naps) == (1, 0)  # the second answer made the total and wrote


def test_a_worker_writes_once_per_sleep_of_the_parent():
    block = ControlBlock(np.zeros(ControlBlock.words(4, workers=1), np.int64), n=4, workers=1)
    fd = wake_up.WakeFd()
    try:
        lanes = WorkerLanes(block, 0, 0, 4, wake_up.Waker(block, fd.write_fd).answered)
        block.parent_row[ParentColumn.TARGET] = 1
        for sleep in (1, 2):  # the parent's row as ParentSleep writes it, the parent not yet up
            block.parent_row[ParentColumn.SLEEPING] = sleep
            for k in range(4):  # every answer past the target
                lanes.answer(k, sleep, False)
            assert _writes(fd) == 1
    finally:
        fd.close()


def _writes(fd: wake_up.WakeFd) -> int:
    """How many wake-ups were written to ``fd`` since it was last read."""
    if hasattr(os, "eventfd"):
        return int.from_bytes(os.read(fd.read_fd, 8), "little")
    return len(os.read(fd.read_fd, 4096)) // 8


def test_a_slice_answered_env_by_env_wakes_the_parent_once_at_its_last_answer():
    block = ControlBlock(np.zeros(ControlBlock.words(3, workers=1), np.int64), n=3, workers=1)
    fd = wake_up.WakeFd()
    try:
        lanes = WorkerLanes(block, 0, 0, 3, wake_up.Waker(block, fd.write_fd).answered)
        sleeper = wake_up.ParentSleep(block, fd)
        block.requested[:] = 1
        assert lanes.take_runs() == [(0, 3)]

        def answer_all() -> bool:
            lanes.marks.mark(0)
            lanes.answer(1, lanes.seq(1), has_message=True)
            assert not select.select([fd.read_fd], [], [], 0)[0]  # two answers of three: no wake-up yet
            lanes.marks.mark(2)
            return False

        sleeper.sleep(answer_all, [], NEVER_S, total=3)
        assert (sleeper.wakes, sleeper.naps) == (1, 0)
        assert block.answered.tolist() == [2, 3, 2]
        assert not lanes.has_requests()
    finally:
        fd.close()


def test_no_descriptor_outlives_close_or_a_restart():
    SubprocVecEnv(fns_with("kill", after=3), in_series=2, batch_size=2).close()  # the forkserver starts once
    fds = psutil.Process().num_fds()
    venv = SubprocVecEnv(fns_with("kill", after=3), in_series=2, batch_size=2, on_error="restart", max_restarts=50)
    venv.async_reset()
    end = time.monotonic() + 10
    while venv.restarts < 2 and time.monotonic() < end:
        env_ids = venv.recv()[4]
        venv.send(np.zeros(len(env_ids), np.int64), env_ids)
    assert venv.restarts >= 2
    venv.close()
    gc.collect()
    assert psutil.Process().num_fds() <= fds
