"""The wrappers under next-step and disabled autoreset: a next-step reset row counts in no
episode and no return, the frame history clears at the reset row, and the agent's
``reset_envs`` passes through every wrapper's per-env state."""
from __future__ import annotations

import functools

import numpy as np
import pytest

from tests.envs import SeededEnv
from vec_envs import DummyVecEnv, SubprocVecEnv
from vec_envs.wrappers import VecCheckNan, VecFrameStack, VecMonitor, VecNormalize

LENGTH = 4  # with action 0 an episode's rewards are 1, 2, 3, 4
FNS = [functools.partial(SeededEnv, length=LENGTH)] * 2
ZEROS = np.zeros(2, int)


def episodes(venv, steps):
    """The ``(r, l)`` of each episode VecMonitor reports over ``steps`` steps of action 0."""
    records = []
    for _ in range(steps):
        for info in venv.step(ZEROS)[3]:
            if "episode" in info:
                records.append((info["episode"]["r"], info["episode"]["l"]))
    return records


@pytest.mark.parametrize("mode", ["same_step", "next_step"])
def test_monitor_records_the_same_episodes_in_each_mode(mode, closing, tmp_path):
    venv = closing(VecMonitor(DummyVecEnv(FNS, autoreset_mode=mode), tmp_path))
    venv.reset()
    steps = 3 * LENGTH + (2 if mode == "next_step" else 0)  # next-step: a reset row after each end
    assert episodes(venv, steps) == [(10.0, LENGTH)] * 6


def test_monitor_counts_no_reset_row_after_a_reset_that_follows_an_end(closing, tmp_path):
    venv = closing(VecMonitor(DummyVecEnv(FNS, autoreset_mode="next_step"), tmp_path))
    venv.reset()
    assert episodes(venv, LENGTH) == [(10.0, LENGTH)] * 2
    venv.reset()  # the envs ended at their last row: reset() starts them, no reset row follows
    assert episodes(venv, LENGTH) == [(10.0, LENGTH)] * 2


def test_monitor_recv_send_records_equal_lock_step(closing, tmp_path):
    venv = closing(VecMonitor(SubprocVecEnv(FNS, in_series=1, context="fork", batch_size=1,
                                            autoreset_mode="next_step"), tmp_path))
    venv.async_reset()
    records = []
    while len(records) < 6:
        _, _, _, infos, env_ids = venv.recv()
        records += [(info["episode"]["r"], info["episode"]["l"]) for info in infos if "episode" in info]
        venv.send(np.zeros(len(env_ids), int), env_ids)
    assert records == [(10.0, LENGTH)] * 6


def test_normalize_keeps_the_returns_statistics_of_same_step(closing):
    one = [FNS[0]]
    same = closing(VecNormalize(DummyVecEnv(one), gamma=0.9))
    later = closing(VecNormalize(DummyVecEnv(one, autoreset_mode="next_step"), gamma=0.9))
    same.reset(), later.reset()
    for _ in range(3 * LENGTH):
        same.step(ZEROS[:1])
    rewards = [float(later.step(ZEROS[:1])[1][0] != 0.0) for _ in range(3 * (LENGTH + 1) - 1)]
    assert rewards.count(0.0) == 2  # the reset rows: reward 0, no sample of the returns
    assert later.ret_rms.count == same.ret_rms.count
    np.testing.assert_allclose(later.ret_rms.var, same.ret_rms.var)


def test_frame_stack_clears_at_the_reset_row_under_next_step(closing):
    venv = closing(VecFrameStack(DummyVecEnv(FNS, autoreset_mode="next_step"), n_stack=2))
    obs = venv.reset()
    for _ in range(LENGTH):
        previous, (obs, _, dones, infos) = obs, venv.step(ZEROS)
    assert dones.all() and "terminal_observation" not in infos[0]
    np.testing.assert_array_equal(obs[:, :3], previous[:, 3:])  # the last row, stacked with its history
    obs, rewards, dones, _ = venv.step(ZEROS)
    assert not rewards.any() and not dones.any()
    np.testing.assert_array_equal(obs[:, :3], 0.0)  # the reset row starts a zeroed history
    assert np.abs(obs[:, 3:]).min() > 0.0


def test_reset_envs_passes_through_each_wrappers_state_under_disabled(closing, tmp_path):
    base = DummyVecEnv(FNS, autoreset_mode="disabled")
    venv = closing(VecFrameStack(VecCheckNan(VecMonitor(base, tmp_path)), n_stack=2))
    venv.reset()
    assert episodes(venv, LENGTH) == [(10.0, LENGTH)] * 2
    with pytest.raises(ValueError, match=r"envs \[0, 1\] ended"):
        venv.step(ZEROS)
    obs = venv.reset_envs([1])
    assert obs.shape == (1, 6)
    np.testing.assert_array_equal(obs[0, :3], 0.0)  # a new history
    venv.reset_envs(np.array([True, False]))  # by mask
    assert episodes(venv, LENGTH) == [(10.0, LENGTH)] * 2  # the monitor's counts restarted
