"""The backends every contract test runs on. A new backend appends its variants here."""
from __future__ import annotations

import functools

import pytest

from tests import ray_runtime
from vec_envs import DummyVecEnv, RayVecEnv, SubprocVecEnv


def dummy(env_fns, **kwargs):
    return DummyVecEnv(env_fns, **kwargs)


def subproc(env_fns, **kwargs):
    return SubprocVecEnv(env_fns, **kwargs)


def ray(env_fns, **kwargs):
    ray_runtime.ray_runtime()  # the session's two-node runtime on loopback, started once
    return RayVecEnv(env_fns, **kwargs)


needs_ray = pytest.mark.skipif(not ray_runtime.ray_available(), reason="ray is not installed")
#: the test process that runs it starts the session's Ray runtime: under pytest-xdist every test
#: marked so runs in one worker process (``--dist loadgroup``), which starts the runtime once
uses_ray_runtime = pytest.mark.xdist_group("ray")
#: the marks of a Ray backend's variant: skipped without Ray, slow (each test starts actors), and
#: run where the session's runtime is
ray_marks = [needs_ray, pytest.mark.slow, uses_ray_runtime]


#: (factory(env_fns, copy=...) -> VecEnv) with a readable id
BACKENDS = [
    pytest.param(dummy, id="dummy"),
    pytest.param(subproc, id="subproc-default"),
    pytest.param(functools.partial(subproc, in_series=1), id="subproc-series1"),
    pytest.param(functools.partial(subproc, in_series=2), id="subproc-series2"),
    pytest.param(functools.partial(subproc, in_series=3), id="subproc-uneven3"),
    pytest.param(functools.partial(subproc, in_series="auto", shared_memory=False), id="subproc-pipes"),
    pytest.param(functools.partial(subproc, in_series=2, context="fork"), id="subproc-fork"),
    # spawn starts every worker with a fresh interpreter that imports everything again: slow
    pytest.param(functools.partial(subproc, in_series=2, context="spawn"), id="subproc-spawn", marks=pytest.mark.slow),
    # more Ray variants: contract/test_ray_vec_env.py
    pytest.param(functools.partial(ray, in_series=2), id="ray-series2", marks=ray_marks),
]
