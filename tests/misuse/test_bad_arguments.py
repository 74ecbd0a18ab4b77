"""Wrong env outputs and wrong arguments get one clear error on every backend: env outputs,
actions, indices, seeds, timeouts and calls at the wrong moment."""
from __future__ import annotations

import functools
import math
import re

import numpy as np
import pytest

from tests.backends import BACKENDS
from tests.faulty_envs import BAD_STEP_OUTPUTS, DictActionEnv, OutputEnv
from vec_envs import DummyVecEnv
from vec_envs.errors import (
    AlreadyPendingCallError,
    ClosedEnvironmentError,
    EnvWorkerError,
)

N = 4
#: the message each bad output of env 2 gives (the env, the method, what came, what was expected)
STEP_ERRORS = {
    "reward-none": r"env 2 returned reward None \(NoneType\) from step\(\); expected a real number",
    "reward-text": r"env 2 returned reward '1.0' \(str\) from step\(\); expected a real number",
    "reward-array": r"env 2 returned reward array\(\[1., 1., 1.\]\) \(array of shape \(3,\), dtype float64\) "
                    r"from step\(\); expected a real number",
    "terminated-array": r"env 2 returned terminated array\(\[ True, False\]\) .* from step\(\); expected a bool",
    "truncated-text": r"env 2 returned truncated 'no' \(str\) from step\(\); expected a bool",
    "info-list": r"env 2 returned info \[\] \(list\) from step\(\); expected a dict",
    "obs-out-of-range": r"env 2 returned from step\(\): observation: value 300 does not fit dtype uint8",
    "obs-negative": r"env 2 returned from step\(\): observation: value -1 does not fit dtype uint8",
    "obs-fraction": r"env 2 returned from step\(\): observation: value 1.5 does not fit dtype uint8",
    "obs-nan": r"env 2 returned from step\(\): observation: value nan does not fit dtype uint8",
    "obs-text": r"env 2 returned from step\(\): observation: value .* of dtype <U1 cannot be stored as dtype uint8",
    "four-tuple": r"env 2 returned the result .* from step\(\); expected a tuple \(obs, reward, terminated, "
                  r"truncated, info\)",
}
assert STEP_ERRORS.keys() == BAD_STEP_OUTPUTS.keys()


@pytest.fixture(scope="module", params=BACKENDS)
def venv(request):
    """One VecEnv of 4 ``OutputEnv`` per backend, shared by this module's tests (each leaves
    it reset, idle and healthy): a step's bad output raises, the VecEnv goes on."""
    made = request.param([OutputEnv] * N)
    yield made
    made.close()


def check_env_error(info: pytest.ExceptionInfo, env_index: int, method: str = "step") -> None:
    """Worker backends wrap the env's error in EnvWorkerError naming the env; DummyVecEnv
    raises it as itself (its message names the env)."""
    if isinstance(info.value, EnvWorkerError):
        assert info.value.env_index == env_index
        assert info.value.method == method
    else:
        assert isinstance(info.value, (TypeError, ValueError))


def test_every_bad_step_output_names_env_method_value_and_expectation(venv):
    for name, message in STEP_ERRORS.items():
        venv.set_attr("plan", (name,), indices=2)
        venv.reset()
        with pytest.raises((EnvWorkerError, TypeError, ValueError), match=message) as info:
            venv.step(np.zeros(N, np.int64))
        check_env_error(info, 2)
        venv.reset()  # an env failed mid-step: only a reset goes on
    venv.set_attr("plan", ())
    obs, rewards, _, _ = venv.step(np.zeros(N, np.int64))  # no plan: all good again
    assert obs.dtype == np.uint8
    assert rewards.tolist() == [1.0] * N


@pytest.mark.parametrize("make", BACKENDS)
def test_a_reset_info_that_is_not_a_dict_names_the_env(make, closing):
    venv = closing(make([OutputEnv, functools.partial(OutputEnv, reset_info=[1, 2]), OutputEnv, OutputEnv]))
    message = r"env 1 returned info \[1, 2\] \(list\) from reset\(\)"
    with pytest.raises((EnvWorkerError, TypeError), match=message) as info:
        venv.reset()
    check_env_error(info, 1, "reset")


def test_values_that_fit_the_dtype_are_stored_exactly():
    class Fits(OutputEnv):
        def step(self, action):
            return np.array([255, 0], np.int64), np.float32(2.5), np.bool_(True), 0, {}

    with DummyVecEnv([Fits] * 2) as venv:
        venv.reset()
        obs, rewards, dones, infos = venv.step([0, 1])
        assert obs.dtype == np.uint8
        assert infos[0]["terminal_observation"].tolist() == [255, 0]
        assert rewards.tolist() == [2.5, 2.5]
        assert dones.tolist() == [True, True]


# ------------------------------------------------------------------ actions
def test_action_structure_is_checked_the_same_on_every_backend(venv):
    with pytest.raises(ValueError, match=r"step_async\(\): received a dict of actions, but the action space "
                                         r"Discrete\(2\) is not a Dict space"):
        venv.step({"a": np.zeros(N, np.int64)})
    with pytest.raises(ValueError, match=r"received dict actions, but the action space Discrete\(2\) expects"):
        venv.step([{"a": 0}] * N)
    with pytest.raises(ValueError, match=r"actions for action space Discrete\(2\): value 9223372036854775808 "
                                         r"does not fit dtype int64"):
        venv.step(np.full(N, 2**63, np.uint64))
    with pytest.raises(ValueError, match=r"actions of dtype float64 cannot be cast safely"):
        venv.step(np.zeros(N))
    venv.step(np.zeros(N, np.int64))  # the VecEnv is still usable


@pytest.mark.parametrize("make", BACKENDS)
def test_dict_actions_need_exactly_the_space_keys_and_leaf_shapes_and_seed_after_close_raises(make, closing):
    venv = closing(make([DictActionEnv] * N))
    venv.reset()
    good = {"move": 1, "aim": np.zeros(2, np.float32)}
    with pytest.raises(ValueError, match=r"step_async\(\): env 1: action is missing keys \['aim'\]"):
        venv.step([good, {"move": 1}, good, good])
    with pytest.raises(ValueError, match=r"env 3: action has unknown keys \['fire'\]"):
        venv.step([good] * 3 + [{**good, "fire": 1}])
    with pytest.raises(ValueError, match=r"env 0: action\['aim'\] 0.5 has shape \(\), but the action space "
                                         r"Box\(.*\) expects shape \(2,\)"):
        venv.step([{"move": 1, "aim": 0.5}] + [good] * 3)
    with pytest.raises(ValueError, match=r"env 2: action is 7, but the action space expects a dict with keys "
                                         r"\['aim', 'move'\]"):
        venv.step([good, good, 7, good])
    with pytest.raises(ValueError, match=r"expected 4 actions per key \(one per env\)"):
        venv.step({"move": [1, 1], "aim": np.zeros((N, 2))})
    _, rewards, _, _ = venv.step({"move": np.arange(N) % 3, "aim": np.zeros((N, 2), np.float32)})
    assert rewards.tolist() == [0.0, 1.0, 2.0, 0.0]
    venv.close()
    with pytest.raises(ClosedEnvironmentError, match=r"seed\(\) called after close\(\)"):
        venv.seed(0)


# ---------------------------------------------------------- indices
def test_indices_as_masks_ints_and_clear_errors(venv):
    venv.reset()
    venv.set_attr("tag", "x")
    venv.set_attr("tag", "y", indices=[True, False, True, False])
    assert venv.get_attr("tag") == ["y", "x", "y", "x"]
    assert venv.get_attr("tag", indices=np.array([False, True, True, False])) == ["x", "y"]
    assert venv.get_attr("t", indices=np.int64(-1)) == [0]
    assert venv.get_attr("t", indices=np.array([3, 0])) == [0, 0]
    with pytest.raises(ValueError, match=r"get_attr\(\): a boolean mask of indices needs 4 entries \(one per "
                                         r"env\), received 2"):
        venv.get_attr("t", indices=[True, False])
    expected = r"indices must be None, an int, a sequence of ints or a boolean mask of 4"
    for bad in (1.0, slice(0, 2), True, "0"):
        with pytest.raises(TypeError, match=rf"get_attr\(\): {expected}, received {re.escape(repr(bad))}"):
            venv.get_attr("t", indices=bad)
    with pytest.raises(TypeError, match=rf"env_method\(\): {expected}, received the entry 1.0 \(float\)"):
        venv.env_method("reset", indices=[0, 1.0])
    with pytest.raises(IndexError, match=r"set_attr\(\): env index 4 is out of range for 4 envs"):
        venv.set_attr("tag", "z", indices=[4])
    with pytest.raises(TypeError, match=r"reset_single_env\(\): expected one env index \(an int\), received \[0\]"):
        venv.reset_single_env([0])


# ------------------------------------------------------------------ seeds
def test_bad_seeds_are_refused(venv):
    for bad, error, message in [(1.5, TypeError, r"seed must be an int >= 0 or None, received 1.5 \(float\)"),
                                ("7", TypeError, r"seed must be an int >= 0 or None, received '7' \(str\)"),
                                (-1, ValueError, r"seed must be an int >= 0 or None, received -1"),
                                ([1, 2.5, 3, 4], TypeError, r"seed\[1\] must be an int >= 0 or None"),
                                ([1, 2], ValueError, r"expected 4 seeds \(one per env\), received 2")]:
        with pytest.raises(error, match=rf"seed\(\): {message}"):
            venv.seed(bad)
    assert venv.seed(np.int64(3)) == [3, 4, 5, 6]
    venv.reset()


# --------------------------------------------------------------- timeouts
def test_bad_wait_timeouts_are_refused(venv):
    venv.reset()
    for bad, error in (("5", TypeError), (-1, ValueError), (math.nan, ValueError), (True, TypeError)):
        venv.step_async(np.zeros(N, np.int64))
        with pytest.raises(error, match=r"step_wait\(\): timeout must be a number of seconds >= 0 or None "
                                        rf"\(no limit\), received {bad!r}"):
            venv.step_wait(timeout=bad)
        venv.step_wait()  # the refused wait left the step pending


# ------------------------------------------------- calls at the wrong moment
def test_env_access_while_a_step_is_pending_is_refused_on_every_backend(venv):
    venv.reset()
    venv.step_async(np.zeros(N, np.int64))
    for call in (lambda: venv.get_attr("t"), lambda: venv.set_attr("t", 0), lambda: venv.env_method("reset"),
                 lambda: venv.env_is_wrapped(OutputEnv), lambda: venv.get_images()):
        with pytest.raises(AlreadyPendingCallError, match=r"called while step_async\(\) still waits"):
            call()
    venv.step_wait()
    assert venv.get_attr("t") == [1] * N
