"""Under recv/send, ``on_error="restart"`` flags every env of the replaced worker, as
lock-step does: the envs in flight at once, and those that waited for their ``send`` at
their next row (done, reward 0, ``env_restarted``), never a silent new episode."""
from __future__ import annotations

import functools
import time

import numpy as np
import pytest

from tests import backends
from tests.envs import FaultyEnv, SeededEnv
from vec_envs.errors import NoAsyncCallError

N, WAIT_S = 4, 30.0
BACKENDS = [
    pytest.param(functools.partial(backends.subproc, in_series=2), id="subproc-series2"),
    pytest.param(functools.partial(backends.subproc, in_series=2, step_in_parent=True), id="subproc-in-parent"),
    pytest.param(functools.partial(backends.subproc, in_series=2, shared_memory=False), id="subproc-pipes"),
    pytest.param(functools.partial(backends.ray, in_series=2), id="ray", marks=backends.ray_marks),
]
FAULTS = ["step", "kill"]


def _fns(fault, failing):
    return [functools.partial(FaultyEnv, fault, after=2) if i == failing else SeededEnv for i in range(N)]


def _drive_holding(venv, held):
    """async_reset, then recv/send one env at a time, never sending ``held`` once it is
    returned, until an env's row says its worker was restarted; that row's env."""
    venv.async_reset()
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:  # a dead worker is seen within milliseconds, many rows later
        obs, rewards, dones, infos, env_ids = venv.recv(timeout=WAIT_S)
        i = int(env_ids[0])
        if infos[0].get("env_restarted"):
            return i
        if i != held:
            venv.send(np.zeros(1, np.int64), env_ids)
    raise AssertionError(f"no restart within {WAIT_S} s")


def _next_row_of(venv, env):
    """Send ``env`` its action, then recv (sending the others on) until its row comes."""
    venv.send(np.zeros(1, np.int64), np.array([env]))
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:  # the other envs may come back many times first (the parent's own: at once)
        obs, rewards, dones, infos, env_ids = venv.recv(timeout=WAIT_S)
        if int(env_ids[0]) == env:
            return rewards[0], dones[0], infos[0]
        venv.send(np.zeros(1, np.int64), env_ids)
    raise AssertionError(f"env {env} never came back")


@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize("make", BACKENDS)
def test_an_env_waiting_for_its_send_is_flagged_at_its_next_row(make, fault, closing):
    venv = closing(make(_fns(fault, failing=0), batch_size=1, on_error="restart"))
    assert _drive_holding(venv, held=1) == 0  # env 1 shares env 0's worker and waits meanwhile
    reward, done, info = _next_row_of(venv, 1)
    assert info.get("env_restarted") is True
    assert "error" in info
    assert done
    assert reward == 0.0


@pytest.mark.parametrize("make", BACKENDS)
def test_after_its_flagged_row_the_env_steps_its_new_episode(make, closing):
    venv = closing(make(_fns("step", failing=0), batch_size=1, on_error="restart"))
    _drive_holding(venv, held=1)
    _next_row_of(venv, 1)
    reward, done, info = _next_row_of(venv, 1)
    assert "env_restarted" not in info
    assert reward == 1.0
    assert not done


def _recv_the_rest(venv):
    """recv every env still in flight (without sending), so lock-step calls work again."""
    while True:
        try:
            venv.recv(timeout=WAIT_S)
        except NoAsyncCallError:
            return


@pytest.mark.parametrize("make", BACKENDS)
def test_a_lock_step_step_after_recv_flags_the_env_that_waited(make, closing):
    venv = closing(make(_fns("step", failing=0), batch_size=1, on_error="restart"))
    _drive_holding(venv, held=1)
    _recv_the_rest(venv)
    obs, rewards, dones, infos = venv.step(np.zeros(N, np.int64))
    assert infos[1].get("env_restarted") is True
    assert dones[1]
    assert rewards[1] == 0.0


@pytest.mark.parametrize("make", BACKENDS)
def test_a_reset_after_recv_owes_no_flag(make, closing):
    venv = closing(make(_fns("step", failing=0), batch_size=1, on_error="restart"))
    _drive_holding(venv, held=1)
    _recv_the_rest(venv)
    venv.reset()
    obs, rewards, dones, infos = venv.step(np.zeros(N, np.int64))
    assert "env_restarted" not in infos[1]
    assert not dones[1]
