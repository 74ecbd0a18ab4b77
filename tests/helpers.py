"""Helpers shared by the backend tests: faulty batches, traces to compare, process checks."""
from __future__ import annotations

import functools
import re
import sys
import time

import numpy as np
import psutil
import pytest

from tests.envs import FaultyEnv, SeededEnv
from vec_envs.errors import AlreadyPendingCallError, EnvTimeoutError, EnvWorkerError, NoAsyncCallError


def fns_with(fault, n=4, at=2, **kwargs):
    """n envs, env ``at`` faulty (two workers of two envs each with in_series=2)."""
    healthy = functools.partial(SeededEnv, render_mode="rgb_array")
    return [functools.partial(FaultyEnv, fault, **kwargs) if i == at else healthy for i in range(n)]


def step_until_error(venv, seconds, steps=10):
    """Step until the backend raises; the error must arrive within ``seconds``."""
    start = time.monotonic()
    with pytest.raises((EnvWorkerError, EnvTimeoutError)) as info:
        for _ in range(steps):
            venv.step(np.zeros(venv.num_envs, np.int64))
    assert time.monotonic() - start < seconds
    return info.value


def run_trace(venv, actions):
    """Seeded reset, then one step per row of ``actions``: everything a user can observe.
    Closes ``venv``."""
    with venv:
        venv.seed(123)
        trace = [venv.reset()]
        for action in actions:
            obs, rewards, dones, infos = venv.step(action)
            terminal = [(i, info["terminal_observation"], info["TimeLimit.truncated"])
                        for i, info in enumerate(infos) if "terminal_observation" in info]
            trace.append((obs, rewards, dones, terminal))
    return trace


def assert_same(a, b):
    """Equal values and dtypes, leaf by leaf, through dicts, tuples and lists."""
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for key in a:
            assert_same(a[key], b[key])
    elif isinstance(a, (tuple, list)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            assert_same(x, y)
    else:
        np.testing.assert_array_equal(a, b)
        assert np.asarray(a).dtype == np.asarray(b).dtype


def assert_same_step(got, want):
    """A gymnasium vector step equal to gymnasium's own, leaf by leaf. The VecEnv contract keeps
    truncated-and-terminated as terminated (TimeLimit.truncated is ``truncated and not
    terminated``): a CartPole pole falling on its time limit's last step."""
    obs, rewards, terminations, truncations, infos = got
    ref_obs, ref_rewards, ref_terminations, ref_truncations, ref_infos = want
    assert_same(obs, ref_obs)
    np.testing.assert_array_equal(rewards, ref_rewards)
    assert_same((terminations, truncations), (ref_terminations, ref_truncations & ~ref_terminations))
    assert_same(infos, ref_infos)


def alive(pid):
    """The process exists and is not a zombie."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def still_running(pids: list[int], seconds: float = 10.0) -> list[int]:
    """The pids still running (zombies aside) after waiting up to ``seconds`` for them to end."""
    deadline = time.monotonic() + seconds
    while True:
        left = [pid for pid in pids if alive(pid)]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


def check_hang_times_out_and_close_works(venv, seconds, all_gone):
    """A reset venv whose env 2 hangs (workers of two envs, timeout 1 s): the timeout names
    envs 2 and 3, a second wait is allowed, close() is prompt and ``all_gone()`` after."""
    err = step_until_error(venv, seconds)
    assert isinstance(err, EnvTimeoutError)
    assert err.env_indices == [2, 3]
    assert "envs [2, 3] (workers [1]) did not answer within 1.0 s" in str(err)
    with pytest.raises(EnvTimeoutError):
        venv.step_wait(timeout=0.2)  # still pending: a second wait is allowed
    start = time.monotonic()
    venv.close()
    assert time.monotonic() - start < seconds
    assert all_gone()


def check_lockstep_misuse(venv, n):
    """The misuse errors of step_async / step_wait / reset and of wrong action counts and shapes
    (``venv`` has ``n`` envs, Discrete actions, and was reset)."""
    with pytest.raises(NoAsyncCallError, match="no step_async"):
        venv.step_wait()
    venv.step_async(np.zeros(n, np.int64))
    with pytest.raises(AlreadyPendingCallError, match="step_wait"):
        venv.step_async(np.zeros(n, np.int64))
    with pytest.raises(AlreadyPendingCallError):
        venv.reset()
    venv.step_wait()
    with pytest.raises(ValueError, match=f"expected {n} actions .* received {n - 1}"):
        venv.step(np.zeros(n - 1, np.int64))
    with pytest.raises(ValueError, match=rf"expected actions of shape \({n},\).*received shape \({n}, 2\)"):
        venv.step(np.zeros((n, 2), np.int64))


SERVICES = ("forkserver", "resource_tracker", "ray")  # processes that outlive a VecEnv on purpose


def children() -> list[psutil.Process]:
    """This process's descendants, less the zombies and the services in ``SERVICES``."""
    found = []
    for process in psutil.Process().children(recursive=True):
        try:
            described = f"{process.name()} {' '.join(process.cmdline())}"  # (Ray renames its processes)
            if process.status() != psutil.STATUS_ZOMBIE and not any(service in described for service in SERVICES):
                found.append(process)
        except psutil.NoSuchProcess:
            pass  # ended while we looked
    return found


NOTE = re.compile(r"\(raised by env (\d+) in \w+, method (\w+)\)")
REMOTE = re.compile(r"^env (\d+) \(worker \d+\) raised in (\w+)\(\): (\w+): (.*)$")


def env_failure(error: BaseException) -> tuple[str, str, int | None, str | None]:
    """What an env's failure says on any backend, as ``(class, first line of the message,
    env index, method)``: the env's own exception with its note (in-process backends), or
    the one an ``EnvWorkerError`` carries (worker backends)."""
    if isinstance(error, EnvWorkerError):
        first = str(error).split("\n", 1)[0]
        match = REMOTE.match(first)
        assert match is not None, f"not an env's failure (a worker died?): {first}"
        assert (error.env_index, error.method) == (int(match[1]), match[2])
        return match[3], match[4], error.env_index, error.method
    first = str(error).split("\n", 1)[0]
    if sys.version_info < (3, 11):  # no exception notes: the env's exception goes as it is
        return type(error).__name__, first, None, None
    match = NOTE.search(" ".join(getattr(error, "__notes__", [])))
    assert match is not None, f"{type(error).__name__} names no env: {error!r}"
    return type(error).__name__, first, int(match[1]), match[2]
