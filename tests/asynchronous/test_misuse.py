"""Misuse of recv/send raises at once, naming the envs: every backend."""
from __future__ import annotations

import functools
import time

import numpy as np
import pytest

from tests.backends import BACKENDS
from tests.envs import SeededEnv
from vec_envs import DummyVecEnv
from vec_envs.errors import (
    AlreadyPendingCallError,
    BrokenVecEnvError,
    ClosedEnvironmentError,
    NoAsyncCallError,
)

#: the checks live in VecEnvBase; one variant per way the hooks work (in series, per-env
#: slots in shared memory, one command per group of envs over pipes, Ray)
MISUSE_BACKENDS = [param for param in BACKENDS if param.id in ("dummy", "subproc-series2", "subproc-pipes",
                                                                "ray-series2")]
pytestmark = pytest.mark.parametrize("make", MISUSE_BACKENDS)

N = 3


def fns(n=N):
    return [functools.partial(SeededEnv, length=100) for _ in range(n)]


def started(make, closing, batch_size=2):
    """A venv after async_reset and one recv: envs ``returned`` wait for their send."""
    venv = closing(make(fns(), batch_size=batch_size))
    venv.async_reset()
    returned = venv.recv()[4]
    return venv, returned


@pytest.mark.parametrize("batch_size", [0, N + 1, 1.5, True, "2"])
def test_bad_batch_size(make, batch_size):
    with pytest.raises(ValueError, match=rf"batch_size must be an int in 1\.\.{N} \(num_envs\) or None, "
                                         rf"received {batch_size!r}"):
        make(fns(), batch_size=batch_size)


def test_recv_with_too_few_in_flight_raises_at_once(make, closing):
    venv = closing(make(fns(), batch_size=2))
    with pytest.raises(NoAsyncCallError, match=r"recv\(\) needs 2 envs in flight \(batch_size\), but 0 are"):
        venv.recv()
    venv.async_reset()
    returned = venv.recv()[4]
    start = time.monotonic()
    with pytest.raises(NoAsyncCallError, match=r"needs 2 envs in flight \(batch_size\), but 1 are \(\[\d\]\)"):
        venv.recv()
    assert time.monotonic() - start < 0.5
    venv.send([0, 0], returned)
    assert len(venv.recv()[4]) == 2  # the protocol goes on


def test_send_with_the_wrong_number_of_actions(make, closing):
    venv, returned = started(make, closing)
    with pytest.raises(ValueError, match=rf"send\(\): expected 2 actions \(one per env of env_ids "
                                         rf"\[{returned[0]}, {returned[1]}\]\), received 3"):
        venv.send([0, 0, 0], returned)
    with pytest.raises(ValueError, match=r"expected actions of shape \(2,\)"):
        venv.send(np.zeros((2, 2), np.int64), returned)


def test_send_to_an_env_in_flight_or_twice(make, closing):
    venv, returned = started(make, closing)
    (flying,) = set(range(N)) - set(returned.tolist())
    with pytest.raises(ValueError, match=rf"send\(\): envs \[{flying}\] were not returned by recv\(\) since "
                                         r"their last send \(in flight\)"):
        venv.send([0], [flying])
    venv.send([0], returned[:1])
    with pytest.raises(ValueError, match=rf"envs \[{returned[0]}\] were not returned by recv\(\)"):
        venv.send([0], returned[:1])  # twice
    venv.send([0], returned[1:])  # the other one is still fine


def test_send_with_bad_env_ids(make, closing):
    venv, returned = started(make, closing)
    with pytest.raises(ValueError, match=r"names envs \[\d\] more than once"):
        venv.send([0, 0], [returned[0], returned[0]])
    for bad in ([N], [-1], [[0, 1]], [0.5], "0", [[0], [0, 1]], np.array([2**63], np.uint64),
                np.array([True]), np.array([N], np.int8)):
        with pytest.raises(ValueError, match=rf"env_ids must be a 1-D sequence of env indices in 0\.\.{N - 1}"):
            venv.send([0], bad)
    venv.send(np.zeros(0, np.int64), [])  # nothing to send is fine
    venv.send([0, 0], np.asarray(returned, np.uint8))  # any int dtype
    assert len(venv.recv()[4]) == 2


def test_send_before_any_async_round(make, closing):
    venv = closing(make(fns(), batch_size=2))
    venv.reset()
    with pytest.raises(ValueError, match=r"envs \[0\] were not returned .*async_reset\(\) starts one"):
        venv.send([0], [0])


def test_lockstep_calls_while_envs_are_in_flight(make, closing):
    venv, returned = started(make, closing)
    for call in (venv.reset, lambda: venv.step([0] * N), lambda: venv.step_async([0] * N),
                 venv.async_reset, lambda: venv.reset_single_env(0), venv.get_states):
        with pytest.raises(AlreadyPendingCallError, match=r"called while envs \[\d\] are in flight"):
            call()
    venv.send([0, 0], returned)
    venv.recv()


def test_recv_and_send_while_a_lockstep_step_is_pending(make, closing):
    venv = closing(make(fns(), batch_size=2))
    venv.reset()
    venv.step_async([0] * N)
    with pytest.raises(AlreadyPendingCallError, match=r"recv\(\) called while step_async\(\) still waits"):
        venv.recv()
    with pytest.raises(AlreadyPendingCallError, match=r"send\(\) called while step_async\(\) still waits"):
        venv.send([0], [0])
    venv.step_wait()


def test_closed(make):
    venv = make(fns(), batch_size=2)
    venv.async_reset()
    venv.close()  # with envs in flight
    for call in (venv.async_reset, venv.recv, lambda: venv.send([0], [0])):
        with pytest.raises(ClosedEnvironmentError, match=r"called after close\(\)"):
            call()


def test_a_failed_recv_ends_the_round(make, closing):
    """After an env failed in recv, reset() works again (nothing is left in flight)."""
    from tests.helpers import fns_with

    venv = closing(make(fns_with("step", n=N, at=0, after=0), batch_size=N))
    venv.async_reset()
    venv.send([0] * N, venv.recv()[4])
    with pytest.raises(Exception, match="FaultyEnv fails in step"):
        venv.recv()
    with pytest.raises(BrokenVecEnvError, match=r"env 0 raised in step\(\).*call reset\(\)"):
        venv.send([0], [1])
    if isinstance(venv, DummyVecEnv):
        assert venv.reset().shape == (N, 3)
