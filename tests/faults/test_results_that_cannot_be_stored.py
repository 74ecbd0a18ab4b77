"""A result an env returns that passes a type check but cannot be stored as it is (a
reward no float32 holds, an info whose methods raise, an info that cannot be pickled, a
complex observation) is that env's error on every backend, naming the env and the
method; no worker dies of it, and after a reset every env steps on in the same process."""
from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest

from tests import backends
from tests.helpers import env_failure
from tests.planted_envs import Planted, PlantedEnv
from vec_envs.errors import EnvWorkerError

N = 3
BACKENDS = [
    pytest.param(backends.dummy, id="dummy"),
    pytest.param(functools.partial(backends.subproc, in_series=1), id="subproc-lanes"),
    pytest.param(functools.partial(backends.subproc, in_series=1, shared_memory=False), id="subproc-pipes"),
]


@pytest.fixture(scope="module", params=BACKENDS)
def venv(request):
    made = request.param([functools.partial(PlantedEnv, i) for i in range(N)])
    made.reset()
    yield made
    made.close()


def step_with(venv, planted: Planted, env: int = 1):
    """One step in which env ``env`` returns ``planted``."""
    venv.set_attr("plan", {env: planted})
    return venv.step(np.zeros(N, np.int64))


def check_failure_of_env_1_in_step(venv, planted: Planted, error_class: str, message: str) -> None:
    """Env 1's step fails with ``error_class`` matching ``message``, its worker lives on,
    and after a reset every env steps again in the process it stepped in before."""
    pids = venv.env_method("pid")
    with pytest.raises(Exception) as info:
        step_with(venv, planted)
    cls, text, env, method = env_failure(info.value)
    assert cls == error_class
    assert message in text
    assert env in (1, None) and method in ("step", None)
    venv.reset()
    assert venv.env_method("pid") == pids  # no worker died or was replaced
    assert venv.step(np.zeros(N, np.int64))[1].tolist() == [1.0] * N


@pytest.mark.parametrize("reward", [2**2000, 10**39, 1e39, -1e39, np.float64(4e38), np.longdouble("1e400")],
                         ids=["int-2**2000", "int-10**39", "1e39", "-1e39", "float64-4e38", "longdouble-1e400"])
def test_a_reward_no_float32_holds_is_the_envs_error(venv, reward):
    check_failure_of_env_1_in_step(venv, Planted(reward=reward), "EnvOutputError",
                                   "expected a real number a float32 holds")


@pytest.mark.parametrize("reward", [float("inf"), -np.inf, float("nan"), np.float32(3.4028235e38)],
                         ids=["inf", "-inf", "nan", "float32-max"])
def test_infinite_nan_and_the_largest_float32_rewards_are_kept(venv, reward):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow on the way
        rewards = step_with(venv, Planted(reward=reward))[1]
    np.testing.assert_array_equal(rewards, np.array([1.0, reward, 1.0], np.float32))


@pytest.mark.parametrize(("reward", "stored"), [(np.True_, 1.0), (np.False_, 0.0), (np.array(True), 1.0),
                                                (True, 1.0)], ids=["np.True_", "np.False_", "0-d-bool", "True"])
def test_numpy_bools_count_as_rewards_one_and_zero(venv, reward, stored):
    assert step_with(venv, Planted(reward=reward))[1].tolist() == [1.0, stored, 1.0]


def test_an_info_whose_len_raises_is_the_envs_error(venv):
    check_failure_of_env_1_in_step(venv, Planted(info=("raising", "__len__", {"a": 1})), "RuntimeError",
                                   "info.__len__() raised on purpose")


@pytest.mark.parametrize("make", BACKENDS[1:])
def test_an_info_that_pickling_fails_on_names_the_env_and_the_worker_lives(make, closing):
    venv = closing(make([functools.partial(PlantedEnv, i) for i in range(N)]))
    venv.reset()
    pids = venv.env_method("pid")
    with pytest.raises(EnvWorkerError, match=r"the info env 1 returned from step\(\) cannot be pickled .*"
                                             r"RuntimeError: this value refuses to be pickled") as info:
        step_with(venv, Planted(info=("unpicklable",)))
    assert (info.value.env_index, info.value.method) == (1, "step")
    venv.reset()
    assert venv.env_method("pid") == pids


def test_a_complex_observation_with_an_imaginary_part_is_refused(venv):
    check_failure_of_env_1_in_step(venv, Planted(obs=("value", [1 + 2j, 3])), "ObservationError",
                                   "env 1 returned from step(): observation: value (1+2j) does not fit dtype float32")


def test_a_complex_observation_with_no_imaginary_part_is_stored_without_a_warning(venv):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no ComplexWarning: nothing is discarded
        obs = step_with(venv, Planted(obs=("array", [1 + 0j, 3], "complex128", "C")))[0]
    assert obs[1].tolist() == [1.0, 3.0]
