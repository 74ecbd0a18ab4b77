"""The wrappers composed: forwarding, infos through the layers, close, and the async protocol."""
from __future__ import annotations

import functools

import numpy as np
import pytest

from tests.backends import BACKENDS
from tests.wrapper_envs import FrameEnv
from vec_envs.errors import AlreadyPendingCallError, ClosedEnvironmentError, NoAsyncCallError
from vec_envs.wrappers import VecCheckNan, VecFrameStack, VecMonitor, VecNormalize, VecTransposeImage

N = 2


@pytest.mark.parametrize("make", BACKENDS)
def test_normalize_over_frame_stack_over_monitor(make, tmp_path):
    base = make([functools.partial(FrameEnv, length=3 + i, shape=(6, 6, 1)) for i in range(N)])
    venv = VecCheckNan(VecTransposeImage(VecNormalize(VecFrameStack(VecMonitor(base, tmp_path), 4),
                                                      norm_obs=False)))
    assert venv.num_envs == N
    assert venv.unwrapped is base
    assert venv.observation_space.shape == (4, 6, 6)
    assert venv.n_stack == 4
    assert venv.gamma == 0.99
    assert venv.get_attr("length") == [3, 4]
    assert venv.render(mode="rgb_array").shape == (20, 14, 3)
    obs = venv.reset()
    assert obs.shape == (N, 4, 6, 6)
    assert obs.dtype == np.uint8
    for _ in range(3):
        obs, rewards, dones, infos = venv.step(np.zeros(N, np.int64))
    assert dones.tolist() == [True, False]
    assert infos[0]["episode"] == {"r": 6.0, "l": 3, "t": infos[0]["episode"]["t"]}
    assert infos[0]["terminal_observation"].shape == (4, 6, 6)
    assert infos[0]["terminal_observation"][:, 0, 0].tolist() == [1, 11, 21, 31]
    assert obs[0, :, 0, 0].tolist() == [0, 0, 0, 1]
    np.testing.assert_array_equal(venv.get_original_reward(), [3.0, 3.0])
    with pytest.raises(NoAsyncCallError):
        venv.step_wait()
    venv.step_async(np.zeros(N, np.int64))
    with pytest.raises(AlreadyPendingCallError):
        venv.step_async(np.zeros(N, np.int64))
    venv.step_wait()
    venv.close()
    venv.close()
    assert base.closed
    assert venv.closed
    assert venv.results_writer.file.closed  # found through the layers
    with pytest.raises(ClosedEnvironmentError):
        venv.reset()
