"""A Ctrl-C at any moment of any call leaves a VecEnv working, or refusing with one clear
error until ``reset()`` (or ``close()``), on every backend; ``close()`` then returns within
about a second and leaves no process.

Each round drives a VecEnv (lock-step steps, or recv/send, now and then an env access)
while a timer sends SIGINT to the main thread at a random moment; whatever the moment,
the only errors allowed are the KeyboardInterrupt itself and ``BrokenVecEnvError`` saying
"call reset() ... or close()", and a reset after it must work.
"""
from __future__ import annotations

import functools
import importlib.util
import signal
import threading
import time

import numpy as np
import pytest

from tests import backends
from tests.envs import QuietEnv, SeededEnv
from tests.helpers import children
from vec_envs import DummyVecEnv, SubprocVecEnv
from vec_envs.errors import BrokenVecEnvError, NoAsyncCallError

pytestmark = pytest.mark.slow  # kills, interrupts or fuzzes worker processes many times over

N = 4
FIX = "call reset() to start every env afresh, or close()"


class InfoEvery5(SeededEnv):
    """A SeededEnv with a small info at every 5th step (and none otherwise)."""

    def step(self, action):
        obs, reward, terminated, truncated, _ = super().step(action)
        return obs, reward, terminated, truncated, ({"every5": self.t} if self.t % 5 == 0 else {})


def fns() -> list:
    """Envs with and without infos, episodes of different lengths."""
    return [functools.partial(InfoEvery5, length=7), functools.partial(QuietEnv, length=4),
            functools.partial(InfoEvery5, length=3), functools.partial(QuietEnv, length=9)]


def _ale(env_fns, **kwargs):
    from vec_envs import ALEVecEnv

    return ALEVecEnv("Pong", num_envs=N, **kwargs)


VARIANTS = [  # (id, factory, rounds)
    pytest.param(DummyVecEnv, 100, id="dummy"),
    pytest.param(functools.partial(SubprocVecEnv, in_series=2), 100, id="subproc-shm"),
    pytest.param(functools.partial(SubprocVecEnv, in_series="auto"), 100, id="subproc-shm-parent-slice"),
    pytest.param(functools.partial(SubprocVecEnv, in_series=2, shared_memory=False), 100, id="subproc-pipes"),
    pytest.param(functools.partial(backends.ray, in_series=2), 10, id="ray", marks=backends.ray_marks),
    pytest.param(_ale, 10, id="ale", marks=pytest.mark.skipif(importlib.util.find_spec("ale_py") is None,
                                                             reason="ale-py is not installed")),
]


def _drive(venv, rng: np.random.Generator, recv_send: bool) -> None:
    """A short stretch of calls: steps (now and then an env access), or recv and send."""
    for _ in range(int(rng.integers(3, 12))):
        if recv_send:
            env_ids = venv.recv()[4]
            venv.send(rng.integers(0, venv.action_space.n, len(env_ids)), env_ids)
        else:
            venv.step(rng.integers(0, venv.action_space.n, N))
            if rng.random() < 0.1:  # (an async round refuses env access: envs are in flight)
                venv.get_attr("spec", indices=[0])


def _start(venv, recv_send: bool) -> None:
    """Start every env afresh (a round of recv/send first takes back the envs in flight,
    as its contract asks, unless the VecEnv refuses: it was interrupted)."""
    if not recv_send:
        venv.reset()
        return
    try:
        while True:
            venv.recv()
    except (NoAsyncCallError, BrokenVecEnvError):
        pass
    venv.async_reset()


def _absorb_late_interrupts(seconds: float) -> None:
    """Let a SIGINT still on its way land here (a runtime that handles signals itself, as
    Ray's does once started in this process, may pass one on late)."""
    try:
        time.sleep(seconds)
    except KeyboardInterrupt:
        pass


def _one_round(venv, rng: np.random.Generator, recv_send: bool, window_s: float) -> tuple[bool, bool]:
    """Drive ``venv`` while a SIGINT comes at a random moment; then check it works or says
    what to do, and start it afresh. Whether the SIGINT was caught, and whether the VecEnv
    then refused (it landed inside a call that talks to the envs)."""
    target = threading.main_thread().ident
    timer = threading.Timer(rng.uniform(0.0, window_s), signal.pthread_kill, (target, signal.SIGINT))
    interrupted = refused = False
    try:
        timer.start()
        while timer.is_alive():  # calls until the SIGINT comes: it lands in one of them, or just after
            _drive(venv, rng, recv_send)
        timer.join()
        for _ in range(1000):
            pass
    except KeyboardInterrupt:
        interrupted = True
        timer.join()
    _absorb_late_interrupts(0.001)
    try:  # working, or refusing with the one error
        _drive(venv, rng, recv_send)
    except BrokenVecEnvError as exc:
        assert FIX in str(exc), str(exc)
        refused = True
    _start(venv, recv_send)  # a reset always works again
    return interrupted, refused


@pytest.mark.timeout(180)
@pytest.mark.parametrize("recv_send", [False, True], ids=["lock-step", "recv-send"])
@pytest.mark.parametrize("make, rounds", VARIANTS)
def test_a_ctrl_c_at_any_moment_leaves_the_vecenv_working_or_refusing_until_reset(make, rounds, recv_send):
    rng = np.random.default_rng(0)
    venv = make(fns(), batch_size=N // 2) if recv_send else make(fns())
    seen = {"interrupted": 0, "refused": 0}
    try:
        _start(venv, recv_send)
        start = time.perf_counter()
        _drive(venv, rng, recv_send)
        window = 2 * (time.perf_counter() - start)  # about a stretch's length: the SIGINT lands anywhere in it
        for _ in range(rounds):
            interrupted, refused = _one_round(venv, rng, recv_send, window)
            seen["interrupted"] += interrupted
            seen["refused"] += refused
    finally:
        _absorb_late_interrupts(0.2)
        closing = time.monotonic()
        venv.close()
        assert time.monotonic() - closing < 1.5
    assert seen["interrupted"] == rounds, seen  # every round's SIGINT came, and was the only error
    assert seen["refused"] > rounds // 4, seen  # many landed inside a call, not between calls
    assert not children(), [p.cmdline() for p in children()]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("shared_memory", [True, False], ids=["shm", "pipes"])
def test_a_ctrl_c_during_close_is_ended_by_the_next_close_within_a_second(shared_memory):
    rng = np.random.default_rng(1)
    interrupted = 0
    for _ in range(20):
        venv = SubprocVecEnv(fns(), in_series=2, shared_memory=shared_memory)
        venv.reset()
        venv.step(np.zeros(N, np.int64))
        timer = threading.Timer(rng.uniform(0.0, 0.01), signal.pthread_kill,
                                (threading.main_thread().ident, signal.SIGINT))
        try:
            timer.start()
            venv.close()
            timer.join()
            for _ in range(1000):
                pass
        except KeyboardInterrupt:
            interrupted += 1
            timer.join()
        start = time.monotonic()
        venv.close()
        assert time.monotonic() - start < 1.0
        assert not children(), [p.cmdline() for p in children()]
    assert interrupted > 0
