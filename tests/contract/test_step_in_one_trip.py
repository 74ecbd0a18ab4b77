"""``step()`` in one trip: ``VecEnvBase.step`` runs ``step_async``'s and ``step_wait``'s
bodies itself unless a subclass overrides either (then it calls them), with every check
of ``step_async``, and a step past its timeout stays pending.
"""
from __future__ import annotations

import functools

import numpy as np
import pytest

from tests.envs import SeededEnv
from tests.faulty_envs import SlowStepEnv
from vec_envs import DummyVecEnv, SubprocVecEnv
from vec_envs.errors import AlreadyPendingCallError, ClosedEnvironmentError, EnvTimeoutError, NoAsyncCallError
from vec_envs.wrappers import VecNormalize

LEAN_BACKENDS = [
    pytest.param(DummyVecEnv, id="dummy"),
    pytest.param(functools.partial(SubprocVecEnv, in_series=4, step_in_parent=True), id="subproc-parent-only"),
    pytest.param(functools.partial(SubprocVecEnv, in_series=2), id="subproc-default"),
]


# ------------------------------------------------------------------ step() in one trip
class DoubledRewards(DummyVecEnv):
    """Overrides step_wait: step() must go through it."""

    def step_wait(self, timeout=None):
        obs, rewards, dones, infos = super().step_wait(timeout)
        return obs, rewards * 2, dones, infos


class CountedActions(DummyVecEnv):
    """Overrides step_async: step() must go through it."""

    calls = 0

    def step_async(self, actions):
        self.calls += 1
        super().step_async(actions)


def test_step_runs_in_one_trip_only_where_nothing_overrides_step_async_or_step_wait():
    assert DummyVecEnv._step_in_one
    assert SubprocVecEnv._step_in_one
    assert not DoubledRewards._step_in_one
    assert not CountedActions._step_in_one
    assert not VecNormalize._step_in_one  # a wrapper reshapes step_wait
    actions = np.ones(2, np.int64)
    with DummyVecEnv([SeededEnv] * 2) as plain, DoubledRewards([SeededEnv] * 2) as doubled, \
            CountedActions([SeededEnv] * 2) as counted:
        for venv in (plain, doubled, counted):
            venv.reset()
        assert plain.step(actions)[1].tolist() == [2.0, 2.0]  # action 1 + step 1
        assert doubled.step(actions)[1].tolist() == [4.0, 4.0]
        counted.step(actions)
        counted.step(actions)
        assert counted.calls == 2


@pytest.mark.parametrize("make", LEAN_BACKENDS)
def test_step_keeps_every_check_of_step_async(make, closing):
    venv = closing(make([SeededEnv] * 4))
    venv.reset()
    name = type(venv).__name__
    with pytest.raises(ValueError, match=r"step_async\(\): expected 4 actions \(one per env\), received 3"):
        venv.step([0, 1, 2])
    with pytest.raises(ValueError, match=r"step_async\(\): .*cannot be cast"):
        venv.step(np.full(4, 0.5))
    venv.step_async(np.zeros(4, np.int64))
    with pytest.raises(AlreadyPendingCallError, match=rf"{name}.step_async\(\) called while step_async\(\) still "
                                                      r"waits for its step_wait\(\)"):
        venv.step(np.zeros(4, np.int64))
    assert venv.step_wait()[1].shape == (4,)
    assert venv.step(np.zeros(4, np.int64))[1].tolist() == [2.0] * 4  # the refused calls stepped nothing
    venv.close()
    with pytest.raises(ClosedEnvironmentError, match=rf"{name}.step_async\(\) called after close\(\)"):
        venv.step(np.zeros(4, np.int64))


@pytest.mark.parametrize("make", [pytest.param(DummyVecEnv, id="dummy"),
                                  pytest.param(functools.partial(SubprocVecEnv, in_series=2), id="subproc")])
def test_step_refuses_while_envs_are_in_flight_and_names_them(make, closing):
    venv = closing(make([SeededEnv] * 4, batch_size=2))
    venv.async_reset()
    env_ids = venv.recv()[4]
    in_flight = sorted(set(range(4)) - set(env_ids.tolist()))
    with pytest.raises(AlreadyPendingCallError, match=rf"step_async\(\) called while envs {in_flight} are in flight"
                                                      .replace("[", r"\[").replace("]", r"\]")):
        venv.step(np.zeros(4, np.int64))
    venv.send(np.zeros(2, np.int64), env_ids)


def test_a_step_that_times_out_stays_pending_and_a_refused_one_leaves_nothing_pending(closing):
    # (the timeout bounds every wait, the workers' start too: long enough for a start on a busy machine)
    venv = closing(SubprocVecEnv([functools.partial(SlowStepEnv, 1.0)] * 2, in_series=1, timeout=0.5))
    venv.reset()
    with pytest.raises(EnvTimeoutError, match=r"envs \[0, 1\] \(workers \[0, 1\]\) did not answer within 0.5 s"):
        venv.step(np.zeros(2, np.int64))
    assert venv.step_wait(timeout=5.0)[1].tolist() == [1.0, 1.0]  # still pending: waited for again
    with pytest.raises(ValueError, match="expected 2 actions"):
        venv.step([0])
    with pytest.raises(NoAsyncCallError, match=r"step_wait\(\) called with no step_async\(\) pending"):
        venv.step_wait()
