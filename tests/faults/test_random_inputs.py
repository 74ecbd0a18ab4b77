"""Random inputs and env outputs on every backend
(hypothesis), and create/step/close cycles with random faults that leave nothing behind
(100; ``VEC_ENVS_FAULT_CYCLES`` runs more; ``scripts/soak.py`` drives faults for longer)."""
from __future__ import annotations

import functools
import gc
import os
import random
import signal
import threading
import time
import warnings

import numpy as np
import psutil
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.backends import BACKENDS
from tests.faults.test_worker_faults import children
from tests.faulty_envs import BAD_STEP_OUTPUTS, OutputEnv, SlowStepEnv
from vec_envs import DummyVecEnv, SubprocVecEnv
from vec_envs.errors import BrokenVecEnvError, EnvTimeoutError, EnvWorkerError, VecEnvError

pytestmark = pytest.mark.slow  # kills, interrupts or fuzzes worker processes many times over

N = 4
CYCLES = int(os.environ.get("VEC_ENVS_FAULT_CYCLES", "100"))  # each fault 20 times, in random places
#: every error a user may see from bad input or a bad env; anything else is a bug
DOCUMENTED = (ValueError, TypeError, IndexError, VecEnvError)


@pytest.fixture(scope="module", params=BACKENDS)
def venv(request):
    """One VecEnv per backend (worker backends with a timeout: a hang fails the test, never blocks it)."""
    is_dummy = getattr(request.param, "func", request.param).__name__ == "dummy"
    made = request.param([OutputEnv] * N, **({} if is_dummy else {"timeout": 10.0}))
    yield made
    made.close()


def attempt(call):
    """``call()``'s result, or the documented error it raised; a hang or any other error fails."""
    try:
        return call()
    except EnvTimeoutError as exc:
        raise AssertionError(f"a call hung: {exc}") from exc
    except DOCUMENTED as exc:
        return exc


valid_actions = st.lists(st.integers(0, 1), min_size=N, max_size=N).map(lambda a: np.array(a, np.int64))
invalid_actions = st.one_of(
    st.lists(st.integers(0, 1), max_size=2 * N).filter(lambda a: len(a) != N),
    st.lists(st.floats(allow_nan=True), min_size=N, max_size=N),
    st.lists(st.integers(-2**70, 2**70), min_size=N, max_size=N).filter(lambda a: max(map(abs, a)) > 2**63),
    st.just({"a": [0] * N}), st.just([{"a": 0}] * N), st.none(), st.text(max_size=3), st.just([[0, 1]] * N),
)
indices = st.one_of(st.none(), st.integers(-2 * N, 2 * N), st.lists(st.integers(-N - 1, N), max_size=N + 1),
                    st.lists(st.booleans(), max_size=N + 1), st.floats(), st.just(slice(0, 2)), st.text(max_size=2),
                    st.lists(st.booleans(), min_size=N, max_size=N).map(np.array))
seeds = st.one_of(st.none(), st.integers(-5, 2**40), st.floats(), st.text(max_size=2),
                  st.lists(st.one_of(st.none(), st.integers(-1, 10), st.floats()), max_size=N + 1))
plans = st.lists(st.sampled_from(["good", *BAD_STEP_OUTPUTS]), max_size=3)


def check_names_the_env(error: BaseException, env: int) -> None:
    assert f"env {env}" in str(error), error
    if isinstance(error, EnvWorkerError):
        assert error.env_index == env
        assert error.method == "step"


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(plan=plans, bad_env=st.integers(0, N - 1), good=valid_actions, bad=invalid_actions, index=indices,
       seed=seeds)
def test_random_inputs_and_env_outputs_raise_only_documented_errors(venv, plan, bad_env, good, bad, index, seed):
    venv.set_attr("plan", tuple(plan), indices=bad_env)
    attempt(lambda: venv.seed(seed))
    assert not isinstance(attempt(venv.reset), BaseException)
    for k, name in enumerate(plan):
        result = attempt(lambda: venv.step(good))
        if name == "good":
            assert not isinstance(result, BaseException), result
        else:
            assert isinstance(result, BaseException), f"{name} was accepted"
            check_names_the_env(result, bad_env)
            assert isinstance(attempt(lambda: venv.step(good)), BrokenVecEnvError)  # only a reset goes on
            venv.set_attr("plan", tuple(plan[k + 1:]), indices=bad_env)  # the plan counts steps since reset
            assert not isinstance(attempt(venv.reset), BaseException)
    assert isinstance(attempt(lambda: venv.step(bad)), (ValueError, TypeError))
    for call in (lambda: venv.get_attr("t", indices=index), lambda: venv.env_method("reset", indices=index),
                 lambda: venv.reset_single_env(index)):
        attempt(call)
    venv.set_attr("plan", ())
    venv.reset()
    assert venv.step(good)[1].tolist() == [1.0] * N  # healthy after all of it


# ------------------------------------------------------------------ the stress test
class HangEnv(OutputEnv):
    """Hangs at step ``at`` (far past any timeout)."""

    def __init__(self, at: int = 1):
        super().__init__()
        self.at = at

    def step(self, action):
        if self.t + 1 == self.at:
            time.sleep(3600)
        return super().step(action)


FAULTS = ("none", "exception", "sigkill", "hang", "ctrl-c")


def build(rng: random.Random, fault: str):
    """A small VecEnv of 3 envs with ``fault`` planted in a random env."""
    at, bad = rng.randint(1, 3), rng.randrange(3)
    faulty = {"none": OutputEnv, "exception": functools.partial(OutputEnv, ("good",) * (at - 1) + ("reward-none",)),
              "sigkill": functools.partial(SlowStepEnv, kill_at=at), "hang": functools.partial(HangEnv, at),
              "ctrl-c": functools.partial(SlowStepEnv, 0.02)}[fault]
    fns = [faulty if i == bad else (functools.partial(SlowStepEnv, 0.02) if fault == "ctrl-c" else OutputEnv)
           for i in range(3)]
    if fault == "sigkill" or (fault != "hang" and rng.random() < 0.5):  # a kill would take pytest down
        return SubprocVecEnv(fns, in_series=rng.choice([2, 3]), context=rng.choice(["fork", "forkserver"]),
                             shared_memory=rng.random() < 0.8, timeout=0.3 if fault == "hang" else None,
                             step_in_parent=fault != "sigkill" and rng.random() < 0.5)
    if fault == "hang":
        venv = SubprocVecEnv(fns, in_series=rng.choice([2, 3]), context="fork", timeout=0.3)
        venv.close_timeout = 0.3  # the hung worker is killed after this
        return venv
    return DummyVecEnv(fns)


def cycle(rng: random.Random, fault: str) -> None:
    venv = build(rng, fault)
    venv.reset()
    try:
        if fault == "ctrl-c":
            interrupt_while_stepping(venv, rng.uniform(0.0, 0.05))
        else:
            for _ in range(4):
                venv.step(np.zeros(3, np.int64))
            assert fault == "none", f"{fault} went unnoticed"
    except (EnvWorkerError, EnvTimeoutError, TypeError):
        assert fault in ("exception", "sigkill", "hang")
    start = time.monotonic()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        venv.close()
    assert time.monotonic() - start < 1.5, f"close() took {time.monotonic() - start:.1f} s after {fault}"
    killed = [str(w.message) for w in caught if "were killed" in str(w.message)]
    assert bool(killed) == (fault == "hang"), (fault, killed)  # only the hung env's worker had to be killed


def interrupt_while_stepping(venv, delay: float) -> None:
    """A Ctrl-C (SIGINT to the main thread) ``delay`` s into a run of steps; the
    KeyboardInterrupt must come out of a VecEnv call."""
    timer = threading.Timer(delay, signal.pthread_kill, (threading.main_thread().ident, signal.SIGINT))
    try:
        timer.start()
        for _ in range(500):
            venv.step(np.zeros(3, np.int64))
        raise AssertionError("the Ctrl-C never came")
    except KeyboardInterrupt:
        pass
    finally:
        timer.join()


def snapshot() -> tuple[set, int, set, int]:
    """(child processes, open fds, /dev/shm entries, threads) of this process."""
    shm = set(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else set()
    return {p.pid for p in children()}, psutil.Process().num_fds(), shm, threading.active_count()


@pytest.mark.timeout(120)
def test_cycles_with_random_faults_leave_nothing_behind():
    rng = random.Random(13)
    for context in ("fork", "forkserver"):  # the forkserver, its resource tracker and the shared
        SubprocVecEnv([OutputEnv], context=context).close()  # heap start once and stay
    before = snapshot()
    for i in range(CYCLES):
        cycle(rng, FAULTS[i % len(FAULTS)])
    time.sleep(0.2)
    gc.collect()  # an error's traceback may hold a view of shared memory in a reference cycle
    after = snapshot()
    assert after[0] <= before[0], f"processes left: {after[0] - before[0]}"
    assert after[1] <= before[1], f"file descriptors: {before[1]} before, {after[1]} after"
    assert after[2] <= before[2], f"/dev/shm entries left: {after[2] - before[2]}"
    assert after[3] <= before[3], f"threads: {before[3]} before, {after[3]} after"
