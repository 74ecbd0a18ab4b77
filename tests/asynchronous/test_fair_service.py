"""recv/send samples every env alike: a worker steps the envs asked in the order their
actions came, and ``recv`` returns the envs that waited longest first, so no env of a
slice is served before the others (a batch that over-samples some envs is a silent bias
in training data). The bound here is looser than the benchmark's (``scripts/benchmark.py``
reports the figure), and a second window is measured when the first misses it, so that a
machine loaded by other work does not fail it (a transport that serves some envs first
misses it in every window). Every env draws the same step times (one seed for all), so a
difference in steps is not the envs' own. Busy envs run with the parent and its workers on
one core: how the operating system spreads other work over the cores would decide
otherwise which process computes more, and one core's run queue shares its time alike."""
from __future__ import annotations

import contextlib
import functools
import os
import time

import numpy as np
import pytest

from tests.envs import WaitingEnv
from vec_envs import DummyVecEnv, SubprocVecEnv
from vec_envs.env_states import EnvStates

N, BATCH, SECONDS, BOUND = 16, 4, 1.0, 0.75


def steps_per_env(venv) -> np.ndarray:
    counts = np.zeros(N, np.int64)
    venv.seed([0] * N)  # the same draws in every env
    venv.async_reset()
    end = time.monotonic() + SECONDS
    while time.monotonic() < end:
        env_ids = venv.recv()[4]
        counts[env_ids] += 1
        venv.send(np.zeros(len(env_ids), np.int64), env_ids)
    for _ in range(N // BATCH):  # every env back: a second window starts with a reset
        venv.recv()
    return counts


@contextlib.contextmanager
def on_one_core(venv):
    """The parent and ``venv``'s workers on one core of those this process may use, until the end."""
    mine = os.sched_getaffinity(0)
    for pid in [0] + [w.process.pid for w in venv.workers if hasattr(w, "process")]:
        os.sched_setaffinity(pid, {min(mine)})
    try:
        yield
    finally:
        os.sched_setaffinity(0, mine)


@pytest.mark.parametrize("busy", [False, True])
@pytest.mark.parametrize("in_series", [1, 2, 4, "auto"])  # (auto, busy: the parent steps a slice too)
def test_every_env_gets_its_share_of_steps(in_series, busy, closing):
    venv = closing(SubprocVecEnv([functools.partial(WaitingEnv, busy=busy)] * N, in_series=in_series,
                                 batch_size=BATCH))
    with on_one_core(venv) if busy else contextlib.nullcontext():
        windows = [steps_per_env(venv)]
        if windows[0].min() / windows[0].max() < BOUND:
            windows.append(steps_per_env(venv))
    assert max(c.min() / c.max() for c in windows) >= BOUND, [c.tolist() for c in windows]


def test_dummy_vec_env_serves_round_robin(closing):
    counts = steps_per_env(closing(DummyVecEnv([functools.partial(WaitingEnv, 0.1)] * N, batch_size=BATCH)))
    assert counts.max() - counts.min() <= 1


@pytest.mark.parametrize("count", [2, 4])
def test_recv_returns_the_envs_sent_longest_ago_first(count):
    """Whatever order the answers came in (a backend may note them in index order), the batch
    is in the order the envs were sent: the order the caller sends them back in, which is the
    order a worker steps them in."""
    states = EnvStates("SubprocVecEnv", 6, count)
    states.start_all()
    states.answered(range(6))
    states.returned(states.take_ready(6))
    states.sent(np.array([4, 0, 5]))
    states.sent(np.array([2]))
    states.answered([0, 2, 4, 5])
    assert states.take_ready(count).tolist() == [4, 0, 5, 2][:count]
