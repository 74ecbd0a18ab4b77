"""An env stepped in the parent cannot be interrupted: ``step_in_parent=True`` with a
``timeout`` is refused by the constructor, before any worker starts, naming both and the
fix; a per-call timeout (``step_wait(timeout=)``, ``reset_wait(timeout=)``) is honoured,
the parent stopping its own slice between two of its envs when the time is up."""
from __future__ import annotations

import functools
import time

import numpy as np
import pytest

from tests.envs import SeededEnv
from tests.faulty_envs import SlowStepEnv
from vec_envs import SubprocVecEnv
from vec_envs.errors import EnvTimeoutError

REFUSED = (r"SubprocVecEnv: step_in_parent=True cannot be combined with timeout=0.5: an env stepped in the parent "
           r"cannot be interrupted.*Pass step_in_parent=False .* or timeout=None")


@pytest.mark.parametrize("shared_memory", [True, False], ids=["shared", "pipes"])
@pytest.mark.parametrize("in_series", [1, 2])
def test_step_in_parent_with_a_timeout_is_refused(in_series, shared_memory):
    with pytest.raises(ValueError, match=REFUSED):
        SubprocVecEnv([SeededEnv] * 4, in_series=in_series, shared_memory=shared_memory, timeout=0.5,
                      step_in_parent=True)


def test_the_timeout_stays_with_every_env_in_a_worker(closing):
    venv = closing(SubprocVecEnv([SeededEnv] * 4, in_series=2, timeout=5.0, step_in_parent=False))
    assert venv.timeout == 5.0


def test_auto_stepping_in_parent_stays_off_with_a_timeout(closing):
    venv = closing(SubprocVecEnv([SeededEnv] * 4, in_series="auto", timeout=0.5))
    assert not venv.step_in_parent


@pytest.mark.parametrize("options", [{}, {"in_series": 2, "step_in_parent": True}], ids=["defaults", "explicit"])
def test_a_per_call_timeout_stops_the_parents_slice_between_its_envs(options, closing, monkeypatch):
    monkeypatch.setenv("VEC_ENVS_CPUS", "2")  # the defaults' plan: one worker, the parent steps envs 2 and 3
    fns = [functools.partial(SlowStepEnv, 0.2, reset_seconds=0.2, busy=True)] * 4  # computing: the parent steps some
    venv = closing(SubprocVecEnv(fns, **options))
    assert venv.step_in_parent and venv.in_series == 2
    venv.reset()  # (no timeout: 0.4 s)
    venv.step_async(np.zeros(4, np.int64))
    start = time.monotonic()
    with pytest.raises(EnvTimeoutError):
        venv.step_wait(timeout=0.1)
    assert time.monotonic() - start < 0.35  # one of the parent's envs, not both
    assert venv.step_wait()[0].shape[0] == 4  # still pending: waited for again, it finishes
    venv.reset_async()
    start = time.monotonic()
    with pytest.raises(EnvTimeoutError):
        venv.reset_wait(timeout=0.1)
    assert time.monotonic() - start < 0.35
    assert venv.reset_wait().shape[0] == 4
