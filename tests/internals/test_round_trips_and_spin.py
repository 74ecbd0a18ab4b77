"""The parent's round trips and the spin: a lock-step collect that times out keeps the
replies that arrived, and the next collect finishes with them; ``replies`` gathers a
group's replies, the parent's own slice first; ``Spin`` learns its
``budget`` from each wait."""
from __future__ import annotations

import functools
import time

import numpy as np
import pytest

from tests.faulty_envs import SlowStepEnv
from vec_envs import SubprocVecEnv
from vec_envs.errors import EnvTimeoutError
from vec_envs.subproc.doorbell import SPIN_MAX_S, SPIN_MIN_S, Spin
from vec_envs.workers.wire import Command, EnvCall
from vec_envs.workers.worker import replies


# ---------------------------------------------------------------- round trips
def test_a_collect_past_its_timeout_keeps_what_arrived_and_the_next_one_finishes(closing):
    slow_first = [functools.partial(SlowStepEnv, 0.4)] + [SlowStepEnv] * 2
    venv = closing(SubprocVecEnv(slow_first, in_series=1, step_in_parent=False, shared_memory=False))
    venv.reset()
    scheduler = venv.scheduler
    scheduler.submit(None, np.zeros(3, np.int64))
    with pytest.raises(EnvTimeoutError, match=r"envs \[0\] \(workers \[0\]\) did not answer within 0.2 s"):
        scheduler.collect(None, 0.2)  # workers 1 and 2 answer at once, worker 0 late
    assert sorted(scheduler.arrived) == [1, 2]
    assert scheduler.collect(None, None) == {}
    assert len(scheduler.take(None)) == 3


def test_replies_come_from_every_worker_asked_or_from_the_first_to_answer(closing):
    venv = closing(SubprocVecEnv([functools.partial(SlowStepEnv, 0.3)] + [SlowStepEnv] * 2, in_series=1,
                                 step_in_parent=False))
    for worker in venv.workers:
        worker.send(Command.SPACES, None)
    got = replies(venv.workers, time.monotonic() + 10.0)
    assert sorted(got) == [0, 1, 2] and all(reply.ok for reply in got.values())
    venv.reset()
    for worker in venv.workers:  # env 0's step sleeps 0.3 s
        worker.send(Command.ENV_CALL, EnvCall("env_method", [0], ("step", (0,), {})))
    first = replies(venv.workers, time.monotonic() + 10.0, first=True)
    assert 0 not in first and first
    rest = replies([venv.workers[0]], time.monotonic() + 10.0)
    assert rest[0].ok


# ------------------------------------------------------------------------- spinning
def test_a_spin_learns_from_its_waits():
    spin = Spin(enabled=True, thrifty=True)
    assert spin.budget == SPIN_MIN_S
    for _ in range(40):
        spin.record(SPIN_MAX_S / 2)
    assert spin.budget == pytest.approx(SPIN_MAX_S * 0.75, rel=0.05)  # 1.5 x the usual wait
    for _ in range(40):
        spin.record(10 * SPIN_MAX_S)  # waits that outlast any spin: a thrifty spin stops
    assert spin.budget == 0.0
    for _ in range(40):
        spin.record(SPIN_MIN_S / 10)
    assert spin.budget == SPIN_MIN_S
    assert Spin(enabled=False).budget == 0.0
