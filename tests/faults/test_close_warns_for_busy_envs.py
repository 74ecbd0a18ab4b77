"""``close()`` with envs still stepping kills their workers and warns which envs it had to
kill, the same way on every path: lock-step and recv/send, with and without shared memory,
on every worker backend."""
from __future__ import annotations

import ast
import functools
import re
import time

import numpy as np
import pytest

from tests import backends
from tests.faulty_envs import SlowStepEnv

pytestmark = pytest.mark.slow  # kills, interrupts or fuzzes worker processes many times over

N = 4
BACKENDS = [
    pytest.param(functools.partial(backends.subproc, in_series=1), id="subproc-series1"),
    pytest.param(functools.partial(backends.subproc, in_series=2), id="subproc-series2"),
    pytest.param(functools.partial(backends.subproc, in_series=1, shared_memory=False), id="subproc-pipes"),
    pytest.param(functools.partial(backends.ray, in_series=1), id="ray", marks=backends.ray_marks),
]
KILLED = r"\.close\(\): envs (\[[\d, ]*\]) \(workers \[[\d, ]*\]\) were still busy after \d+\.\d s and were killed"


def _killed_envs(record):
    """The envs named by the one RuntimeWarning close() gave."""
    warned = [str(w.message) for w in record if issubclass(w.category, RuntimeWarning)]
    assert len(warned) == 1, warned
    found = re.search(KILLED, warned[0])
    assert found, warned[0]
    return set(ast.literal_eval(found.group(1)))


def _hanging(make):
    """Envs whose step never ends in time; none stepped in the parent."""
    subproc = getattr(make, "func", make) is backends.subproc
    return make([functools.partial(SlowStepEnv, 3600)] * N, batch_size=2,
                **({"step_in_parent": False} if subproc else {}))


@pytest.mark.parametrize("make", BACKENDS)
def test_close_warns_for_envs_in_flight_under_recv_send(make):
    venv = _hanging(make)
    venv.close_timeout = 1.0
    venv.async_reset()
    env_ids = venv.recv()[4]
    venv.send(np.zeros(2, np.int64), env_ids)
    time.sleep(0.2)  # inside env.step
    with pytest.warns(RuntimeWarning) as record:
        venv.close()
    killed = _killed_envs(record)
    assert set(env_ids.tolist()) <= killed


@pytest.mark.parametrize("make", BACKENDS)
def test_close_warns_for_envs_in_flight_in_lock_step(make):
    venv = _hanging(make)
    venv.close_timeout = 1.0
    venv.reset()
    venv.step_async(np.zeros(N, np.int64))
    with pytest.warns(RuntimeWarning) as record:
        venv.close()
    assert _killed_envs(record) == set(range(N))
