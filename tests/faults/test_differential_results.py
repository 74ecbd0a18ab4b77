"""Every backend gives the same outcome for whatever an env returns and whatever actions
it is sent (hypothesis, differential): the same rows bit for bit, or the same error class
with the same message naming the env and the method; no worker dies of a value an env
returned, and a refused action reaches no env.

The results cover Python and NumPy scalars of every kind, 0-d and 1-element arrays,
bools, huge and non-finite numbers, complex values, wrong dtypes, shapes and memory
layouts, and infos that are not dicts or whose methods raise. The backends: DummyVecEnv,
SubprocVecEnv with shared memory, with pipes, and with the C kernels off in its workers;
RayVecEnv on a smaller sample. ``VEC_ENVS_DIFFERENTIAL_EXAMPLES=2000`` runs a larger
sample by hand.
"""
from __future__ import annotations

import functools
import os
import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests import backends
from tests.helpers import env_failure
from tests.planted_envs import ACTION_SPACES, RAISING_INFOS, ActionEnv, Planted, PlantedEnv
from vec_envs import kernels
from vec_envs.errors import EnvWorkerError

pytestmark = pytest.mark.slow  # kills, interrupts or fuzzes worker processes many times over

N = 3
EXAMPLES = int(os.environ.get("VEC_ENVS_DIFFERENTIAL_EXAMPLES", "0")) or None
SETTINGS = settings(max_examples=EXAMPLES or 60, deadline=None, derandomize=EXAMPLES is None,
                    suppress_health_check=list(HealthCheck))
RAY_SETTINGS = settings(SETTINGS, max_examples=(EXAMPLES or 60) // 4)


def subproc_kernels_off(env_fns, **kwargs):
    """A SubprocVecEnv whose workers (spawned with ``VEC_ENVS_KERNELS=0``) run every fallback."""
    previous = os.environ.get(kernels.SWITCH)
    os.environ[kernels.SWITCH] = "0"
    try:
        return backends.subproc(env_fns, context="spawn", **kwargs)
    finally:
        if previous is None:
            del os.environ[kernels.SWITCH]
        else:
            os.environ[kernels.SWITCH] = previous


MAKERS = {
    "subproc-shared-memory": functools.partial(backends.subproc, in_series=2),
    "subproc-pipes": functools.partial(backends.subproc, in_series=2, shared_memory=False),
    "subproc-kernels-off": functools.partial(subproc_kernels_off, in_series=2),
}


@pytest.fixture(scope="module")
def planted_venvs():
    """DummyVecEnv (the reference) and the SubprocVecEnvs, each of N PlantedEnvs, with their worker pids."""
    made = {"dummy": backends.dummy([functools.partial(PlantedEnv, i) for i in range(N)])}
    made.update({name: make([functools.partial(PlantedEnv, i) for i in range(N)]) for name, make in MAKERS.items()})
    pids = {name: venv.env_method("pid") for name, venv in made.items()}
    yield made
    try:
        assert {name: venv.env_method("pid") for name, venv in made.items()} == pids, "a worker died or was replaced"
    finally:
        for venv in made.values():
            venv.close()


@pytest.fixture(scope="module")
def ray_venvs():
    made = {"dummy": backends.dummy([functools.partial(PlantedEnv, i) for i in range(N)]),
            "ray": backends.ray([functools.partial(PlantedEnv, i) for i in range(N)], in_series=2)}
    yield made
    for venv in made.values():
        venv.close()


# ------------------------------------------------------------------ what an env returns
NUMPY_SCALAR_TYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
                      np.float16, np.float32, np.float64, np.longdouble, np.complex64, np.complex128]
HUGE = [2**31, 2**53 + 1, 2**63, 2**64, 2**2000, -(2**70), 1e39, -1e39, 3.4028235e38, 3.5e38, 1e308, 5e-324,
        float("inf"), float("-inf"), float("nan")]


def numpy_scalar(value: float) -> st.SearchStrategy:
    """``value`` as a NumPy scalar of each type that can hold something of it."""
    def make(kind: type) -> object:
        try:
            with np.errstate(all="ignore"):
                return kind(value)
        except (OverflowError, ValueError, TypeError):  # inf, nan or too big for an int type
            return kind(0)
    return st.sampled_from(NUMPY_SCALAR_TYPES).map(make)


plain_numbers = st.one_of(st.booleans(), st.integers(-5, 5), st.floats(-10, 10), st.sampled_from(HUGE),
                          st.complex_numbers(max_magnitude=5))
numbers = st.one_of(plain_numbers, st.floats(-10, 10).flatmap(numpy_scalar), st.sampled_from(HUGE).flatmap(
    numpy_scalar), plain_numbers.map(lambda x: np.array(x)), plain_numbers.map(lambda x: np.array([x])))
rewards = st.one_of(numbers, st.none(), st.text(max_size=2), st.just([1.0, 2.0]), st.just(np.zeros((1, 1))))
flags = st.one_of(st.booleans(), st.sampled_from([np.True_, np.False_, np.array(True), np.array([False]), 0, 1, 2,
                                                  None, "yes", 1.0, np.int64(1), np.zeros(2, bool)]))
DTYPES = ["float16", "float32", "float64", "longdouble", "int8", "int32", "int64", "uint8", "uint64", "bool",
          "complex64", "complex128"]
LAYOUTS = ["C", "F", "strided", "readonly", "big-endian", "0-stride"]
observation_values = st.lists(st.one_of(st.floats(-100, 100), st.sampled_from(HUGE), st.integers(-3, 3),
                                        st.complex_numbers(max_magnitude=3)), min_size=1, max_size=3)
observations = st.one_of(
    st.just(("quiet",)),
    st.tuples(st.just("array"), observation_values, st.sampled_from(DTYPES), st.sampled_from(LAYOUTS)),
    st.tuples(st.just("value"), st.one_of(observation_values, numbers, st.none(), st.text(max_size=2),
                                          st.just([[1.0, 2.0]]), st.just({"a": 1}))),
)
info_values = st.one_of(st.integers(-3, 3), st.floats(allow_nan=False), st.text(max_size=3), st.none())
infos = st.one_of(
    st.tuples(st.just("dict"), st.dictionaries(st.text(max_size=3), info_values, max_size=3)),
    st.tuples(st.just("subclass"), st.dictionaries(st.text(max_size=3), info_values, max_size=2)),
    st.tuples(st.just("raising"), st.sampled_from(sorted(RAISING_INFOS)), st.just({"a": 1})),
    st.tuples(st.just("value"), st.one_of(st.none(), st.just([("a", 1)]), st.integers(), st.text(max_size=2),
                                          st.just(np.zeros(2)))),
)
planted = st.builds(Planted, obs=observations, reward=rewards, terminated=flags, truncated=flags, info=infos)


def outcome(venv, plan: dict[int, Planted], actions) -> tuple:
    """What one step with ``plan`` planted gives: the rows as bytes, or the error as
    ``(class, first line, env, method)``; the VecEnv is reset before and, after an error, after."""
    venv.reset()
    venv.set_attr("plan", plan)
    try:
        obs, rewards, dones, step_infos = venv.step(actions)
    except Exception as exc:  # every error is compared across backends
        venv.reset()
        if isinstance(exc, EnvWorkerError) and exc.remote_traceback is None:
            raise AssertionError(f"a worker died of a value its env returned: {exc}") from exc
        return ("error", *env_failure(exc))
    return ("rows", canonical(obs), canonical(rewards), canonical(dones), canonical(step_infos))


def canonical(value: object) -> object:
    """``value`` as something ``==`` compares bit for bit: arrays and NumPy scalars as
    ``(dtype, shape, bytes)``, floats by their bits (nan equals nan), containers item by item."""
    if isinstance(value, (np.ndarray, np.generic)):
        array = np.ascontiguousarray(value)
        return ("array", array.dtype.str, array.shape, array.tobytes())
    if isinstance(value, float):
        return ("float", struct.pack("<d", value))
    if isinstance(value, dict):
        return ("dict", type(value).__name__, sorted(((repr(k), canonical(v)) for k, v in value.items())))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [canonical(v) for v in value])
    return (type(value).__name__, value)


def same_outcome_everywhere(venvs: dict, plan: dict[int, Planted]) -> None:
    zeros = np.zeros(N, np.int64)
    results = {name: outcome(venv, plan, zeros) for name, venv in venvs.items()}
    reference = results.pop("dummy")
    for name, result in results.items():
        assert result == reference, f"{name} differs from DummyVecEnv for {plan}:\n{result[:5]}\n{reference[:5]}"


@SETTINGS
@given(env=st.integers(0, N - 1), result=planted)
def test_every_backend_stores_or_refuses_what_an_env_returns_alike(planted_venvs, env, result):
    same_outcome_everywhere(planted_venvs, {env: result})


@SETTINGS
@given(first=planted, second=planted)
def test_two_envs_returning_odd_results_in_one_step_give_the_same_outcome(planted_venvs, first, second):
    same_outcome_everywhere(planted_venvs, {0: first, 2: second})


@backends.needs_ray
@backends.uses_ray_runtime
@RAY_SETTINGS
@given(env=st.integers(0, N - 1), result=planted)
def test_ray_stores_or_refuses_what_an_env_returns_as_dummy_vec_env_does(ray_venvs, env, result):
    same_outcome_everywhere(ray_venvs, {env: result})


# ------------------------------------------------------------------ what the caller sends
ACTION_DTYPES = ["int8", "int64", "uint8", "uint64", "float32", "float64", "bool", "complex64", "object"]


@st.composite
def actions_for(draw: st.DrawFn, space_name: str) -> object:
    """Actions for N envs of ``space_name``: mostly the right shape, values in and out of range, any dtype."""
    space = ACTION_SPACES[space_name]
    shape = (N, *space.shape)
    shape = draw(st.sampled_from([shape, shape, shape, (N,), (N, 1), (N + 1, *space.shape), (N, 2, 2), ()]))
    values = draw(st.lists(st.one_of(st.integers(-3, 4), st.sampled_from([2**63, -(2**70), 0.5, float("nan"),
                                                                           1 + 1j, True])),
                           min_size=int(np.prod(shape)), max_size=int(np.prod(shape))))
    dtype = draw(st.sampled_from(ACTION_DTYPES))
    try:
        with np.errstate(all="ignore"):
            return np.array(values, dtype=dtype).reshape(shape) if draw(st.booleans()) else \
                np.array(values, dtype=object).reshape(shape).tolist()
    except (OverflowError, ValueError, TypeError):
        return np.array(values, dtype=object).reshape(shape)


@pytest.fixture(scope="module", params=sorted(ACTION_SPACES))
def action_venvs(request):
    name = request.param
    made = {"dummy": backends.dummy([functools.partial(ActionEnv, name)] * N)}
    made.update({key: make([functools.partial(ActionEnv, name)] * N) for key, make in MAKERS.items()
                 if key != "subproc-kernels-off"})
    for venv in made.values():
        venv.reset()
    yield name, made
    for venv in made.values():
        venv.close()


def sent(venv, actions) -> tuple:
    """What sending ``actions`` gives: the actions each env took, or the refusal (and then
    no env took any, and the VecEnv steps on)."""
    before = [list(taken) for taken in venv.get_attr("actions")]
    try:
        venv.step(actions)
    except Exception as exc:  # compared across backends
        after = venv.get_attr("actions")
        assert canonical(after) == canonical(before), f"{venv}: an env stepped on a refused action: {exc}: {after}"
        return ("refused", type(exc).__name__, str(exc))
    return ("taken", canonical([taken[len(old):] for taken, old in zip(venv.get_attr("actions"), before)]))


@SETTINGS
@given(data=st.data())
def test_every_backend_takes_or_refuses_an_action_alike_before_any_env_steps(action_venvs, data):
    name, venvs = action_venvs
    actions = data.draw(actions_for(name))
    results = {key: sent(venv, actions) for key, venv in venvs.items()}
    reference = results.pop("dummy")
    for key, result in results.items():
        assert result == reference, f"{key} differs from DummyVecEnv for {actions!r} ({name})"
    if reference[0] == "refused":
        assert "env" in reference[2] or "action" in reference[2], reference[2]
