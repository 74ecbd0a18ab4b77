"""The parent's round trips and the spin: ``Messenger.gather`` hands out outcomes in the
order asked, keeping what arrived when it times out; ``Spin`` learns from a wait at the
next ``budget()``."""
from __future__ import annotations

import functools

import numpy as np
import pytest

from tests.faulty_envs import SlowStepEnv
from vec_envs import SubprocVecEnv
from vec_envs.errors import EnvTimeoutError
from vec_envs.subproc.shared.spin import SPIN_MAX_S, SPIN_MIN_S, Spin
from vec_envs.workers.protocol import Command, StepRequest


# ---------------------------------------------------------------- Messenger.gather
def test_gather_hands_out_outcomes_in_the_order_asked_and_keeps_what_arrived_at_a_timeout(closing):
    slow_first = [functools.partial(SlowStepEnv, 0.4)] + [SlowStepEnv] * 2
    venv = closing(SubprocVecEnv(slow_first, in_series=1, step_in_parent=False))
    venv.reset()
    messenger = venv.messenger
    for w in range(3):
        messenger.send(w, Command.STEP, StepRequest([0], np.zeros(1, np.int64)))
    with pytest.raises(EnvTimeoutError, match=r"envs \[0\] \(workers \[0\]\) did not answer within 0.2 s"):
        messenger.gather([2, 0, 1], 0.2, "step")  # workers 1 and 2 answer at once, worker 0 late
    assert sorted(messenger.arrived([1, 2])) == [1, 2]
    outcomes = messenger.gather([0], None, "step")
    assert list(outcomes) == [0]
    assert outcomes[0].ok
    for w in (1, 0, 2):
        messenger.send(w, Command.GET_SPACES, None)
    spaces = messenger.gather([2, 1, 0], 10.0, "get_spaces")
    assert list(spaces) == [2, 1, 0]
    assert all(outcome.ok for outcome in spaces.values())


# ------------------------------------------------------------------------- spinning
def test_a_spin_learns_from_its_waits_at_the_next_budget():
    spin = Spin(enabled=True, thrifty=True)
    assert spin.budget() == SPIN_MIN_S
    for _ in range(40):
        spin.record(SPIN_MAX_S / 2)
    assert spin.budget() == pytest.approx(SPIN_MAX_S * 0.75, rel=0.05)  # 1.5 x the usual wait
    for _ in range(40):
        spin.record(10 * SPIN_MAX_S)  # waits that outlast any spin: a thrifty spin stops
    assert spin.budget() == 0.0
    for _ in range(40):
        spin.record(SPIN_MIN_S / 10)
    assert spin.budget() == SPIN_MIN_S
    assert Spin(enabled=False).budget() == 0.0
    unasked = Spin(enabled=True)
    for _ in range(10_000):  # nobody asks for a budget: the waits are learnt from anyway
        unasked.record(SPIN_MAX_S)
    assert len(unasked._unlearnt) < 100
