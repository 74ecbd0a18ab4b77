"""Faults under recv/send: errors name the env, restarts flag the envs, nothing hangs or leaks."""
from __future__ import annotations

import functools
import gc
import os
import time

import numpy as np
import pytest

from tests.backends import ray, ray_marks
from tests.helpers import alive, fns_with
from vec_envs import SubprocVecEnv
from vec_envs.errors import EnvTimeoutError, EnvWorkerError

SECONDS = 10  # an error must arrive well within this

#: worker backends, by how recv/send travel
VARIANTS = [
    pytest.param(functools.partial(SubprocVecEnv, in_series=2), id="subproc-slots"),
    pytest.param(functools.partial(SubprocVecEnv, in_series=2, shared_memory=False), id="subproc-pipes"),
]


def drive(venv, rounds, action=0):
    """async_reset, then recv/send ``rounds`` times; the rows of every recv."""
    venv.async_reset()
    batches = []
    for _ in range(rounds):
        obs, rewards, dones, infos, env_ids = venv.recv()
        batches.append((rewards, dones, infos, env_ids))
        venv.send(np.full(len(env_ids), action, np.int64), env_ids)
    return batches


@pytest.mark.parametrize("make", [*VARIANTS, pytest.param(functools.partial(ray, in_series=2), id="ray",
                                                          marks=ray_marks)])
def test_env_exception_names_the_env(make, closing):
    venv = closing(make(fns_with("step"), batch_size=2))
    start = time.monotonic()
    with pytest.raises(EnvWorkerError, match=r"env 2 \(worker 1\) raised in step\(\): RuntimeError: FaultyEnv "
                                             r"fails in step") as info:
        drive(venv, 2000)  # until env 2 has stepped 3 times: recv returns whichever envs finish first
    assert time.monotonic() - start < SECONDS
    assert (info.value.env_index, info.value.worker_index, info.value.method) == (2, 1, "step")
    assert "Traceback (most recent call last)" in info.value.remote_traceback
    venv.seed(0)
    assert venv.reset().shape == (4, 3)  # the round is over: lock-step works again


@pytest.mark.parametrize("fault,how", [("kill", "was killed by signal SIGKILL"), ("exit", "exited with code 7")])
def test_dead_worker_names_the_env_it_was_stepping(fault, how, closing):
    venv = closing(SubprocVecEnv(fns_with(fault, at=3), in_series=2, batch_size=2))
    pids = [w.process.pid for w in venv.workers]
    start = time.monotonic()
    with pytest.raises(EnvWorkerError, match=rf"worker 1 {how} while stepping env 3") as info:
        drive(venv, 10**5)  # the other worker's envs keep coming back meanwhile
    assert time.monotonic() - start < SECONDS
    assert (info.value.env_index, info.value.worker_index) == (3, 1)
    venv.close()
    assert not any(alive(pid) for pid in pids)


@pytest.mark.parametrize("make", VARIANTS)
def test_restart_flags_the_envs_in_flight(make, closing):
    venv = closing(make(fns_with("kill", after=3), on_error="restart", max_restarts=50, batch_size=2))
    restarted = []
    venv.async_reset()
    start = time.monotonic()
    while 2 not in restarted and time.monotonic() - start < SECONDS:
        obs, rewards, dones, infos, env_ids = venv.recv()
        for j, i in enumerate(env_ids.tolist()):
            if infos[j].get("env_restarted"):
                assert i in (2, 3)
                assert dones[j]
                assert rewards[j] == 0
                assert "killed by signal SIGKILL" in infos[j]["error"]
                restarted.append(i)
        venv.send(np.zeros(2, np.int64), env_ids)
    assert 2 in restarted
    assert venv.restarts >= 1
    for _ in range(20):  # and on it goes
        venv.send(np.zeros(2, np.int64), venv.recv()[4])


def test_recv_timeout_names_the_busy_envs_and_close_is_prompt(closing):
    venv = closing(SubprocVecEnv(fns_with("hang"), in_series=2, batch_size=4))
    pids = [w.process.pid for w in venv.workers]
    venv.async_reset()
    with pytest.raises(EnvTimeoutError, match=r"recv: envs \[2, 3\] did not finish within 1.0 s") as info:
        for _ in range(5):
            venv.send(np.zeros(4, np.int64), venv.recv(timeout=1.0)[4])
    assert info.value.env_indices == [2, 3]
    with pytest.raises(EnvTimeoutError):
        venv.recv(timeout=0)  # still in flight: a second recv is allowed (0: look once)
    start = time.monotonic()
    with pytest.warns(RuntimeWarning, match=r"close\(\): envs \[2, 3\] \(workers \[1\]\) were still busy"):
        venv.close()  # the hung env's worker is killed, and named
    assert time.monotonic() - start < SECONDS
    assert not any(alive(pid) for pid in pids)


def memfds():
    """This process's descriptors of shared-memory regions (anonymous memfds)."""
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}").startswith("/memfd:vec_envs"):
                found.append(fd)
        except OSError:
            pass  # the descriptor listdir itself used
    return found


@pytest.mark.parametrize("make", VARIANTS)
def test_close_with_envs_in_flight_leaves_nothing(make):
    gc.collect()  # regions earlier tests left in reference cycles (an error's traceback) go now, not mid-test
    before = memfds()
    venv = make(fns_with("step", after=10**6), batch_size=1)
    pids = [w.process.pid for w in venv.workers]
    venv.async_reset()
    venv.send([0], venv.recv()[4])  # every env in flight now
    start = time.monotonic()
    venv.close()
    assert time.monotonic() - start < SECONDS
    assert not any(alive(pid) for pid in pids)
    assert set(memfds()) <= set(before)  # unmapped, closed (the GC may close older ones)
