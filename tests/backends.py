"""The backends every contract test runs on. A new backend appends its variants here."""
from __future__ import annotations

import functools

import pytest

from vec_envs import DummyVecEnv, SubprocVecEnv


def dummy(env_fns, **kwargs):
    return DummyVecEnv(env_fns, **kwargs)


def subproc(env_fns, **kwargs):
    return SubprocVecEnv(env_fns, **kwargs)


#: (factory(env_fns, copy=...) -> VecEnv) with a readable id
BACKENDS = [
    pytest.param(dummy, id="dummy"),
    pytest.param(subproc, id="subproc-default"),
    pytest.param(functools.partial(subproc, in_series=1), id="subproc-series1"),
    pytest.param(functools.partial(subproc, in_series=2), id="subproc-series2"),
    pytest.param(functools.partial(subproc, in_series=3), id="subproc-uneven3"),
    pytest.param(functools.partial(subproc, in_series="auto", shared_memory=False), id="subproc-pipes"),
    pytest.param(functools.partial(subproc, in_series=2, context="fork"), id="subproc-fork"),
    pytest.param(functools.partial(subproc, in_series=2, context="spawn"), id="subproc-spawn"),
]
