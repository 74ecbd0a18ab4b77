"""Every SubprocVecEnv variant gives bit-identical results to DummyVecEnv."""
from __future__ import annotations

import functools

import gymnasium as gym
import numpy as np
import pytest

from tests.backends import BACKENDS
from tests.envs import DictObsEnv
from tests.helpers import assert_same, run_trace
from vec_envs import DummyVecEnv

pytestmark = pytest.mark.slow  # starts Ray or compares every backend over many steps

WORKER_BACKENDS = [p for p in BACKENDS if p.id != "dummy"]
STEPS = 1000


def compare(reference, trace):
    assert len(reference) == len(trace)
    assert_same(reference[0], trace[0])
    episode_ends = 0
    for (obs_a, rew_a, done_a, term_a), (obs_b, rew_b, done_b, term_b) in zip(reference[1:], trace[1:]):
        assert_same(obs_a, obs_b)
        assert_same(rew_a, rew_b)
        assert_same(done_a, done_b)
        assert [(i, t) for i, _, t in term_a] == [(i, t) for i, _, t in term_b]
        for (_, obs_x, _), (_, obs_y, _) in zip(term_a, term_b):
            assert_same(obs_x, obs_y)
        episode_ends += len(term_a)
    return episode_ends


@pytest.mark.parametrize("make", WORKER_BACKENDS)
def test_cartpole_1000_steps_bit_identical(make):
    fns = [lambda: gym.make("CartPole-v1")] * 5
    actions = np.random.default_rng(0).integers(0, 2, (STEPS, 5))
    reference = run_trace(DummyVecEnv(fns), actions)
    assert compare(reference, run_trace(make(fns), actions)) > 100  # many auto-resets were compared


@pytest.mark.parametrize("make", WORKER_BACKENDS)
def test_dict_observations_1000_steps_bit_identical(make):
    fns = [functools.partial(DictObsEnv, length=3 + i) for i in range(3)]
    actions = np.random.default_rng(1).uniform(-1, 1, (STEPS, 3, 2)).astype(np.float32)
    reference = run_trace(DummyVecEnv(fns), actions)
    assert compare(reference, run_trace(make(fns), actions)) > 500
