"""recv/send under random inputs (hypothesis): batch sizes, env ids, timeouts, env outputs,
injected faults and restarts, on DummyVecEnv and SubprocVecEnv (shared memory or pipes).
Only documented errors come out, nothing hangs (a constructor timeout turns a hang into a
failure), and every env no fault touched has, row for row, its lock-step trajectory."""
from __future__ import annotations

import functools
import os
import signal

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.faulty_envs import BAD_STEP_OUTPUTS, OutputEnv
from vec_envs import DummyVecEnv, SubprocVecEnv
from vec_envs.errors import EnvTimeoutError, VecEnvError

pytestmark = pytest.mark.slow  # kills, interrupts or fuzzes worker processes many times over

N, ROUNDS, LENGTH, HANG_S = 4, 16, 3, 10.0
#: every error a user may see from bad input or a bad env; anything else is a bug
DOCUMENTED = (ValueError, TypeError, IndexError, VecEnvError)
BACKENDS = {
    "dummy": DummyVecEnv,
    "subproc-series1": functools.partial(SubprocVecEnv, in_series=1, context="fork", timeout=HANG_S),
    "subproc-series2": functools.partial(SubprocVecEnv, in_series=2, context="fork", timeout=HANG_S),
    "subproc-pipes": functools.partial(SubprocVecEnv, in_series=2, context="fork", shared_memory=False,
                                       timeout=HANG_S),
}
BAD_SENDS = ("not-returned", "twice", "out-of-range", "wrong-count", "float-ids")


class TracedEnv(OutputEnv):
    """Good steps say where the env is: obs (t, action), reward t + action, an info every
    other step, episodes of ``LENGTH`` steps. ``plan`` (by step since reset) injects a bad
    output by name (``BAD_STEP_OUTPUTS``) or "kill" (SIGKILL of the worker)."""

    def step(self, action):
        self.t += 1
        name = self.plan[self.t - 1] if self.t <= len(self.plan) else "good"
        if name == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        if name != "good":
            return BAD_STEP_OUTPUTS[name]
        obs = np.array([self.t, int(action)], np.uint8)
        return obs, float(self.t + int(action)), self.t >= LENGTH, False, {"t": self.t} if self.t % 2 else {}


def action(i, t):
    return (i + t) % 2


def lockstep_reference():
    """Each env's rows under DummyVecEnv lock-step, with the actions ``action(i, t)``."""
    with DummyVecEnv([TracedEnv] * N) as venv:
        obs = venv.reset()
        traces = [[row(obs[i], 0.0, False, venv.reset_infos[i])] for i in range(N)]
        for t in range(ROUNDS + 1):
            obs, rewards, dones, infos = venv.step(np.array([action(i, t) for i in range(N)]))
            for i in range(N):
                traces[i].append(row(obs[i], rewards[i], dones[i], infos[i]))
    return traces


def row(obs, reward, done, info):
    info = dict(info)
    terminal = info.pop("terminal_observation", None)
    return (obs.tolist(), float(reward), bool(done), None if terminal is None else terminal.tolist(), info)


REFERENCE = lockstep_reference()


def bad_send(kind, returned):
    """A send that must be refused (ValueError / TypeError / IndexError), by kind; ``returned``:
    the envs that wait for their send."""
    others = [i for i in range(N) if i not in returned]
    ids = {"not-returned": others[:1] or [returned[0], returned[0]], "twice": returned + returned[:1],
           "out-of-range": [N + 3], "wrong-count": returned, "float-ids": [float(i) + 0.5 for i in returned]}[kind]
    count = len(ids) + 1 if kind == "wrong-count" else len(ids)
    return np.zeros(count, np.int64), ids


@st.composite
def examples(draw, backend):
    is_dummy = backend == "dummy"
    faults = list(BAD_STEP_OUTPUTS) + ([] if is_dummy else ["kill"])
    fault = draw(st.one_of(st.none(), st.sampled_from(faults)))
    plan = ("good",) * draw(st.integers(0, 4)) + (() if fault is None else (fault,))
    return {
        "batch_size": draw(st.integers(1, N)),
        "on_error": "raise" if is_dummy else draw(st.sampled_from(["raise", "restart"])),
        "bad_env": draw(st.integers(0, N - 1)),
        "plan": plan,
        "timeouts": draw(st.lists(st.one_of(st.none(), st.just(0.0), st.floats(0.0, 0.05)), min_size=ROUNDS,
                                  max_size=ROUNDS)),
        "bad_sends": draw(st.lists(st.one_of(st.none(), st.sampled_from(BAD_SENDS)), min_size=ROUNDS,
                                   max_size=ROUNDS)),
        "holds": draw(st.lists(st.integers(0, N), min_size=ROUNDS, max_size=ROUNDS)),
        "park": draw(st.tuples(st.integers(0, N - 1), st.integers(0, LENGTH), st.integers(1, 8))),
    }


#: env 1 waits for its send, mid-episode, while env 0 fails (in its worker, with in_series=2), in most runs
SIBLING_WAITS_THROUGH_A_RESTART = {
    "batch_size": 1, "on_error": "restart", "bad_env": 0, "plan": ("good", "good", "reward-none"),
    "timeouts": [None] * ROUNDS, "bad_sends": [None] * ROUNDS, "holds": [0] * ROUNDS, "park": (1, 1, 5),
}


def attempt(call, *args, **kwargs):
    """``call(*args, **kwargs)``'s result, or the documented error it raised."""
    try:
        return call(*args, **kwargs)
    except DOCUMENTED as exc:
        return exc


def build(backend, ex):
    kwargs = {"batch_size": ex["batch_size"]}
    if backend != "dummy":
        kwargs.update(on_error=ex["on_error"], max_restarts=100)
    venv = BACKENDS[backend]([TracedEnv] * N, **kwargs)
    venv.set_attr("plan", ex["plan"], indices=ex["bad_env"])
    return venv


class Holder:
    """Which returned envs each round's send holds back: ``holds[r]`` of those just returned,
    for one round, and env ``park[0]`` from its row ``park[1]`` on, for ``park[2]`` rounds;
    never so many that fewer than ``batch_size`` envs stay in flight."""

    def __init__(self, ex, batch_size):
        self.holds, self.park, self.room = ex["holds"], ex["park"], N - batch_size
        self.short = []  # held for one round
        self.parked = None  # (env, the round it goes)

    def returned(self):
        """The envs held back: returned by recv, waiting for their send."""
        return self.short + ([] if self.parked is None else [self.parked[0]])

    def sending(self, r, env_ids, traces):
        """The envs to send in round ``r``; the others are held."""
        fresh, sending = env_ids.tolist(), self.short
        if self.parked is not None and r >= self.parked[1]:
            sending, self.parked = sending + [self.parked[0]], None
        env, row, rounds = self.park
        if self.parked is None and self.room and env in fresh and len(traces[env]) - 1 == row:
            fresh.remove(env)
            self.parked = (env, r + rounds)
        keep = max(0, min(self.holds[r], self.room - (self.parked is not None)))
        self.short = fresh[:keep]
        return np.array(sending + fresh[keep:], np.int64)


def drive(venv, ex):
    """recv/send for ``ROUNDS`` rounds; each env's rows, the envs a restart touched, and
    whether an error ended the round."""
    venv.async_reset()
    traces, touched, holder = [[] for _ in range(N)], set(), Holder(ex, venv.batch_size)
    for r, (timeout, bad) in enumerate(zip(ex["timeouts"], ex["bad_sends"])):
        got = attempt(venv.recv, timeout=timeout)
        if isinstance(got, EnvTimeoutError) and timeout is not None:
            continue  # a short wait: the envs stay in flight
        if isinstance(got, BaseException):
            assert not isinstance(got, EnvTimeoutError), f"a wait without a timeout hung: {got}"
            return traces, touched, got
        obs, rewards, dones, infos, env_ids = got
        for j, i in enumerate(env_ids.tolist()):
            if infos[j].get("env_restarted"):
                touched.add(i)
            traces[i].append(row(obs[j], rewards[j], dones[j], infos[j]))
        if bad is not None:
            refused = attempt(venv.send, *bad_send(bad, holder.returned() + env_ids.tolist()))
            assert isinstance(refused, (ValueError, TypeError, IndexError)), f"{bad} send: {refused!r}"
        sending = holder.sending(r, env_ids, traces)
        if len(sending):
            venv.send(np.array([action(i, len(traces[i]) - 1) for i in sending.tolist()]), sending)
    return traces, touched, None


def check_example(backend, ex):
    venv = build(backend, ex)
    try:
        traces, touched, error = drive(venv, ex)
        faulty = any(name != "good" for name in ex["plan"])
        if error is not None:
            assert faulty and ex["on_error"] == "raise", f"{error!r} with no fault to raise"
            return
        for i, trace in enumerate(traces):
            if i not in touched:
                assert trace == REFERENCE[i][:len(trace)], f"env {i} differs from lock-step"
    finally:
        venv.close()


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_random_recv_send_raises_only_documented_errors_and_keeps_trajectories(backend):
    @settings(max_examples=60, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow])
    @given(ex=examples(backend))
    def check(ex):
        check_example(backend, ex)

    if backend != "dummy":
        check = example(ex=SIBLING_WAITS_THROUGH_A_RESTART)(check)
    check()
