"""Bad ``env_fns`` are refused by the constructor, before any env or worker is made, with
a message naming the mistake and the fix, the same on every backend."""
from __future__ import annotations

import functools
import threading

import gymnasium as gym
import pytest

from tests import backends
from tests.envs import SeededEnv
from vec_envs import make_vec_env

BACKENDS = [
    pytest.param(backends.dummy, id="dummy"),
    pytest.param(functools.partial(backends.subproc, in_series=1), id="subproc-series1"),
    pytest.param(functools.partial(backends.subproc, in_series="auto"), id="subproc-auto"),
    pytest.param(functools.partial(backends.subproc, in_series=1, shared_memory=False), id="subproc-pipes"),
    pytest.param(functools.partial(backends.ray, in_series=1), id="ray", marks=backends.ray_marks),
]
PROCESS_BACKENDS = [param for param in BACKENDS if param.id != "dummy"]


class LockedFactory:
    """A factory holding a lock: cloudpickle cannot pickle it."""

    def __init__(self):
        self.lock = threading.Lock()

    def __call__(self):
        return SeededEnv()


@pytest.mark.parametrize("make", BACKENDS)
def test_empty_env_fns(make):
    with pytest.raises(ValueError, match=r"VecEnv: env_fns is empty; expected a list of zero-argument env "
                                         r"factories, one per env"):
        make([])


@pytest.mark.parametrize("make", BACKENDS)
def test_env_instances_instead_of_factories(make):
    env = gym.make("CartPole-v1")
    with pytest.raises(TypeError, match=r"VecEnv: env_fns\[0\] is a TimeLimit, not a factory; .*pass the "
                                        r"function that builds the env"):
        make([env, env])


@pytest.mark.parametrize("make", BACKENDS)
def test_a_single_factory_instead_of_a_list(make):
    with pytest.raises(TypeError, match=r"VecEnv: env_fns must be a list of zero-argument env factories.*"
                                        r"received <function .*\(function\) \(a single factory: wrap it in "
                                        r"a list, \[make_env\] \* n\)"):
        make(lambda: SeededEnv())


@pytest.mark.parametrize("make", PROCESS_BACKENDS)
def test_an_unpicklable_factory_is_named_in_the_parent(make):
    with pytest.raises(TypeError, match=r"VecEnv: env_fns\[1\] \(.*LockedFactory.*\) cannot be pickled to send "
                                        r"it to a worker: TypeError: cannot pickle '_thread.lock' object\. Build "
                                        r"what it captures .* inside the factory, or use DummyVecEnv"):
        make([SeededEnv, LockedFactory()])


def test_an_unpicklable_factory_is_fine_in_process(closing):
    venv = closing(backends.dummy([LockedFactory()] * 2))
    assert venv.reset().shape == (2, 3)


@pytest.mark.parametrize("vec_env_cls", ["subproc", "ray"])
def test_make_vec_env_names_an_unpicklable_factory_before_the_backend_starts(vec_env_cls):
    if vec_env_cls == "ray" and not backends.ray_runtime.ray_available():
        pytest.skip("ray is not installed")
    with pytest.raises(TypeError, match=r"make_vec_env\(\): env_fns\[0\] .* cannot be pickled"):
        make_vec_env(LockedFactory(), n_envs=2, vec_env_cls=vec_env_cls)


def test_make_vec_env_refuses_an_env_instance():
    with pytest.raises(TypeError, match=r"make_vec_env\(\): env_id_or_fn must be a registered env id \(a str\) "
                                        r"or a function that builds an env, received .*TimeLimit"):
        make_vec_env(gym.make("CartPole-v1"), n_envs=2)
