"""A wrapper whose work is in ``step()`` is never passed through unprocessed: recv/send
never call ``step()``, so such a wrapper refuses asynchronous batches with an error naming
the class and the fix, on every backend; one that also follows ``env_ids`` is accepted."""
from __future__ import annotations

import functools

import numpy as np
import pytest

from tests import backends
from tests.envs import SeededEnv
from vec_envs import VecEnvWrapper
from vec_envs.wrappers import VecNormalize

N = 2
BACKENDS = [
    pytest.param(backends.dummy, id="dummy"),
    pytest.param(functools.partial(backends.subproc, in_series=1), id="subproc-series1"),
    pytest.param(functools.partial(backends.subproc, in_series=2), id="subproc-series2"),
    pytest.param(functools.partial(backends.subproc, in_series=1, shared_memory=False), id="subproc-pipes"),
    pytest.param(functools.partial(backends.ray, in_series=1), id="ray", marks=backends.ray_marks),
]
REFUSED = (r"DoubledInStep\.{method}\(\): DoubledInStep overrides step\(\), which recv\(\)/send\(\) never call, "
           r"so its work would be skipped on asynchronous batches; use reset\(\)/step\(\), or move the work to "
           r"step_wait\(\) \(step_async\(\) for actions\) and give DoubledInStep a recv\(\) \(send\(\)\)")


class DoubledInStep(VecEnvWrapper):
    def step(self, actions):
        obs, rewards, dones, infos = self.venv.step(actions)
        return obs, 2 * rewards, dones, infos


class NormalizedDoubledInStep(VecNormalize):
    def step(self, actions):
        obs, rewards, dones, infos = super().step(actions)
        return obs, 2 * rewards, dones, infos


class DoubledEverywhere(DoubledInStep):
    def recv(self, timeout=None):
        obs, rewards, dones, infos, env_ids = self.venv.recv(timeout)
        return obs, 2 * rewards, dones, infos, env_ids

    def send(self, actions, env_ids):
        self.venv.send(actions, env_ids)


@pytest.mark.parametrize("make", BACKENDS)
def test_a_wrapper_over_step_refuses_async_reset(make, closing):
    venv = closing(DoubledInStep(make([SeededEnv] * N)))
    with pytest.raises(NotImplementedError, match=REFUSED.format(method="async_reset")):
        venv.async_reset()


@pytest.mark.parametrize("make", BACKENDS)
def test_a_wrapper_over_step_refuses_recv(make, closing):
    inner = make([SeededEnv] * N)
    venv = closing(DoubledInStep(inner))
    inner.async_reset()  # started below the wrapper: recv through it is still refused
    with pytest.raises(NotImplementedError, match=REFUSED.format(method="recv")):
        venv.recv()


@pytest.mark.parametrize("make", BACKENDS)
def test_a_wrapper_over_step_still_steps(make, closing):
    venv = closing(DoubledInStep(make([SeededEnv] * N)))
    venv.reset()
    rewards = venv.step(np.zeros(N, np.int64))[1]
    assert rewards.tolist() == [2.0] * N


def test_a_subclass_of_a_recv_wrapper_over_step_refuses_async_reset(closing):
    venv = closing(NormalizedDoubledInStep(backends.dummy([SeededEnv] * N)))
    with pytest.raises(NotImplementedError, match=r"NormalizedDoubledInStep\.async_reset\(\): "
                                                  r"NormalizedDoubledInStep overrides step\(\)"):
        venv.async_reset()


@pytest.mark.parametrize("make", BACKENDS)
def test_a_wrapper_over_step_with_its_own_recv_and_send_is_accepted(make, closing):
    venv = closing(DoubledEverywhere(make([SeededEnv] * N)))
    venv.async_reset()
    env_ids = venv.recv()[4]
    venv.send(np.zeros(N, np.int64), env_ids)
    rewards = venv.recv()[1]
    assert rewards.tolist() == [2.0] * N
