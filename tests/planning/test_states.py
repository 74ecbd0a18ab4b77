"""State-based stepping for planning: get_states / set_states / sync_states / step_batch."""
from __future__ import annotations

import functools
import os
import subprocess
import sys
import threading
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.wrappers import TimeLimit

from tests.backends import BACKENDS
from tests.envs import SeededEnv
from vec_envs import DummyVecEnv, VecEnvWrapper
from vec_envs.errors import EnvWorkerError

N = 4
ALE_BACKEND_IDS = ("dummy", "subproc-default", "subproc-series2", "subproc-pipes", "ray-series2")
ALE_BACKENDS = [p for p in BACKENDS if p.id in ALE_BACKEND_IDS] or BACKENDS[:2]
ROOT = Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------- env factories
def cartpole():
    return gym.make("CartPole-v1")


def pong():
    import ale_py  # registers the ALE/ ids, also in spawned workers

    gym.register_envs(ale_py)
    return gym.make("ALE/Pong-v5")  # sticky actions (repeat_action_probability=0.25)


def time_limited():
    return TimeLimit(SeededEnv(length=1000), max_episode_steps=6)


class LockedEnv(SeededEnv):
    """Holds a lock: it cannot be deep-copied, so it cannot be snapshotted by default."""

    def __init__(self):
        super().__init__(length=1000)
        self.lock = threading.Lock()


class CustomStateEnv(LockedEnv):
    """A LockedEnv that provides its own get_state / set_state."""

    def get_state(self):
        return self.t, self.rng.bit_generator.state

    def set_state(self, state):
        self.t, self.rng.bit_generator.state = state[0], state[1]


def assert_same_steps(first, second):
    assert len(first) == len(second)
    for a, b in zip(first, second):
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)


def play(venv, actions):
    return [venv.step(a)[:3] for a in actions]


# ------------------------------------------------------------ restore and replay
@pytest.mark.parametrize("make", BACKENDS)
def test_restore_and_replay_cartpole(make, closing):
    venv = closing(make([cartpole] * N))
    venv.seed(3)
    venv.reset()
    actions = np.random.default_rng(0).integers(0, 2, (50, N))
    states = venv.get_states()
    first = play(venv, actions)  # random play: episodes end and auto-reset on the way
    venv.set_states(states)
    assert_same_steps(first, play(venv, actions))


@pytest.mark.parametrize("make", ALE_BACKENDS)
def test_restore_and_replay_pong_with_sticky_actions(make, closing):
    venv = closing(make([pong] * 2))
    venv.seed(0)
    venv.reset()
    actions = np.random.default_rng(1).integers(0, 6, (60, 2))
    play(venv, actions[:10])
    states = venv.get_states()
    first = play(venv, actions[10:])
    venv.set_states(states)
    assert_same_steps(first, play(venv, actions[10:]))
    venv.set_states(states)  # a second restore replays identically too
    assert_same_steps(first, play(venv, actions[10:]))


@pytest.mark.parametrize("make", BACKENDS[:3])
def test_wrapper_counters_are_restored(make, closing):
    venv = closing(make([time_limited] * 2))
    venv.reset()
    venv.step(np.zeros(2, int))
    venv.step(np.zeros(2, int))
    states = venv.get_states()
    first = venv.step_batch(np.ones(2, int), dt=10)  # truncated by TimeLimit after 4 more steps
    assert first[3].all()
    again = venv.step_batch(np.ones(2, int), states=states, dt=10, return_states=False)
    assert_same_steps([first[:4]], [again[:4]])


@pytest.mark.parametrize("make", BACKENDS[:3])
def test_env_with_its_own_get_state(make, closing):
    venv = closing(make([CustomStateEnv] * 3))
    venv.seed(1)
    venv.reset()
    actions = np.random.default_rng(2).integers(0, 3, (10, 3))
    states = venv.get_states()
    assert states[0].kind == "custom"
    first = play(venv, actions)
    venv.set_states(states)
    assert_same_steps(first, play(venv, actions))


@pytest.mark.parametrize("make", BACKENDS)
def test_set_and_sync_states_on_some_envs(make, closing):
    venv = closing(make([functools.partial(SeededEnv, length=100)] * N))
    venv.seed(7)
    venv.reset()
    states = venv.get_states([2, 0])
    venv.sync_states(states[0])  # every env now is env 2
    obs = venv.step(np.zeros(N, int))[0]
    assert (obs == obs[2]).all()
    venv.set_states(states, indices=[3, 1])  # env 3 <- env 2's state, env 1 <- env 0's
    obs_again = venv.step_batch(np.zeros(N, int))[0]
    np.testing.assert_array_equal(obs_again[3], obs[2])


# ---------------------------------------------------------------- step_batch
@pytest.mark.parametrize("make", BACKENDS)
def test_step_batch_from_one_state_equals_independent_copies(make, closing):
    venv = closing(make([cartpole] * N))
    venv.seed(5)
    venv.reset()
    prefix = [0, 1, 1, 0, 1]
    for a in prefix:
        venv.step(np.full(N, a))
    root = venv.get_states([0])[0]
    actions, dts = np.array([0, 1, 0, 1]), [1, 2, 3, 4]
    states, obs, rewards, terminated, truncated, infos = venv.step_batch(actions, states=[root] * N, dt=dts)
    assert obs.shape == (N, 4)
    assert rewards.dtype == np.float32
    assert len(states) == N
    assert len(infos) == N
    for i in range(N):
        env = cartpole()
        env.reset(seed=5)
        for a in prefix:
            env.step(a)
        total = 0.0
        for _ in range(dts[i]):
            ref_obs, reward, ref_terminated, ref_truncated, _ = env.step(int(actions[i]))
            total += reward
        np.testing.assert_array_equal(obs[i], ref_obs)
        assert (rewards[i], terminated[i], truncated[i]) == (total, ref_terminated, ref_truncated)
    again = venv.step_batch(np.zeros(N, int), states=states)  # the returned states go on from there
    assert not np.array_equal(again[1][0], again[1][1])


@pytest.mark.parametrize("make", BACKENDS)
@pytest.mark.parametrize("truncate", [False, True], ids=["terminated", "truncated"])
def test_dt_sums_rewards_and_stops_at_episode_end(make, truncate, closing):
    venv = closing(make([functools.partial(SeededEnv, length=5, truncate=truncate)] * 3))
    venv.seed(0)
    venv.reset()
    venv.step(np.zeros(3, int))  # t = 1
    root = venv.get_states([0])[0]
    states, obs, rewards, terminated, truncated, infos = venv.step_batch(
        [2, 1, 0], states=[root] * 3, dt=[1, 3, 10])
    # reward = action + t: t=2; t=2,3,4; t=2..5 then the episode ends (no more steps)
    np.testing.assert_array_equal(rewards, [4.0, 12.0, 14.0])
    ended = np.array([False, False, True])
    np.testing.assert_array_equal(truncated if truncate else terminated, ended)
    assert not (terminated if truncate else truncated).any()
    ref = SeededEnv(length=5, truncate=truncate)
    ref.reset(seed=0)
    last = [ref.step(0)[0] for _ in range(5)][-1]
    np.testing.assert_array_equal(obs[2], last)
    assert "terminal_observation" not in infos[2]  # no auto-reset
    after = venv.step_batch(np.zeros(3, int), states=[states[2]] * 3, return_states=False)
    np.testing.assert_array_equal(after[1], [6.0] * 3)  # the ended episode went on: t = 6


@pytest.mark.parametrize("make", BACKENDS[:2])
def test_step_batch_return_forms(make, closing):
    venv = closing(make([functools.partial(SeededEnv, length=100)] * 2))
    venv.reset()
    actions = np.zeros(2, int)
    assert len(venv.step_batch(actions)) == 5
    assert len(venv.step_batch(actions, return_states=True)) == 6
    states = venv.get_states()
    assert len(venv.step_batch(actions, states=states)) == 6
    assert len(venv.step_batch(actions, states=states, return_states=False)) == 5
    assert len(venv.step_batch(actions, states=[states[0], None])) == 6  # None: go on from where it is


# -------------------------------------------------------------------- errors
@pytest.mark.parametrize("make", BACKENDS[:3])
def test_wrong_number_of_states_or_dts(make, closing):
    venv = closing(make([functools.partial(SeededEnv, length=100)] * N))
    venv.reset()
    states = venv.get_states()
    with pytest.raises(ValueError, match=r"set_states\(\): expected 4 states \(one per index\), received 3"):
        venv.set_states(states[:3])
    with pytest.raises(ValueError, match=r"set_states\(\): expected 2 states .* received 4"):
        venv.set_states(states, indices=[0, 1])
    with pytest.raises(ValueError, match=r"step_batch\(\): expected 4 states \(one per env\), received 2"):
        venv.step_batch(np.zeros(N, int), states=states[:2])
    with pytest.raises(TypeError, match=r"received one state.*sync_states"):
        venv.set_states(states[0])
    with pytest.raises(TypeError, match=r"sync_states\(\): expected one state, received a list of 4"):
        venv.sync_states(states)
    with pytest.raises(ValueError, match=r"step_batch\(\): expected 4 actions \(one per env\), received 3"):
        venv.step_batch(np.zeros(3, int))
    with pytest.raises(ValueError, match=r"dt for env 2 must be an int >= 1, received 0"):
        venv.step_batch(np.zeros(N, int), dt=[1, 1, 0, 1])


@pytest.mark.parametrize("make", BACKENDS[:3])
def test_state_from_another_env_type(make, closing):
    venv = closing(make([functools.partial(SeededEnv, length=100)] * 3))
    venv.reset()
    with DummyVecEnv([cartpole]) as other:
        other.reset()
        foreign = other.get_states()[0]
    with pytest.raises((ValueError, EnvWorkerError),
                       match=r"env 2: this state was taken from .*CartPoleEnv\(CartPole-v1\), but the env "
                             r"is SeededEnv"):
        venv.set_states([foreign], indices=[2])
    with pytest.raises((TypeError, EnvWorkerError), match=r"env 0: expected a state returned by get_states"):
        venv.step_batch(np.zeros(3, int), states=["not a state"] * 3)


@pytest.mark.parametrize("make", BACKENDS[:3])
def test_env_without_snapshot_support(make, closing):
    venv = closing(make([SeededEnv, LockedEnv, SeededEnv]))
    venv.reset()
    with pytest.raises((TypeError, EnvWorkerError),
                       match=r"env 1: LockedEnv cannot be snapshotted: its attribute 'lock' could not be "
                             r"copied .*get_state\(\) -> state and set_state\(state\)"):
        venv.get_states()
    with pytest.raises((TypeError, EnvWorkerError), match=r"env 1: LockedEnv cannot be snapshotted"):
        venv.step_batch(np.zeros(3, int), return_states=True)


def test_wrappers_point_to_the_backend():
    with VecEnvWrapper(DummyVecEnv([SeededEnv])) as venv:
        with pytest.raises(NotImplementedError, match=r"VecEnvWrapper.get_states\(\): .*venv.unwrapped"):
            venv.get_states()
        assert len(venv.unwrapped.get_states()) == 1


# -------------------------------------------------------------- the planner
@pytest.mark.slow  # runs a script in a process of its own
def test_plan_atari_script_runs():
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "plan_atari.py"), "--steps", "8", "--num-envs", "4",
         "--horizon", "2", "--backend", "dummy"],
        capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert "planner" in done.stdout
    assert "random" in done.stdout


def test_plan_atari_without_ale_py_is_one_line_naming_the_extra(tmp_path):
    stub = tmp_path / "ale_py"  # an installed ale-py is hidden behind a package that fails to import
    stub.mkdir()
    (stub / "__init__.py").write_text("raise ImportError('No module named ale_py (hidden by the test)')\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(ROOT)]))
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "plan_atari.py")], capture_output=True,
                          text=True, timeout=120, env=env, cwd=ROOT)
    assert done.returncode == 1
    assert done.stderr == ('plan_atari.py: Atari needs ale-py >= 0.12 (the emulator, its ROMs and its C++ vector '
                           'engine ALEVectorInterface): pip install -e ".[atari]" (from a checkout) or '
                           'pip install "vec_envs[atari]"\n')
