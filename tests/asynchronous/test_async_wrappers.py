"""Each wrapper under recv/send gives each env what it gives it under lock-step."""
from __future__ import annotations

import functools

import numpy as np
import pytest

from tests.async_traces import assert_same_traces, async_traces, lockstep_traces
from tests.envs import SeededEnv
from tests.wrapper_envs import DictFrameEnv, FrameEnv, NanEnv, ScriptedEnv
from vec_envs import DummyVecEnv, SubprocVecEnv, VecEnvWrapper
from vec_envs.wrappers import (
    RunningMeanStd,
    VecCheckNan,
    VecExtractDictObs,
    VecFrameStack,
    VecMonitor,
    VecNormalize,
    VecTransposeImage,
    VecVideoRecorder,
)

N, STEPS = 4, 10


def frames(i, length=3):
    return functools.partial(FrameEnv, length=length + i, env_offset=i)


def dict_frames(i):
    return functools.partial(DictFrameEnv, length=3 + i)


def scripted(i):
    return functools.partial(ScriptedEnv, rewards=[1.0, -2.0, 0.5 * i], ends=[2 + i, 6 + 2 * i])


#: (wrap(venv) -> wrapper, env factory per env index, number of actions)
STACKS = {
    "frame_stack": (lambda v: VecFrameStack(v, 3), frames, 2),
    "frame_stack_dict": (lambda v: VecFrameStack(v, 2), dict_frames, 2),
    "monitor": (VecMonitor, lambda i: functools.partial(SeededEnv, length=2 + i), 3),
    "normalize_frozen": (lambda v: VecNormalize(v, training=False), scripted, 2),
    "transpose": (VecTransposeImage, frames, 2),
    "extract_dict": (lambda v: VecExtractDictObs(v, "vec"), dict_frames, 2),
    "check_nan": (VecCheckNan, lambda i: functools.partial(SeededEnv, length=2 + i), 3),
    "full_stack": (lambda v: VecNormalize(VecFrameStack(VecMonitor(v), 2)), scripted, 2),
}


@pytest.mark.parametrize("batch_size", [1, 3, N], ids=lambda b: f"batch{b}")
@pytest.mark.parametrize("name", [name for name in STACKS if name != "full_stack"])
def test_wrapper_follows_env_ids(name, batch_size, closing):
    wrap, env_fn, n_actions = STACKS[name]
    fns = [env_fn(i) for i in range(N)]
    expected = lockstep_traces(closing(wrap(DummyVecEnv(fns))), STEPS, n_actions)
    got = async_traces(closing(wrap(DummyVecEnv(fns, batch_size=batch_size))), STEPS, n_actions)
    assert_same_traces(got, expected)


def test_full_stack_with_the_whole_batch_equals_lockstep(closing):
    """batch_size = num_envs: the normalization statistics see the same batches in the same order."""
    wrap, env_fn, n_actions = STACKS["full_stack"]
    fns = [env_fn(i) for i in range(N)]
    expected = lockstep_traces(closing(wrap(DummyVecEnv(fns))), STEPS, n_actions)
    got = async_traces(closing(wrap(DummyVecEnv(fns, batch_size=N))), STEPS, n_actions)
    assert_same_traces(got, expected)


def test_full_stack_on_worker_processes(closing):
    wrap, env_fn, n_actions = STACKS["full_stack"]
    fns = [env_fn(i) for i in range(N)]
    expected = lockstep_traces(closing(wrap(DummyVecEnv(fns))), STEPS, n_actions)
    got = async_traces(closing(wrap(SubprocVecEnv(fns, in_series=2, batch_size=N))), STEPS, n_actions)
    assert_same_traces(got, expected)


def test_normalize_updates_statistics_from_the_returned_rows(closing):
    """batch_size < num_envs: obs statistics = those of every row recv returned; rewards
    are scaled by the spread of each env's own discounted return."""
    venv = closing(VecNormalize(DummyVecEnv([scripted(i) for i in range(N)], batch_size=3), gamma=0.9))
    reference_obs, reference_ret = RunningMeanStd((3,)), RunningMeanStd(())
    returns, seen = np.zeros(N), np.zeros(N, bool)
    venv.async_reset()
    for _ in range(8):
        obs, rewards, dones, _, env_ids = venv.recv()
        raw, raw_rewards = venv.get_original_obs(), venv.get_original_reward()
        reference_obs.update(raw)
        stepped = seen[env_ids]  # the other rows are reset rows: no return yet
        seen[env_ids] = True
        returns[env_ids[stepped]] = returns[env_ids[stepped]] * 0.9 + raw_rewards[stepped]
        reference_ret.update(returns[env_ids[stepped]])
        np.testing.assert_allclose(rewards, np.clip(raw_rewards / np.sqrt(reference_ret.var + 1e-8), -10, 10),
                                   rtol=1e-6)
        returns[env_ids[dones]] = 0.0
        np.testing.assert_allclose(venv.obs_rms.mean, reference_obs.mean, rtol=1e-12)
        np.testing.assert_allclose(venv.obs_rms.var, reference_obs.var, rtol=1e-12)
        np.testing.assert_allclose(obs, np.clip((raw - reference_obs.mean) / np.sqrt(reference_obs.var + 1e-8),
                                                -10, 10), rtol=1e-5, atol=1e-6)
        venv.send(np.zeros(3, np.int64), env_ids)


def test_check_nan_names_the_env_id(closing):
    fns = [functools.partial(NanEnv, bad_step=2 if i == 2 else 10**9) for i in range(N)]
    venv = closing(VecCheckNan(DummyVecEnv(fns, batch_size=2)))
    venv.async_reset()
    env_ids = venv.recv()[4]
    with pytest.raises(ValueError, match=rf"action of env {env_ids[1]} contains NaN before send"):
        venv.send(np.array([[0.0], [np.nan]], np.float32), env_ids)
    venv.send(np.zeros((2, 1), np.float32), env_ids)
    for _ in range(4):
        env_ids = venv.recv()[4]
        venv.send(np.zeros((2, 1), np.float32), env_ids)
    with pytest.raises(ValueError, match=r"observation\['pos'\] of env 2 contains NaN after recv"):
        venv.recv()


def test_video_recorder_refuses_async(tmp_path, closing):
    venv = closing(VecVideoRecorder(DummyVecEnv([frames(0)], batch_size=1), tmp_path, lambda s: True, 2))
    for call in (venv.async_reset, venv.recv, lambda: venv.send([0], [0])):
        with pytest.raises(NotImplementedError, match=r"VecVideoRecorder\.\w+\(\): a clip is one frame of all "
                                                      r"envs tiled per lock-step step"):
            call()


def test_a_wrapper_without_recv_refuses_async(closing):
    class Doubled(VecEnvWrapper):
        def step_wait(self, timeout=None):
            obs, rewards, dones, infos = self.venv.step_wait(timeout)
            return obs, 2 * rewards, dones, infos

    class Clipped(VecEnvWrapper):
        def step_async(self, actions):
            self.venv.step_async(np.clip(actions, 0, 1))

    venv = closing(Doubled(DummyVecEnv([frames(0)], batch_size=1)))
    with pytest.raises(NotImplementedError, match=r"Doubled\.recv\(\): Doubled does its own work in step_wait\(\) "
                                                  r"but has no recv\(\)"):
        venv.recv()
    with pytest.raises(NotImplementedError, match=r"does its own work in step_async\(\) but has no send\(\)"):
        Clipped(DummyVecEnv([frames(0)], batch_size=1)).async_reset()
