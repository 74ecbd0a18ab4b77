"""After an env fails in step / recv / reset, every backend refuses to go on until a reset.

Which envs advanced in the failed call differs by backend, so stepping on would give
backend-dependent trajectories: instead every call but ``reset`` / ``reset_async`` /
``async_reset`` / ``seed`` / ``set_options`` / ``close`` raises ``BrokenVecEnvError``
naming the env that failed and what to do, and a successful reset clears it.
"""
from __future__ import annotations

import functools
import time

import numpy as np
import pytest

from tests import backends
from tests.envs import FaultyEnv, SeededEnv
from tests.helpers import fns_with
from vec_envs import DummyVecEnv
from vec_envs.errors import BrokenVecEnvError, EnvWorkerError

N = 4
BACKENDS = [
    pytest.param(backends.dummy, id="dummy"),
    pytest.param(functools.partial(backends.subproc, in_series=1), id="subproc-series1"),
    pytest.param(functools.partial(backends.subproc, in_series="auto"), id="subproc-auto"),
    pytest.param(functools.partial(backends.ray, in_series=2), id="ray-series2", marks=backends.ray_marks),
]
BROKEN = r"{method}\(\) refused: env 2 raised in {failed}\(\) .*call reset\(\) to start every env afresh, or close\(\)"
#: the env's own exception (DummyVecEnv), or EnvWorkerError naming the env (worker backends)
ENV_FAILURE = (RuntimeError, EnvWorkerError)


def refused_calls(venv):
    """Every call that must be refused while the VecEnv is broken, by name."""
    zeros = np.zeros(N, np.int64)
    return {
        "step_async": lambda: venv.step(zeros),
        "recv": venv.recv,
        "send": lambda: venv.send(zeros, np.arange(N)),
        "reset_single_env": lambda: venv.reset_single_env(0),
        "get_states": venv.get_states,
    }


def check_refuses_until_reset(venv, failed):
    for method, call in refused_calls(venv).items():
        with pytest.raises(BrokenVecEnvError, match=BROKEN.format(method=method, failed=failed)) as info:
            call()
        assert (info.value.env_index, info.value.method, info.value.failed_method) == (2, method, failed)
    assert venv.num_envs == N  # attributes are still readable
    assert venv.action_space.n == 3
    assert len(venv.get_attr("t")) == N  # env access steps nothing: accepted, to look at or repair envs
    assert venv.env_is_wrapped(FaultyEnv, indices=[0]) in ([True], [False])


@pytest.mark.parametrize("make", BACKENDS)
def test_a_failed_step_refuses_everything_but_reset(make, closing):
    venv = closing(make(fns_with("step", n=N, at=2, after=1)))
    venv.reset()
    venv.step(np.zeros(N, np.int64))
    with pytest.raises(ENV_FAILURE, match="FaultyEnv fails in step"):
        venv.step(np.zeros(N, np.int64))
    check_refuses_until_reset(venv, "step")
    venv.seed(5)  # seed() and set_options() prepare the reset: accepted
    venv.set_options({})
    assert venv.reset().shape == (N, 3)
    venv.set_attr("after", 10**6, indices=2)  # reset cleared it: everything works again
    assert venv.step(np.zeros(N, np.int64))[1].tolist() == [1.0] * N


@pytest.mark.parametrize("make", BACKENDS)
def test_after_a_failed_step_every_env_restarts_from_its_reset(make, closing):
    """Whatever each backend did with the other envs in the failed step, after the reset
    every env's step count starts again from 0, the same on every backend."""
    venv = closing(make(fns_with("step", n=N, at=0, after=1)))
    venv.reset()
    venv.step(np.zeros(N, np.int64))
    with pytest.raises(ENV_FAILURE):
        venv.step(np.zeros(N, np.int64))
    with pytest.raises(BrokenVecEnvError, match=r"env 0 raised in step\(\)"):
        venv.step(np.zeros(N, np.int64))
    venv.reset()
    venv.set_attr("after", 10**6, indices=0)
    for _ in range(2):
        venv.step(np.zeros(N, np.int64))
    assert venv.get_attr("t") == [2] * N


@pytest.mark.parametrize("make", BACKENDS)
def test_a_failed_step_wait_refuses_until_reset_async(make, closing):
    venv = closing(make(fns_with("step", n=N, at=2, after=0)))
    venv.reset()
    venv.step_async(np.zeros(N, np.int64))
    with pytest.raises(ENV_FAILURE):
        venv.step_wait()
    with pytest.raises(BrokenVecEnvError, match=BROKEN.format(method="step_wait", failed="step")):
        venv.step_wait()
    if isinstance(venv, DummyVecEnv):  # in-process: reset() is its one way to reset
        venv.reset()
    else:
        venv.reset_async()
        venv.reset_wait()
    venv.set_attr("after", 10**6, indices=2)
    assert venv.step(np.zeros(N, np.int64))[1].tolist() == [1.0] * N


@pytest.mark.parametrize("make", BACKENDS)
def test_a_failed_recv_refuses_until_async_reset(make, closing):
    venv = closing(make(fns_with("step", n=N, at=2, after=0), batch_size=2))
    venv.async_reset()
    deadline = time.monotonic() + 60
    with pytest.raises(ENV_FAILURE, match="FaultyEnv fails in step"):
        while time.monotonic() < deadline:  # env 2's first step fails, whichever batch sends it
            env_ids = venv.recv()[4]
            venv.send(np.zeros(len(env_ids), np.int64), env_ids)
    check_refuses_until_reset(venv, "step")
    venv.async_reset()  # cleared: the round starts afresh
    assert len(venv.recv()[4]) == 2


@pytest.mark.parametrize("make", BACKENDS)
def test_a_failed_reset_refuses_until_a_reset_succeeds(make, closing):
    venv = closing(make([SeededEnv, SeededEnv, functools.partial(FaultyEnv, "reset"), SeededEnv]))
    with pytest.raises(ENV_FAILURE, match="FaultyEnv fails in reset"):
        venv.reset()
    with pytest.raises(BrokenVecEnvError, match=BROKEN.format(method="step_async", failed="reset")):
        venv.step(np.zeros(N, np.int64))
    with pytest.raises(ENV_FAILURE, match="FaultyEnv fails in reset"):
        venv.reset()  # still accepted; it fails again, and the VecEnv stays broken
    with pytest.raises(BrokenVecEnvError):
        venv.step(np.zeros(N, np.int64))


def test_restart_past_max_restarts_refuses_too(closing):
    venv = closing(backends.subproc(fns_with("step", n=N, at=2, after=0), in_series=1, on_error="restart",
                                    max_restarts=0))
    venv.reset()
    with pytest.raises(EnvWorkerError):
        venv.step(np.zeros(N, np.int64))
    with pytest.raises(BrokenVecEnvError, match=BROKEN.format(method="step_async", failed="step")):
        venv.step(np.zeros(N, np.int64))
