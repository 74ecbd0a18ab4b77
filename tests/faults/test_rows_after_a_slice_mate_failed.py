"""Two envs in one worker, one raises, the worker is replaced (``on_error="restart"``):
the rows are the same through shared memory, the pipes and Ray, in every autoreset mode.
Under next-step and disabled the other env's row at that step is its step's observation
(a worker's serving goes on past a failed env); the replaced worker's envs restart
unseeded, so their observations after it are their own."""
from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest

from tests.backends import ray, ray_marks, subproc
from tests.helpers import fns_with

TRANSPORTS = [
    pytest.param(functools.partial(subproc, in_series=2, step_in_parent=False), id="shm"),
    pytest.param(functools.partial(subproc, in_series=2, shared_memory=False), id="pipes"),
    pytest.param(functools.partial(ray, in_series=2), id="ray", marks=ray_marks),
]
MODES = ["same_step", "next_step", "disabled"]


def rows(make, mode):
    """Five steps where env 3 raises at its third; the rows of every step, flags and all."""
    venv = make(fns_with("step", at=3, after=2), on_error="restart", autoreset_mode=mode)
    with venv:
        venv.seed(11)
        trace = [venv.reset()]
        for t in range(5):
            obs, rewards, dones, infos = venv.step(np.full(4, t % 3, np.int64))
            trace.append((obs, rewards, dones, [sorted(info) for info in infos]))
            if mode == "disabled" and dones.any():
                trace.append(venv.reset_envs(dones, seed=100 + t))
    return trace


CRASH = 3  # the trace's entry of the step where env 3 raises (its third)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("make", TRANSPORTS[1:])
def test_the_rows_do_not_depend_on_the_transport(make, mode):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the restart's warning (tests/faults/test_restart_warns.py)
        reference = rows(TRANSPORTS[0].values[0], mode)
        got = rows(make, mode)
    assert len(got) == len(reference)
    for want, have in zip(reference, got):
        if not isinstance(want, tuple):  # the seeded reset_envs of disabled
            np.testing.assert_array_equal(want, have)
            continue
        np.testing.assert_array_equal(want[0][:2], have[0][:2])  # the other worker's envs
        for want_part, have_part in zip(want[1:3], have[1:3]):  # rewards, dones
            np.testing.assert_array_equal(want_part, have_part)
        assert want[3] == have[3]  # the infos' keys
    if mode != "same_step":  # env 2 stepped before env 3 raised: its row is that step's
        np.testing.assert_array_equal(reference[CRASH][0][2], got[CRASH][0][2])
        assert reference[CRASH][2][2:].tolist() == [True, True]
