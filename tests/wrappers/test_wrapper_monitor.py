"""VecMonitor: episode records in infos, and the monitor.csv file."""
from __future__ import annotations

import csv
import functools
import json

import gymnasium as gym
import numpy as np
import pytest

from tests.backends import BACKENDS
from tests.envs import SeededEnv
from tests.wrapper_envs import FrameEnv
from vec_envs import DummyVecEnv
from vec_envs.wrappers import VecMonitor
from vec_envs.wrappers.vec_monitor import monitor_path

N = 3


def read_monitor_csv(path):
    with open(path, newline="", encoding="utf-8") as f:
        first = f.readline()
        assert first.startswith("#")
        header = json.loads(first[1:])
        rows = list(csv.DictReader(f))
    return header, rows


def seeded_fns():
    return [functools.partial(SeededEnv, length=2 + i) for i in range(N)]


@pytest.mark.parametrize("make", BACKENDS)
def test_episode_records_equal_the_envs_returns_and_lengths(make, closing, tmp_path):
    venv = closing(VecMonitor(make(seeded_fns()), tmp_path, info_keywords=()))
    venv.reset()
    returns, lengths, records = np.zeros(N), np.zeros(N, int), []
    for step in range(13):
        actions = np.array([step % 3, 1, 2])
        _, rewards, dones, infos = venv.step(actions)
        returns += rewards
        lengths += 1
        for i in range(N):
            assert ("episode" in infos[i]) == dones[i]
            if dones[i]:
                episode = infos[i]["episode"]
                assert set(episode) == {"r", "l", "t"}
                assert episode["t"] >= 0
                # SeededEnv: reward of step t is action + t, episodes last 2 + i steps
                assert episode["l"] == lengths[i] == 2 + i
                assert episode["r"] == pytest.approx(returns[i])
                records.append((episode["r"], episode["l"], episode["t"]))
                returns[i], lengths[i] = 0, 0
    assert len(records) == 6 + 4 + 3
    assert venv.episode_count == 13
    header, rows = read_monitor_csv(tmp_path / "monitor.csv")
    assert set(header) == {"t_start", "env_id"}
    assert header["t_start"] == pytest.approx(venv.t_start)
    assert [(float(r["r"]), int(r["l"]), float(r["t"])) for r in rows] == records
    assert list(rows[0]) == ["r", "l", "t"]


def test_info_keywords_and_env_id(closing, tmp_path):
    venv = closing(VecMonitor(DummyVecEnv([functools.partial(FrameEnv, length=3)] * 2), tmp_path / "run",
                              info_keywords=("step",)))
    venv.reset()
    for _ in range(3):
        _, _, dones, infos = venv.step([0, 0])
    assert dones.tolist() == [True, True]
    assert infos[0]["episode"] == {"r": 6.0, "l": 3, "t": infos[0]["episode"]["t"], "step": 3}
    header, rows = read_monitor_csv(tmp_path / "run.monitor.csv")
    assert header["env_id"] == "None"
    assert [r["step"] for r in rows] == ["3", "3"]
    with VecMonitor(DummyVecEnv([lambda: gym.make("CartPole-v1")]), tmp_path / "cartpole.monitor.csv"):
        pass
    assert read_monitor_csv(tmp_path / "cartpole.monitor.csv")[0]["env_id"] == "CartPole-v1"


def test_reset_restarts_the_counts(closing):
    venv = closing(VecMonitor(DummyVecEnv([functools.partial(FrameEnv, length=3)])))
    venv.reset()
    venv.step([0])
    venv.step([0])
    venv.reset()
    for _ in range(3):
        _, _, dones, infos = venv.step([0])
    assert infos[0]["episode"]["l"] == 3
    assert infos[0]["episode"]["r"] == 6.0
    venv.step([0])
    venv.reset_single_env(0)
    for _ in range(3):
        _, _, dones, infos = venv.step([0])
    assert infos[0]["episode"]["l"] == 3


def test_close_closes_the_file_and_the_venv(tmp_path):
    venv = VecMonitor(DummyVecEnv(seeded_fns()), tmp_path)
    venv.close()
    assert venv.results_writer.file.closed
    assert venv.venv.closed
    venv.close()  # idempotent


def test_a_missing_info_keyword_is_a_clear_error(closing):
    venv = closing(VecMonitor(DummyVecEnv([functools.partial(FrameEnv, length=1)]), info_keywords=("lives",)))
    venv.reset()
    with pytest.raises(KeyError, match=r"info_keywords names 'lives', but the info of env 0 .* keys .*'step'"):
        venv.step([0])


def test_monitor_path_follows_the_baselines_naming(tmp_path):
    assert monitor_path(tmp_path) == str(tmp_path / "monitor.csv")
    assert monitor_path(tmp_path / "a") == str(tmp_path / "a.monitor.csv")
    assert monitor_path("x/monitor.csv") == "x/monitor.csv"
