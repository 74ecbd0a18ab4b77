"""``to_gymnasium`` answers as gymnasium's ``SyncVectorEnv`` / ``AsyncVectorEnv`` do, on
every backend:

- ``call(name)`` calls the method where the env runs and brings back only its result, so
  an env holding something that cannot be pickled (a pygame surface) can be called on
  SubprocVecEnv as on DummyVecEnv; an attribute that is no method comes back as it is;
- ``np_random_seed`` is the envs' own seeds, one per env;
- a first ``reset(options={"reset_mask": <all True>})`` resets every env; a first mask
  of some envs only, and a bad mask, are refused with gymnasium's own error classes and
  texts;
- the batch of a space with no fixed size (a custom space) is a tuple;
- ``reset_async`` / ``reset_wait`` and ``step_async`` / ``step_wait`` give what ``reset``
  and ``step`` give, and a wait with nothing started (or a second start) is refused.
"""
from __future__ import annotations

import functools
import threading

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

from tests import backends
from vec_envs.errors import AlreadyPendingCallError
from vec_envs.interop import to_gymnasium

BACKENDS = [
    pytest.param(backends.dummy, id="dummy"),
    pytest.param(functools.partial(backends.subproc, in_series=1), id="subproc"),
    pytest.param(functools.partial(backends.subproc, in_series=2, shared_memory=False), id="subproc-pipes"),
]


class UnpicklableEnv(gym.Env):
    """Holds a lock (no pickle takes it), as an env holding a pygame surface does."""

    observation_space = spaces.Box(0, 1, (1,), np.float32)
    action_space = spaces.Discrete(2)

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.size = 3

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(1, np.float32), {}

    def step(self, action):
        return np.zeros(1, np.float32), 0.0, False, False, {}

    def describe(self, scale=1):
        return f"size {self.size * scale}"

    def broken(self):
        raise RuntimeError("the env's own error")


class WordSpace(spaces.Space):
    """A space with no fixed size: its values are strings."""

    def sample(self, mask=None, probability=None):
        return "word"

    def contains(self, x):
        return isinstance(x, str)

    def __eq__(self, other):
        return isinstance(other, WordSpace)


class WordEnv(gym.Env):
    observation_space = WordSpace()
    action_space = spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        return "reset", {}

    def step(self, action):
        return f"step({int(action)})", 0.0, False, False, {}


@pytest.fixture(params=BACKENDS)
def make(request):
    return request.param


def test_call_runs_a_method_of_an_env_that_cannot_be_pickled(make, closing):
    envs = to_gymnasium(closing(make([UnpicklableEnv] * 3)))
    envs.reset(seed=0)
    assert envs.call("describe", scale=2) == ("size 6",) * 3


def test_call_returns_an_attribute_that_is_no_method(make, closing):
    envs = to_gymnasium(closing(make([UnpicklableEnv] * 2)))
    envs.reset(seed=0)
    assert envs.call("size") == (3, 3)
    envs.step(np.zeros(2, int))  # the VecEnv steps on: asking broke nothing


def test_call_raises_the_methods_own_error(make, closing):
    envs = to_gymnasium(closing(make([UnpicklableEnv] * 2)))
    with pytest.raises(Exception, match="the env's own error"):
        envs.call("broken")


def test_np_random_seed_is_the_envs_own_seeds(make, closing):
    envs = to_gymnasium(closing(make([lambda: gym.make("CartPole-v1")] * 3)))
    envs.reset(seed=42)
    assert envs.np_random_seed == (42, 43, 44)
    envs.reset()
    assert envs.np_random_seed == (42, 43, 44)


def test_a_first_reset_with_a_mask_of_every_env_resets_them(closing):
    venv = closing(backends.dummy([lambda: gym.make("CartPole-v1")] * 3, autoreset_mode="disabled"))
    envs = to_gymnasium(venv)
    obs, _ = envs.reset(seed=0, options={"reset_mask": np.array([True, True, True])})
    expected, _ = to_gymnasium(closing(backends.dummy([lambda: gym.make("CartPole-v1")] * 3))).reset(seed=0)
    np.testing.assert_array_equal(obs, expected)


@pytest.mark.parametrize(("mask", "error", "message"), [
    (np.array([True, False, True]), ValueError, "the envs have not been reset yet"),
    ([True, True, True], TypeError, "must be a numpy array"),
    (np.array([True]), ValueError, r"must have shape `\(3,\)`, got \(1,\)"),
    (np.array([1, 1, 0]), TypeError, "must have `dtype=np.bool_`, got int64"),
], ids=["first-partial", "list", "shape", "dtype"])
def test_a_bad_or_early_mask_is_refused_as_gymnasium_refuses_it(mask, error, message, closing):
    venv = closing(backends.dummy([lambda: gym.make("CartPole-v1")] * 3, autoreset_mode="disabled"))
    with pytest.raises(error, match=message):
        to_gymnasium(venv).reset(options={"reset_mask": mask})


def test_a_mask_of_no_env_is_refused(closing):
    envs = to_gymnasium(closing(backends.dummy([lambda: gym.make("CartPole-v1")] * 3, autoreset_mode="disabled")))
    envs.reset(seed=0)
    with pytest.raises(ValueError, match="at least one True value"):
        envs.reset(options={"reset_mask": np.zeros(3, np.bool_)})


def test_a_batch_of_a_space_with_no_fixed_size_is_a_tuple(make, closing):
    envs = to_gymnasium(closing(make([WordEnv] * 3)))
    obs, _ = envs.reset()
    assert obs == ("reset",) * 3
    obs, *_ = envs.step(np.array([0, 1, 0]))
    assert obs == ("step(0)", "step(1)", "step(0)")


def test_the_split_calls_give_what_reset_and_step_give(make, closing):
    env_fns = [lambda: gym.make("CartPole-v1")] * 3
    split, whole = (to_gymnasium(closing(make(env_fns))) for _ in range(2))
    split.reset_async(seed=7)
    obs, infos = split.reset_wait()
    np.testing.assert_array_equal(obs, whole.reset(seed=7)[0])
    for t in range(30):
        actions = np.full(3, t % 2)
        split.step_async(actions)
        got, expected = split.step_wait(), whole.step(actions)
        for a, b in zip(got[:4], expected[:4]):
            np.testing.assert_array_equal(a, b)


def test_a_wait_with_nothing_started_and_a_second_start_are_refused(make, closing):
    envs = to_gymnasium(closing(make([lambda: gym.make("CartPole-v1")] * 2)))
    with pytest.raises(gym.error.NoAsyncCallError, match=r"Calling `step_wait` without any prior call to `step_async`"):
        envs.step_wait()
    envs.reset_async(seed=0)
    with pytest.raises(AlreadyPendingCallError, match=r"Calling `step_async` while waiting for a pending call to "
                                                      r"`reset` to complete"):
        envs.step_async(np.zeros(2, int))
    envs.reset_wait()
    envs.step_async(np.zeros(2, int))
    envs.step_wait()
    envs.step_async(np.zeros(2, int))
    with pytest.warns(UserWarning, match=r"Calling `close` while waiting for a pending call to `step` to complete\."):
        envs.close()


def test_the_split_reset_works_over_a_wrapper_that_resets_itself(make, closing):
    from vec_envs.wrappers import VecNormalize

    split = to_gymnasium(VecNormalize(closing(make([lambda: gym.make("CartPole-v1")] * 2))))
    split.reset_async(seed=3)
    obs, _ = split.reset_wait()
    assert obs.shape == (2, 4)
    split.step_async(np.zeros(2, int))
    assert split.step_wait()[0].shape == (2, 4)
