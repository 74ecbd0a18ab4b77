"""Waking: the parent sleeping on its workers' answers is woken by them, and a sleeping
worker by its own bell when it is asked for envs (by the shared rings when every env is),
never by naps (``subproc/doorbell.py``)."""
from __future__ import annotations

import functools
import gc
import os
import select
import time
import warnings
from typing import Any

import gymnasium as gym
import numpy as np
import psutil
import pytest

from tests.faulty_envs import SlowStepEnv
from tests.helpers import fns_with
from vec_envs import SubprocVecEnv
from vec_envs.subproc import doorbell
from vec_envs.subproc.doorbell import Doorbell, Spin, readable
from vec_envs.subproc.lanes import P_RINGS, ParentLanes, WorkerLanes, int_words, words

STEP_S = 0.03  # long enough that the parent goes to sleep on every wait
NEVER_S = 60.0  # the fallback nap, made so long that a lost wake-up would show
PAUSE_S = 0.02  # between steps: long enough for every worker to go to sleep


@pytest.fixture
def no_fallback(monkeypatch):
    """The parent's naps last a minute: only the workers' writes can end them in time;
    returns the WAKE messages sent through the pipes (a ring lost would need them)."""
    monkeypatch.setattr(doorbell, "FALLBACK_S", NEVER_S)
    sent: list[list[int]] = []
    wake = SubprocVecEnv._wake_by_pipe

    def counted(self, workers):
        sent.append(list(workers))
        wake(self, workers)

    monkeypatch.setattr(SubprocVecEnv, "_wake_by_pipe", counted)
    return sent


def _sleep(venv: SubprocVecEnv) -> Doorbell:
    if type(venv.scheduler).__name__ != "LaneScheduler" or venv.scheduler.doorbell.wake_fd < 0:
        pytest.skip("no env lanes or no wake fd here")
    return venv.scheduler.doorbell


@pytest.mark.timeout(30)  # a wake-up lost would sleep NEVER_S
def test_recv_is_woken_by_the_answers(no_fallback, closing):
    venv = closing(SubprocVecEnv([functools.partial(SlowStepEnv, STEP_S)] * 4, in_series=2, batch_size=4))
    sleep = _sleep(venv)
    venv.async_reset()
    venv.send(np.zeros(4, np.int64), venv.recv()[4])
    rounds = 6
    for _ in range(rounds):  # every env is sent just before: each recv sleeps on them
        env_ids = venv.recv()[4]
        venv.send(np.zeros(4, np.int64), env_ids)
    assert sleep.naps == 0
    assert sleep.wakes >= rounds


@pytest.mark.timeout(30)
def test_step_waiting_on_the_lanes_is_woken_by_the_answers(no_fallback, closing):
    venv = closing(SubprocVecEnv([functools.partial(SlowStepEnv, STEP_S)] * 2, in_series=2, step_in_parent=False))
    sleep = _sleep(venv)
    venv.reset()
    steps = 6
    for _ in range(steps):
        venv.step(np.zeros(2, np.int64))
    assert sleep.naps == 0
    assert sleep.wakes >= steps


def test_an_answer_counted_between_the_look_and_the_sleep_leaves_the_total_in_reach():
    block = np.zeros(words(2, workers=2), np.int64)
    bell = Doorbell(2)
    try:
        parent = ParentLanes(block, 2, 2)
        first = WorkerLanes(block, 2, 2, 0, 0, 1, bell.wake_write)
        second = WorkerLanes(block, 2, 2, 1, 1, 2, bell.wake_write)
        total = sum(parent.counts) + 2  # the parent's look: it waits for both workers
        first.answer(0, False)  # answered before the sleep begins
        looks: list[int] = []

        def done() -> bool:  # the sleep's last look: the second answer comes meanwhile; the next look sees it
            if not looks:
                second.answer(0, False)
            looks.append(1)
            return len(looks) > 1

        bell._sleep_until(done, total, parent.counts, parent.parent_row, (), lambda: None, None)
        assert (bell.wakes, bell.naps) == (1, 0)  # the second answer made the total and wrote: no nap
    finally:
        bell.close()


def test_a_wait_with_no_answer_naps_and_wakes_the_sleepers_through_their_pipes():
    block = np.zeros(words(2, workers=1), np.int64)
    bell = Doorbell(1)
    try:
        parent, woken = ParentLanes(block, 2, 1), []
        done = bell.wait(lambda: False, 1, parent.counts, parent.parent_row, Spin(False), (),
                         lambda: woken.append(1), time.monotonic() + 0.05)
        assert done == [] and bell.naps >= 1 and woken  # nobody answered: the fallback, and a WAKE
    finally:
        bell.close()


def _venv(closing, **options) -> SubprocVecEnv:
    venv = closing(SubprocVecEnv([lambda: gym.make("CartPole-v1")] * 6, in_series=2, step_in_parent=False,
                                 **options))
    if venv._doorbell is None or not venv._doorbell.bells:
        pytest.skip("no eventfd here: workers are woken by WAKE messages")
    return venv


def _all_asleep(venv: SubprocVecEnv) -> bool:
    end = time.monotonic() + 5
    while not all(venv._lanes.sleeping(w) for w in range(len(venv.workers))) and time.monotonic() < end:
        time.sleep(PAUSE_S)
    return all(venv._lanes.sleeping(w) for w in range(len(venv.workers)))


def _woken(venv: SubprocVecEnv) -> list[Any]:
    """The workers each request of the lanes wakes by their bells ("all": by the shared rings), recorded."""
    woken: list[Any] = []
    ring, ring_all = venv._lanes.wake, venv._lanes.wake_all
    venv._lanes.wake = lambda workers: (woken.append(list(workers)), ring(workers))  # type: ignore[assignment]
    venv._lanes.wake_all = lambda row: (woken.append("all"), ring_all(row))  # type: ignore[assignment,misc]
    return woken


@pytest.mark.timeout(30)
def test_lock_step_wakes_every_sleeping_worker_with_one_ring(no_fallback, closing):
    venv = _venv(closing)
    venv.reset()
    woken = _woken(venv)
    for _ in range(5):
        assert _all_asleep(venv)
        venv.step(np.zeros(6, np.int64))
    assert woken == ["all"] * 5
    assert no_fallback == []  # each of the three workers woke at its ring, none by the parent's fallback


def test_a_ring_is_quiet_before_anyone_polls_it_anew():
    """Ring r writes ring r % RINGS; a worker that saw r rings sleeps on ring (r + 1) % RINGS,
    which ring r emptied: quiet until ring r + 1 (and a ring rung twice before is quiet too)."""
    bell = Doorbell(2)
    row = int_words(np.zeros(8, np.int64))
    try:
        for r in range(1, 3 * doorbell.RINGS):
            bell.ring_all(row)
            assert row[P_RINGS] == r
            assert readable(bell.rings[r % doorbell.RINGS]), r
            assert not readable(bell.rings[(r + 1) % doorbell.RINGS]), r
    finally:
        bell.close()


@pytest.mark.timeout(30)
def test_recv_send_rings_the_bell_for_sleeping_workers(no_fallback, closing):
    venv = _venv(closing, batch_size=2)
    venv.async_reset()
    for _ in range(3):
        venv.recv()
    woken = _woken(venv)
    for w in (2, 0, 1):  # the two envs of worker w: only its bell rings
        assert _all_asleep(venv)
        venv.send(np.zeros(2, np.int64), np.array([2 * w, 2 * w + 1]))
        env_ids = venv.recv()[4]
        assert sorted(env_ids.tolist()) == [2 * w, 2 * w + 1]
    assert woken == [[2], [0], [1]]
    assert no_fallback == []


def test_a_bell_rings_for_its_worker_alone_until_it_is_read():
    bell = Doorbell(3)
    try:
        bell.ring([1])
        bell.ring([1, 2])  # rung twice: one read quiets it
        assert [readable(fd) for fd in bell.bells] == [False, True, True]
        os.read(bell.bells[1], 8)
        assert [readable(fd) for fd in bell.bells] == [False, False, True]
    finally:
        bell.close()


@pytest.mark.timeout(30)
def test_close_wakes_the_workers_that_missed_their_ring(no_fallback, closing, monkeypatch):
    """A worker asleep on a bell rung while it was slow to get up sleeps on: ``close()``
    with its envs in flight wakes it (a WAKE each) instead of waiting out the drain."""
    venv = _venv(closing, batch_size=6)
    venv.async_reset()
    env_ids = venv.recv()[4]
    assert _all_asleep(venv)
    monkeypatch.setattr(venv._lanes, "wake", lambda workers: None)  # every ring missed
    venv.send(np.zeros(6, np.int64), env_ids)
    start = time.monotonic()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "were still busy ... and were killed"
        venv.close()
    assert time.monotonic() - start < 0.5  # not the drain's second
    assert no_fallback  # the WAKEs went through the pipes


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


def test_the_wake_fd_reads_back_every_write():
    bell = Doorbell(1)
    try:
        os.write(bell.wake_write, (1).to_bytes(8, "little"))
        assert select.select([bell.wake_fd], [], [], 0)[0]
    finally:
        bell.close()


def test_the_parent_watches_the_exit_of_a_worker_a_reset_replaced():
    """A reset after a Ctrl-C replaces the worker a hanging env kept busy; the parent's
    watch list must hold the replacement's sentinel, never the closed one of the old."""
    import signal
    import threading

    from tests.envs import FaultyEnv, SeededEnv

    fns = [functools.partial(FaultyEnv, "hang", after=4), functools.partial(SeededEnv, length=1000)]
    with SubprocVecEnv(fns, in_series=1, batch_size=1) as venv:
        venv.reset()
        old = venv.workers[0].process.pid
        threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT)).start()
        with pytest.raises(KeyboardInterrupt):
            for _ in range(5):  # env 0 hangs at its fifth step
                venv.step(np.zeros(2, np.int64))
        venv.reset()
        assert venv.workers[0].process.pid != old
        assert venv.scheduler._sentinels == tuple(w.process.sentinel for w in venv.workers)
