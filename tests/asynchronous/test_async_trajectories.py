"""Under recv/send each env's trajectory equals its DummyVecEnv lock-step trajectory
(same seed, its own actions), across auto-resets, on every backend and batch size."""
from __future__ import annotations

import functools

import pytest

from tests.async_traces import assert_same_traces, async_traces, lockstep_traces
from tests.backends import BACKENDS
from tests.envs import DictObsEnv, SeededEnv
from vec_envs import DummyVecEnv

N, STEPS = 5, 12


def seeded_fns():
    """Episodes of 3..7 steps; env 1 ends by truncation."""
    return [functools.partial(SeededEnv, length=3 + i, truncate=i == 1) for i in range(N)]


def backends_and_batch_sizes():
    """Every backend with batch sizes 1, 2 (not a divisor of N) and N; Ray (a round trip
    of milliseconds per recv) with 2 only."""
    for param in BACKENDS:
        for batch_size in [2] if param.id.startswith("ray") else [1, 2, N]:
            yield pytest.param(param.values[0], batch_size, id=f"{param.id}-batch{batch_size}", marks=param.marks)


@pytest.mark.parametrize("make, batch_size", list(backends_and_batch_sizes()))
def test_each_env_follows_its_lockstep_trajectory(make, batch_size, closing):
    expected = lockstep_traces(closing(DummyVecEnv(seeded_fns())), STEPS, n_actions=3)
    venv = closing(make(seeded_fns(), batch_size=batch_size))
    assert_same_traces(async_traces(venv, STEPS, n_actions=3), expected)


@pytest.mark.parametrize("make", BACKENDS)
def test_lockstep_again_after_an_async_round(make, closing):
    """Once every env was returned, step()/reset() work again and start from there."""
    venv, reference = closing(make(seeded_fns(), batch_size=N)), closing(DummyVecEnv(seeded_fns(), batch_size=N))
    for v in (venv, reference):
        async_traces(v, 3, n_actions=3)
        v.recv()  # the last send is answered: nothing in flight
        assert len(v.step([0] * N)[0]) == N
    assert_same_traces(lockstep_traces(venv, 4, 3), lockstep_traces(reference, 4, 3))


@pytest.mark.parametrize("in_series", [2, 3])
def test_the_parents_own_slice_follows_its_lockstep_trajectory(in_series, closing):
    """step_in_parent under recv/send: the parent's slice (its terminal rows in shared
    memory) and the workers' give each env its lock-step trajectory, terminal observations
    included."""
    from vec_envs import SubprocVecEnv
    expected = lockstep_traces(closing(DummyVecEnv(seeded_fns())), STEPS, n_actions=3)
    venv = closing(SubprocVecEnv(seeded_fns(), in_series=in_series, step_in_parent=True, batch_size=2))
    assert_same_traces(async_traces(venv, STEPS, n_actions=3), expected)


def test_dict_observations_and_box_actions(closing):
    """Nested Dict / Tuple observations, Box actions: rows gathered per leaf."""
    fns = [functools.partial(DictObsEnv, length=2 + i) for i in range(3)]
    venv = closing(DummyVecEnv(fns, batch_size=2))
    venv.seed(0)
    venv.async_reset()
    obs, _, _, _, env_ids = venv.recv()
    assert obs["pos"].shape == (2, 2, 2)
    assert obs["nested"]["pair"][1].shape == (2, 2)
    venv.send([[0.5, 0.5], [0.0, 1.0]], env_ids)
    obs, rewards, _, _, env_ids = venv.recv()
    assert env_ids.tolist() == [2, 0]
    assert rewards.tolist() == [0.0, 1.0]


def test_round_robin_returns_the_envs_sent_longest_ago(closing):
    venv = closing(DummyVecEnv(seeded_fns(), batch_size=2))
    venv.async_reset()
    order = []
    for _ in range(5):
        env_ids = venv.recv()[4]
        order.append(env_ids.tolist())
        venv.send([0] * len(env_ids), env_ids[::-1])  # sent in this order
    assert order == [[0, 1], [2, 3], [4, 1], [0, 3], [2, 1]]
