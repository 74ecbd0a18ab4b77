"""A bad action is refused in the caller's process before any env steps, on every backend
alike: a discrete action out of its space's range (``Discrete`` with its ``start``,
``MultiDiscrete``, ``MultiBinary``), an action of the wrong shape (with the reshape that
fixes it when the sizes agree) or of a dtype the space cannot take. The error names the
env, no env sees any action of that call, and the VecEnv steps on at once. Box actions
out of their bounds are the env's to judge: they arrive as they were sent."""
from __future__ import annotations

import functools

import numpy as np
import pytest

from tests import backends
from tests.planted_envs import ActionEnv

N = 3
BACKENDS = [
    pytest.param(backends.dummy, id="dummy"),
    pytest.param(functools.partial(backends.subproc, in_series=1), id="subproc-lanes"),
    pytest.param(functools.partial(backends.subproc, in_series=1, shared_memory=False), id="subproc-pipes"),
    pytest.param(functools.partial(backends.ray, in_series=2), id="ray", marks=backends.ray_marks),
]
#: (space, a good action per env, env 1's action out of range, the message's end)
OUT_OF_RANGE = [
    pytest.param("discrete", [0, 1, 2], 3, r"action 3 for env 1 is outside the action space Discrete\(3\) "
                 r"\(expected an int from 0 to 2\)", id="discrete-above"),
    pytest.param("discrete", [0, 1, 2], -1, r"action -1 for env 1 is outside the action space Discrete\(3\)",
                 id="discrete-negative"),
    pytest.param("discrete-start", [-1, 0, 1], 2, r"action 2 for env 1 is outside the action space "
                 r"Discrete\(3, start=-1\) \(expected an int from -1 to 1\)", id="discrete-start-above"),
    pytest.param("discrete-start", [-1, 0, 1], -2, r"action -2 for env 1 is outside", id="discrete-start-below"),
    pytest.param("multi-discrete", [[1, 0], [2, 2], [1, 1]], [0, 0], r"action \[0, 0\] for env 1 is outside the "
                 r"action space MultiDiscrete\(\[2 3\], start=\[1 0\]\) \(expected values from \[1, 0\] to \[2, 2\]\)",
                 id="multi-discrete"),
    pytest.param("multi-binary", [[0, 1, 1], [1, 0, 0], [0, 0, 0]], [0, 2, 1], r"action \[0, 2, 1\] for env 1 is "
                 r"outside the action space MultiBinary\(3\) \(expected 0s and 1s\)", id="multi-binary-2"),
    pytest.param("multi-binary", [[0, 1, 1], [1, 0, 0], [0, 0, 0]], [0, -1, 1], r"action \[0, -1, 1\] for env 1",
                 id="multi-binary-negative"),
]


@pytest.fixture(scope="module", params=BACKENDS)
def make(request):
    return request.param


def build(make, space: str, **kwargs):
    venv = make([functools.partial(ActionEnv, space)] * N, **kwargs)
    venv.reset()
    return venv


def check_nothing_stepped_and_usable(venv, good) -> None:
    assert venv.get_attr("actions") == [[]] * N  # no env saw an action of the refused call
    venv.step(np.array(good))
    assert venv.get_attr("actions") == [[a] for a in np.asarray(good).tolist()]


@pytest.mark.parametrize(("space", "good", "bad", "message"), OUT_OF_RANGE)
def test_a_discrete_action_out_of_range_is_refused_before_any_env_steps(make, space, good, bad, message, closing):
    venv = closing(build(make, space))
    actions = [good[0], bad, good[2]]
    with pytest.raises(ValueError, match=r"step_async\(\): " + message):
        venv.step(np.array(actions))
    check_nothing_stepped_and_usable(venv, good)


@pytest.mark.parametrize(("space", "good", "bad", "message"), OUT_OF_RANGE[:1] + OUT_OF_RANGE[4:5])
def test_a_sent_action_out_of_range_names_the_env_it_was_for(make, space, good, bad, message, closing):
    venv = closing(build(make, space, batch_size=N))
    venv.async_reset()
    env_ids = venv.recv()[4]
    actions = np.array([good[0], good[1], bad])
    with pytest.raises(ValueError, match=r"send\(\): " + message.replace("env 1", f"env {int(env_ids[2])}")):
        venv.send(actions, env_ids)
    venv.send(np.array(good), env_ids)  # refused before anything was sent: every env still awaits its send
    assert sorted(venv.recv()[4].tolist()) == list(range(N))


def test_a_box_action_of_another_shape_names_the_reshape_that_fixes_it(make, closing):
    venv = closing(build(make, "box"))
    with pytest.raises(ValueError, match=r"step_async\(\): expected actions of shape \(3, 2, 1\) for action space "
                                         r"Box\(-1\.0, 1\.0, \(2, 1\), float32\), received shape \(3, 2\); reshape "
                                         r"them: actions\.reshape\(3, 2, 1\)"):
        venv.step(np.zeros((N, 2), np.float32))
    check_nothing_stepped_and_usable(venv, np.zeros((N, 2, 1), np.float32))


def test_box_actions_beyond_their_bounds_reach_the_env_as_sent(make, closing):
    venv = closing(build(make, "box"))
    actions = np.array([[[5.0], [-7.5]], [[0.0], [np.inf]], [[np.nan], [1.0]]], np.float32)
    venv.step(actions)
    np.testing.assert_array_equal(np.array(venv.get_attr("actions"), np.float32), actions[:, None])


@pytest.mark.parametrize(("space", "actions", "message"), [
    pytest.param("discrete", np.array([0.0, 1.0, 2.0]), r"actions of dtype float64 cannot be cast safely to the "
                 r"action space's dtype int64", id="float-for-discrete"),
    pytest.param("box", np.zeros((N, 2, 1), np.complex64), r"actions of dtype complex64 cannot be cast safely to "
                 r"the action space's dtype float32", id="complex-for-box"),
    pytest.param("multi-binary", np.full((N, 3), 2**40), r"value 1099511627776 does not fit dtype int8",
                 id="int-past-int8"),
    pytest.param("discrete", np.array(0), r"expected a sequence of 3 actions \(one per env\), received ndarray",
                 id="0-d-array-of-the-spaces-dtype"),
])
def test_an_action_of_a_dtype_the_space_cannot_take_is_refused(make, space, actions, message, closing):
    venv = closing(build(make, space))
    with pytest.raises(ValueError, match=r"step_async\(\): .*" + message):
        venv.step(actions)
    assert venv.get_attr("actions") == [[]] * N
