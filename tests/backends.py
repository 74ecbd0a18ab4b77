"""The backends every contract test runs on. A new backend appends its variants here."""
from __future__ import annotations

import pytest

from vec_envs import DummyVecEnv


def dummy(env_fns, **kwargs):
    return DummyVecEnv(env_fns, **kwargs)


#: (factory(env_fns, copy=...) -> VecEnv) with a readable id
BACKENDS = [
    pytest.param(dummy, id="dummy"),
]
