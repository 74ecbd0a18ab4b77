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
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.faulty_envs import BAD_STEP_OUTPUTS, OutputEnv
from vec_envs import DummyVecEnv, SubprocVecEnv
from vec_envs.errors import EnvTimeoutError, VecEnvError

N, ROUNDS, LENGTH, HANG_S = 4, 12, 3, 10.0
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


def drive(venv, ex):
    """recv/send for ``ROUNDS`` rounds; each env's rows, the envs a restart touched, and
    whether an error ended the round."""
    venv.async_reset()
    traces, touched, held = [[] for _ in range(N)], set(), np.zeros(0, np.int64)
    for timeout, bad, hold in zip(ex["timeouts"], ex["bad_sends"], ex["holds"]):
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
            refused = attempt(venv.send, *bad_send(bad, held.tolist() + env_ids.tolist()))
            assert isinstance(refused, (ValueError, TypeError, IndexError)), f"{bad} send: {refused!r}"
        keep = min(hold, N - venv.batch_size)  # held back from this send: still enough envs in flight
        sending = np.concatenate([held, env_ids[keep:]])
        held = env_ids[:keep]
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

    check()
