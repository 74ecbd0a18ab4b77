"""Per-row wrappers, adapters, per-env access, rendering, restarts and close on multi-agent VecEnvs."""
from __future__ import annotations

import functools

import gymnasium as gym
import numpy as np
import psutil
import pytest
from mpe2 import simple_spread_v3

from tests.multiagent.parallel_envs import Relay
from tests.worker_groups import imports_sb3
from vec_envs.interop import to_gymnasium, to_sb3
from vec_envs.multiagent import make_multiagent_vec_env
from vec_envs.wrappers import VecFrameStack, VecMonitor, VecNormalize

SPREAD5 = functools.partial(simple_spread_v3.parallel_env, max_cycles=5)


def test_vec_monitor_counts_each_agent_episode() -> None:
    lifetimes = []
    for e in range(2):
        env = Relay()
        env.reset(seed=e)
        lifetimes.append([env.lifetimes[a] for a in env.possible_agents])
    with VecMonitor(make_multiagent_vec_env(Relay, 2)) as venv:
        venv.seed(0)
        venv.reset()
        lengths: dict[int, int] = {}
        for _ in range(6):
            _, _, dones, infos = venv.step(np.zeros(6, np.int64))
            for i in np.flatnonzero(dones):
                lengths.setdefault(int(i), infos[i]["episode"]["l"])
    assert [lengths[e * 3 + k] for e in range(2) for k in range(3)] == [n for row in lifetimes for n in row]


def test_vec_normalize_and_frame_stack_work_per_row() -> None:
    with VecNormalize(VecFrameStack(make_multiagent_vec_env(SPREAD5, 2), 4)) as venv:
        obs = venv.reset()
        assert obs.shape == (6, 72)
        for _ in range(7):
            obs, rewards, dones, infos = venv.step(np.ones(6, np.int64))
        assert obs.shape == (6, 72)
        assert rewards.shape == (6,)
        assert all(infos[i]["terminal_observation"].shape == (72,) for i in np.flatnonzero(dones))


def test_to_gymnasium_with_record_episode_statistics() -> None:
    envs = gym.wrappers.vector.RecordEpisodeStatistics(to_gymnasium(make_multiagent_vec_env(SPREAD5, 2)))
    envs.reset(seed=3)
    episodes = []
    for _ in range(10):
        _, _, terminations, truncations, infos = envs.step(np.zeros(6, np.int64))
        if "episode" in infos:
            episodes += infos["episode"]["l"][infos["_episode"]].tolist()
        assert not terminations.any()
    envs.close()
    assert episodes == [5] * 12  # two episodes of every agent row, truncated at 5 steps


@imports_sb3
def test_to_sb3_sees_rows() -> None:
    env = to_sb3(make_multiagent_vec_env(SPREAD5, 2))
    assert env.num_envs == 6
    assert env.reset().shape == (6, 18)
    assert env.get_attr("possible_agents") == [["agent_0", "agent_1", "agent_2"]] * 2  # per env
    env.close()


def test_get_attr_env_method_and_render_act_per_env() -> None:
    with make_multiagent_vec_env(functools.partial(Relay, render_mode="rgb_array"), 4) as venv:
        venv.reset()
        venv.step(np.zeros(12, np.int64))
        assert venv.get_attr("t") == [1, 1, 1, 1]
        assert venv.get_attr("t", indices=[2]) == [1]
        assert venv.env_method("lifetime", "blue", indices=[0, 3]) == [venv.get_attr("lifetimes")[e]["blue"]
                                                                       for e in (0, 3)]
        venv.set_attr("t", 7, indices=1)
        assert venv.get_attr("t") == [1, 7, 1, 1]
        frame = venv.render("rgb_array")
        assert frame.shape == (16, 16, 3)  # one 8x8 tile per env, 2 x 2
        assert frame[:8, 8:, 0].max() == 7  # env 1: top right
        assert frame[8:, :, 0].max() == 1


def test_seed_returns_each_rows_env_seed() -> None:
    with make_multiagent_vec_env(Relay, 2) as venv:
        assert venv.seed(5) == [5, 5, 5, 6, 6, 6]


def test_restarted_worker_ends_every_row_of_its_env() -> None:
    with make_multiagent_vec_env(functools.partial(Relay, crash_at=2), 2, vec_env_cls="subproc",
                                 vec_env_kwargs={"in_series": 1, "on_error": "restart"}) as venv:
        venv.seed(0)
        venv.reset()
        for _ in range(3):
            venv.step(np.zeros(6, np.int64))
        actions = np.zeros(6, np.int64)
        actions[0] = 2  # env 0 crashes at its step t == 3
        obs, rewards, dones, infos = venv.step(actions)
        assert dones[:3].all()
        assert all(infos[i].get("env_restarted") for i in range(3))
        assert not any(infos[i].get("env_restarted") for i in range(3, 6))
        assert venv.active[:3].all()
        obs, rewards, dones, infos = venv.step(np.zeros(6, np.int64))  # goes on
        assert obs.shape == (6, 3)


@pytest.mark.parametrize("backend", ["dummy", "subproc"])
def test_close_leaves_no_process(backend: str) -> None:
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    venv = make_multiagent_vec_env(SPREAD5, 4, vec_env_cls=backend, vec_env_kwargs=None)
    venv.reset()
    venv.step(np.zeros(12, np.int64))
    venv.close()
    venv.close()
    left = [p for p in psutil.Process().children(recursive=True) if p.pid not in before and p.is_running()
            and p.status() != psutil.STATUS_ZOMBIE]
    assert left == [] or all("forkserver" in " ".join(p.cmdline()) for p in left)
    with pytest.raises(Exception, match="after close"):
        venv.step(np.zeros(12, np.int64))


def test_vec_monitor_follows_rows_under_recv_send() -> None:
    with VecMonitor(make_multiagent_vec_env(SPREAD5, 4, vec_env_kwargs={"batch_size": 2})) as venv:
        venv.async_reset()
        lengths: list[int] = []
        for _ in range(24):
            _, _, dones, infos, rows = venv.recv()
            lengths += [infos[j]["episode"]["l"] for j in np.flatnonzero(dones)]
            venv.send(np.zeros(len(rows), np.int64), rows)
    assert lengths
    assert set(lengths) == {5}  # each agent row's episode, whatever the order envs come in
