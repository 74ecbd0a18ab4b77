"""Next-step and disabled autoreset on every backend, row for row what gymnasium's
``SyncVectorEnv(autoreset_mode=NEXT_STEP / DISABLED)`` returns over the same env fns,
seeds and actions, lock-step and through recv/send, across many episode ends."""
from __future__ import annotations

import functools

import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, SyncVectorEnv

from tests.backends import dummy, ray, ray_marks, subproc
from tests.envs import QuietEnv, SeededEnv
from tests.helpers import assert_same, assert_same_step
from vec_envs import DummyVecEnv
from vec_envs.interop import to_gymnasium

#: episodes ending by termination (lengths 4, 5, 3) and by truncation (length 3), with and without infos
ENV_FNS = [functools.partial(SeededEnv, length=4), functools.partial(SeededEnv, length=3, truncate=True),
           functools.partial(QuietEnv, length=5), functools.partial(QuietEnv, length=3)]
N = len(ENV_FNS)
ACTIONS = np.random.default_rng(0).integers(0, 3, size=(30, N))

BACKENDS = [
    pytest.param(dummy, id="dummy"),
    pytest.param(functools.partial(subproc, in_series=1, context="fork"), id="subproc-shm-series1"),
    pytest.param(functools.partial(subproc, in_series="auto", context="fork"), id="subproc-shm-auto"),
    pytest.param(functools.partial(subproc, in_series=2, context="fork", shared_memory=False), id="subproc-pipes"),
    pytest.param(functools.partial(ray, in_series=2), id="ray-series2", marks=ray_marks),
]
MODES = [pytest.param(AutoresetMode.NEXT_STEP, id="next_step"), pytest.param(AutoresetMode.DISABLED, id="disabled")]


def run_both(ours, ref, mode, actions=ACTIONS):
    """Step both alike (disabled: reset the ended envs by mask, as a gymnasium agent does);
    the number of episode ends."""
    assert_same(ours.reset(seed=7), ref.reset(seed=7))
    ends = 0
    for t, step_actions in enumerate(actions):
        got, want = ours.step(step_actions), ref.step(step_actions)
        assert_same_step(got, want)
        ended = got[2] | got[3]
        ends += int(ended.sum())
        if mode is AutoresetMode.DISABLED and ended.any():
            assert_same(ours.reset(seed=100 + t, options={"reset_mask": ended}),
                        ref.reset(seed=100 + t, options={"reset_mask": ended.copy()}))
    return ends


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("make", BACKENDS)
def test_lock_step_rows_equal_gymnasiums_sync_vector_env(make, mode, closing):
    ours = closing(to_gymnasium(make(ENV_FNS, autoreset_mode=mode)))
    ref = closing(SyncVectorEnv(ENV_FNS, autoreset_mode=mode))
    assert ours.metadata["autoreset_mode"] is mode
    assert run_both(ours, ref, mode) >= 25  # every env ended many episodes
    assert run_both(ours, ref, mode, ACTIONS[:6]) >= 4  # a second reset starts over alike


def trajectories_by_recv_send(venv, steps, mode):
    """Each env's rows (obs, reward, done, info) driven by recv/send, env i's t-th action
    ``ACTIONS[t, i]``; under disabled an ended env is reset (``reset_envs``) when no env is
    in flight, then sent its next action."""
    rows = {i: [] for i in range(N)}
    sent = np.zeros(N, int)
    venv.seed(7)
    venv.async_reset()
    while min(len(env_rows) for env_rows in rows.values()) <= steps:
        obs, rewards, dones, infos, env_ids = venv.recv()
        for j, i in enumerate(env_ids.tolist()):
            rows[i].append((obs[j].copy(), float(rewards[j]), bool(dones[j]), infos[j]))
        if mode is AutoresetMode.DISABLED and dones.any():
            assert venv.batch_size == N  # every env returned: reset_envs may run
            ended = env_ids[dones]
            reset_obs = venv.reset_envs(ended.tolist())
            for j, i in enumerate(ended.tolist()):
                rows[i].append((reset_obs[j].copy(), 0.0, False, venv.reset_infos[i]))
        actions = np.array([ACTIONS[min(sent[i], len(ACTIONS) - 1), i] for i in env_ids.tolist()])
        sent[env_ids] += 1
        venv.send(actions, env_ids)
    return rows


def env_info(infos, i):
    """Env ``i``'s info out of gymnasium's batched ``infos``."""
    return {key: value[i] for key, value in infos.items() if not key.startswith("_") and infos[f"_{key}"][i]}


def trajectories_of_gymnasium(mode, steps):
    ref = SyncVectorEnv(ENV_FNS, autoreset_mode=mode)
    rows = {i: [] for i in range(N)}
    obs, infos = ref.reset(seed=7)
    for i in range(N):
        rows[i].append((obs[i], 0.0, False, env_info(infos, i)))
    for t in range(steps):
        obs, rewards, terminated, truncated, infos = ref.step(ACTIONS[t])
        ended = terminated | truncated
        for i in range(N):
            info = env_info(infos, i)
            if ended[i]:
                info["TimeLimit.truncated"] = bool(truncated[i] and not terminated[i])
            rows[i].append((obs[i], float(rewards[i]), bool(ended[i]), info))
        if mode is AutoresetMode.DISABLED and ended.any():
            obs, infos = ref.reset(options={"reset_mask": ended})
            for i in np.flatnonzero(ended).tolist():
                rows[i].append((obs[i], 0.0, False, env_info(infos, i)))
    ref.close()
    return rows


RECV_BACKENDS = [
    pytest.param(functools.partial(dummy, batch_size=2), id="dummy-batch2"),
    pytest.param(functools.partial(subproc, in_series=1, context="fork", batch_size=2), id="subproc-shm-series1"),
    pytest.param(functools.partial(subproc, in_series=2, context="fork", batch_size=1), id="subproc-shm-series2"),
    pytest.param(functools.partial(subproc, in_series=2, context="fork", shared_memory=False, batch_size=3),
                 id="subproc-pipes"),
    pytest.param(functools.partial(ray, in_series=2, batch_size=2), id="ray-series2", marks=ray_marks),
]


@pytest.mark.parametrize("make", RECV_BACKENDS)
def test_recv_send_next_step_rows_of_each_env_equal_gymnasiums(make, closing):
    steps = 20
    venv = closing(make(ENV_FNS, autoreset_mode="next_step"))
    got, want = trajectories_by_recv_send(venv, steps, AutoresetMode.NEXT_STEP), \
        trajectories_of_gymnasium(AutoresetMode.NEXT_STEP, steps)
    for i in range(N):
        assert_same(got[i][:steps + 1], want[i])
    assert sum(done for i in range(N) for _, _, done, _ in want[i]) >= 15


@pytest.mark.parametrize("make", [pytest.param(dummy, id="dummy"),
                                  pytest.param(functools.partial(subproc, in_series=2, context="fork"),
                                               id="subproc-shm-series2")])
def test_recv_send_disabled_rows_of_each_env_equal_gymnasiums(make, closing):
    steps = 12
    venv = closing(make(ENV_FNS, autoreset_mode="disabled"))
    got, want = trajectories_by_recv_send(venv, steps, AutoresetMode.DISABLED), \
        trajectories_of_gymnasium(AutoresetMode.DISABLED, steps)
    for i in range(N):
        n = min(len(got[i]), len(want[i]))
        assert n > steps
        assert_same(got[i][:n], want[i][:n])
    assert sum(done for i in range(N) for _, _, done, _ in want[i]) >= 8


@pytest.mark.parametrize("make", BACKENDS[:4])
def test_a_disabled_env_that_ended_refuses_its_step_until_reset(make, closing):
    venv = closing(make(ENV_FNS, autoreset_mode="disabled"))
    venv.reset()
    for _ in range(2):
        venv.step(np.zeros(N, int))
    dones = venv.step(np.zeros(N, int))[2]
    assert dones.tolist() == [False, True, False, True]
    with pytest.raises(ValueError, match=r"step_async\(\): envs \[1, 3\] ended .* reset_envs\(\[1, 3\]\)"):
        venv.step(np.zeros(N, int))
    obs = venv.reset_envs([1, 3])
    assert obs.shape == (2, 3)
    assert venv.step(np.zeros(N, int))[1].tolist() == [4.0, 1.0, 4.0, 1.0]


def test_next_step_rows_in_the_vec_env_contract(closing):
    venv = closing(DummyVecEnv(ENV_FNS[:2], autoreset_mode="next_step"))
    venv.seed(0)
    venv.reset()
    for _ in range(2):
        venv.step([0, 0])
    last, rewards, dones, infos = venv.step([0, 0])
    assert dones.tolist() == [False, True]
    assert infos[1] == {"TimeLimit.truncated": True}  # the row is the last observation: no terminal_observation
    obs, rewards, dones, infos = venv.step([2, 2])
    assert (rewards.tolist(), dones.tolist()) == ([6.0, 0.0], [True, False])  # env 1: its reset row, action unread
    assert infos[1] == {"reset_count": 2} and venv.reset_infos[1] == {"reset_count": 2}
    assert not np.array_equal(obs[1], last[1])


def test_the_mode_is_checked_once_for_every_backend():
    with pytest.raises(ValueError, match=r"DummyVecEnv: autoreset_mode must be 'same_step', 'next_step' or "
                                         r"'disabled' .*received 'NEXT'"):
        DummyVecEnv(ENV_FNS, autoreset_mode="NEXT")
    with pytest.raises(ValueError, match=r"SubprocVecEnv: autoreset_mode must be .*received 3"):
        subproc(ENV_FNS, autoreset_mode=3)


@pytest.mark.parametrize("name, mode", [("same_step", AutoresetMode.SAME_STEP), ("NextStep", AutoresetMode.NEXT_STEP),
                                        (AutoresetMode.DISABLED, AutoresetMode.DISABLED)])
def test_the_mode_takes_its_names_and_gymnasiums_values(name, mode, closing):
    assert closing(DummyVecEnv(ENV_FNS, autoreset_mode=name)).autoreset_mode is mode


def test_make_vec_env_passes_the_mode_to_the_backend(closing):
    from vec_envs import make_vec_env

    venv = closing(make_vec_env(ENV_FNS[0], n_envs=2, autoreset_mode="next_step"))
    assert venv.autoreset_mode is AutoresetMode.NEXT_STEP
    with pytest.raises(ValueError, match=r"make_vec_env\(\): autoreset_mode='disabled' and vec_env_kwargs="
                                         r"\{'autoreset_mode': 'next_step'\} both set the mode"):
        make_vec_env(ENV_FNS[0], n_envs=2, autoreset_mode="disabled", vec_env_kwargs={"autoreset_mode": "next_step"})
