"""The env lanes under the plan ``in_series="auto"`` makes, and recv/send's quiet batches.

Lock-step with a slice stepped in the parent: the parent's own slice is one more worker
with lanes; every env is requested with one number, and the parent serves its own
lanes while the workers step theirs, with the results of stepping every env in process,
the parent's infos included. A per-call timeout stops the parent's slice between two of
its envs. recv/send: a batch where no env said anything comes back with each ended
env's terminal observation in its own row's info.
"""
from __future__ import annotations

import functools

import numpy as np
import pytest

from tests.envs import QuietEnv, SeededEnv
from tests.helpers import assert_same, run_trace
from vec_envs import DummyVecEnv, SubprocVecEnv
from vec_envs.workers.worker import LocalWorker

N = 4


def with_parent_slice(fns, **kwargs):
    """Envs 0-1 in a worker, envs 2-3 stepped by the parent."""
    return SubprocVecEnv(fns, in_series=2, step_in_parent=True, **kwargs)


def quiet_fns():
    return [functools.partial(QuietEnv, length=2 + i) for i in range(N)]


def test_one_request_goes_to_every_env_and_the_parent_serves_its_own_lanes(closing):
    venv = closing(with_parent_slice(quiet_fns()))
    assert type(venv.scheduler).__name__ == "LaneScheduler"
    assert isinstance(venv.workers[-1], LocalWorker) and venv.workers[-1].first_index == 2
    venv.reset()
    before = venv._lanes.requested.copy()
    venv.step(np.zeros(N, np.int64))
    after, answered = venv._lanes.requested, venv._lanes.answered
    assert len(set(after.tolist())) == 1 and after[0] > before[0]  # one new number for the whole batch
    assert (answered >> 1).tolist() == after.tolist()  # every env answered it, the parent's own too


def test_quiet_envs_give_the_trace_of_in_process_stepping():
    actions = np.random.default_rng(0).integers(0, 3, (15, N))
    assert_same(run_trace(with_parent_slice(quiet_fns()), actions), run_trace(DummyVecEnv(quiet_fns()), actions))


def test_infos_from_the_workers_and_from_the_parents_slice_are_those_of_in_process_stepping(closing):
    fns = [functools.partial(SeededEnv, length=3 + i) for i in range(N)]
    ours, reference = closing(with_parent_slice(fns)), closing(DummyVecEnv(fns))
    for venv in (ours, reference):
        venv.seed(7)
        venv.reset()
    for step in range(12):
        actions = np.full(N, step % 3, np.int64)
        _, rewards, dones, infos = ours.step(actions)
        _, expected_rewards, expected_dones, expected_infos = reference.step(actions)
        assert_same(infos, expected_infos)
        assert rewards.tolist() == expected_rewards.tolist()
        assert dones.tolist() == expected_dones.tolist()
        assert ours.reset_infos == reference.reset_infos


@pytest.mark.parametrize("parent_slice", [False, True], ids=["workers only", "with the parent's slice"])
def test_recv_returns_each_ended_env_with_its_own_terminal_observation(parent_slice, closing):
    make = with_parent_slice if parent_slice else functools.partial(SubprocVecEnv, in_series=2)
    venv = closing(make(quiet_fns(), batch_size=2))
    references = quiet_fns()
    envs = [make() for make in references]
    venv.seed(3)
    venv.async_reset()
    last = {i: env.reset(seed=3 + i)[0] for i, env in enumerate(envs)}
    fresh = set(range(N))  # an env's first row after async_reset carries its reset info
    ended = 0
    for _ in range(30):
        obs, _, dones, infos, env_ids = venv.recv()
        for row, i in enumerate(env_ids.tolist()):
            if dones[row]:
                ended += 1
                np.testing.assert_array_equal(infos[row]["terminal_observation"], last[i])
                last[i] = envs[i].reset()[0]
            elif i not in fresh:
                assert infos[row] == {}
            fresh.discard(i)
            np.testing.assert_array_equal(obs[row], last[i])
        actions = np.ones(len(env_ids), np.int64)
        for i in env_ids.tolist():
            last[i] = envs[i].step(1)[0]
        venv.send(actions, env_ids)
    assert ended >= 10
