"""The same bad call raises the same error class, with the same message, on every backend.

Each message names the argument, the value received and what was expected; after the
refusal the VecEnv is as before the call (a pending step or reset can still finish).
"""
from __future__ import annotations

import functools
import importlib.util

import numpy as np
import pytest

from tests import backends
from tests.envs import SeededEnv
from vec_envs import ALEVecEnv

N = 4


def ale(env_fns, **kwargs):
    return ALEVecEnv("Pong", len(env_fns), **kwargs)


needs_ale = pytest.mark.skipif(importlib.util.find_spec("ale_py") is None, reason="ale-py is not installed")

BACKENDS = [
    pytest.param(backends.dummy, id="dummy"),
    pytest.param(functools.partial(backends.subproc, in_series=1), id="subproc-series1"),
    pytest.param(functools.partial(backends.subproc, in_series="auto"), id="subproc-auto"),
    pytest.param(functools.partial(backends.ray, in_series=2), id="ray-series2", marks=backends.ray_marks),
    pytest.param(ale, id="ale", marks=needs_ale),
]
WORKER_BACKENDS = [param for param in BACKENDS if param.id.startswith(("subproc", "ray"))]

TIMEOUT = r"timeout must be a number of seconds >= 0 or None \(no limit\), received "
BAD_TIMEOUTS = [
    pytest.param(float("nan"), ValueError, TIMEOUT + "nan", id="nan"),
    pytest.param(-1, ValueError, TIMEOUT + "-1$", id="negative"),
    pytest.param("5", TypeError, TIMEOUT + r"'5' \(str\)", id="str"),
]


@pytest.fixture(scope="module", params=BACKENDS)
def venv(request):
    """One VecEnv per backend for the whole module: every case leaves it usable."""
    made = request.param([functools.partial(SeededEnv, length=1000, render_mode="rgb_array")] * N)
    yield made
    made.close()


@pytest.mark.parametrize(("timeout", "error", "message"), BAD_TIMEOUTS)
def test_step_wait_timeout(venv, timeout, error, message):
    venv.reset()
    venv.step_async(np.zeros(N, np.int64))
    with pytest.raises(error, match=r"step_wait\(\): " + message):
        venv.step_wait(timeout=timeout)
    assert venv.step_wait()[0].shape[0] == N  # the step is still pending, and finishes


@pytest.mark.parametrize(("timeout", "error", "message"), BAD_TIMEOUTS)
def test_recv_timeout(venv, timeout, error, message):
    venv.async_reset()
    with pytest.raises(error, match=r"recv\(\): " + message):
        venv.recv(timeout=timeout)
    assert sorted(venv.recv()[4].tolist()) == list(range(N))  # the envs are still in flight


@pytest.mark.parametrize(("timeout", "error", "message"), BAD_TIMEOUTS)
@pytest.mark.parametrize("make", WORKER_BACKENDS)
def test_reset_wait_timeout(make, timeout, error, message, closing):
    venv = closing(make([SeededEnv] * N))
    venv.reset_async()
    with pytest.raises(error, match=r"reset_wait\(\): " + message):
        venv.reset_wait(timeout=timeout)
    assert venv.reset_wait().shape == (N, 3)


@pytest.mark.parametrize(("indices", "error", "message"), [
    pytest.param(1.5, TypeError, r"get_attr\(\): indices must be None, an int, .* received 1.5 \(float\)",
                 id="float"),
    pytest.param([7], IndexError, r"get_attr\(\): env index 7 is out of range for 4 envs \(valid: 0..3\)",
                 id="out-of-range"),
    pytest.param([True], ValueError, r"get_attr\(\): a boolean mask of indices needs 4 entries .* received 1",
                 id="short-mask"),
])
def test_indices(venv, indices, error, message):
    venv.reset()
    with pytest.raises(error, match=message):
        venv.get_attr("render_mode", indices=indices)


@pytest.mark.parametrize(("env_ids", "message"), [
    pytest.param([99], r"send\(\): env_ids must be .*received \[99\]", id="out-of-range"),
    pytest.param([0, 0], r"send\(\): env_ids names envs \[0\] more than once", id="repeated"),
    pytest.param([[0, 1], [2]], r"send\(\): env_ids must be .*received \[\[0, 1\], \[2\]\]", id="ragged"),
])
def test_send_env_ids(venv, env_ids, message):
    venv.async_reset()
    returned = venv.recv()[4]
    with pytest.raises(ValueError, match=message):
        venv.send(np.zeros(2, np.int64), env_ids)
    venv.send(np.zeros(N, np.int64), returned)  # the returned envs still await their send
    assert sorted(venv.recv()[4].tolist()) == list(range(N))


@pytest.mark.parametrize(("actions", "message"), [
    pytest.param(np.zeros((N, 2), np.int64), r"step_async\(\): expected actions of shape \(4,\) .*received "
                 r"shape \(4, 2\)", id="wrong-shape"),
    pytest.param(np.zeros(N - 1, np.int64), r"step_async\(\): expected 4 actions .*received 3", id="too-few"),
    pytest.param(np.full(N, 0.5), r"step_async\(\): actions of dtype float64 cannot be cast safely", id="float"),
])
def test_actions(venv, actions, message):
    venv.reset()
    with pytest.raises(ValueError, match=message):
        venv.step(actions)
    assert venv.step(np.zeros(N, np.int64))[1].shape == (N,)  # nothing was left pending


@pytest.mark.parametrize(("seed", "error", "message"), [
    pytest.param(-1, ValueError, r"seed\(\): seed must be an int >= 0 or None, received -1", id="negative"),
    pytest.param(1.5, TypeError, r"seed\(\): seed must be an int >= 0 or None, received 1.5 \(float\)",
                 id="float"),
    pytest.param([1, 2], ValueError, r"seed\(\): expected 4 seeds \(one per env\), received 2", id="too-few"),
    pytest.param([0, 1, "2", 3], TypeError, r"seed\(\): seed\[2\] must be an int >= 0 or None, received '2'",
                 id="str-entry"),
])
def test_seeds(venv, seed, error, message):
    with pytest.raises(error, match=message):
        venv.seed(seed)


@pytest.mark.parametrize("batch_size", [0, N + 1, 2.5, "2"])
@pytest.mark.parametrize("make", BACKENDS)
def test_batch_size(make, batch_size):
    with pytest.raises(ValueError, match=rf"batch_size must be an int in 1..4 \(num_envs\) or None, "
                                         rf"received {batch_size!r}"):
        make([SeededEnv] * N, batch_size=batch_size)
