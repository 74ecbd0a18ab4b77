"""An env stepped in the parent cannot be interrupted: ``step_in_parent=True`` with a
``timeout`` is refused by the constructor, before any worker starts, naming both and the fix."""
from __future__ import annotations

import pytest

from tests.envs import SeededEnv
from vec_envs import SubprocVecEnv

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
