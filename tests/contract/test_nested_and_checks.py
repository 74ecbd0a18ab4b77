"""The shared helpers: the nested-space walker, check_int, the monitor.csv writer."""
from __future__ import annotations

import json
from typing import NamedTuple

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.envs.classic_control import CartPoleEnv

from tests.worker_groups import imports_sb3
from vec_envs import DummyVecEnv
from vec_envs.arguments import check_int
from vec_envs.monitoring.monitor_csv import MonitorCsv
from vec_envs.spaces.batching import batch_of_one, copy_obs, create_batch, write_rows
from vec_envs.spaces.nested import is_fixed_size, iter_leaves, map_leaves, path_text
from vec_envs.wrappers import VecMonitor
from vec_envs.wrappers.atari import EpisodeMonitor

SPACE = spaces.Dict({"pos": spaces.Box(-1, 1, (2,)), "hand": spaces.Tuple([spaces.Discrete(3), spaces.MultiBinary(4)])})


class Pair(NamedTuple):
    left: object
    right: object


def test_iter_leaves_walks_spaces_and_values_alike():
    assert [path_text(p) for p, _ in iter_leaves(SPACE)] == ["['hand'][0]", "['hand'][1]", "['pos']"]
    batch = create_batch(SPACE, 5)
    assert [(p, leaf.shape) for p, leaf in iter_leaves(batch)] == [
        (("hand", 0), (5,)), (("hand", 1), (5, 4)), (("pos",), (5, 2))]
    assert is_fixed_size(SPACE)
    assert not is_fixed_size(spaces.Dict({"x": spaces.Text(5)}))
    assert create_batch(spaces.Tuple([spaces.Text(5)]), 3) == ([None, None, None],)


def test_map_leaves_keeps_the_nesting_and_goes_along_other_trees():
    batch = create_batch(SPACE, 4)
    write_rows(batch, 2, {"pos": np.ones((2, 2)), "hand": (np.array([1, 2]), np.ones((2, 4), np.int8))})
    assert batch["pos"][:, 0].tolist() == [0, 0, 1, 1]
    assert batch["hand"][0].tolist() == [0, 0, 1, 2]
    one = batch_of_one({"pos": [0.5, 0.5], "hand": (2, np.zeros(4, np.int8))})
    assert one["pos"].shape == (1, 2)
    assert one["hand"][0].shape == (1,)
    copied = copy_obs(batch)
    assert copied["pos"] is not batch["pos"]
    assert np.array_equal(copied["pos"], batch["pos"])
    pair = map_leaves(lambda leaf: leaf * 2, Pair(1, (2, [3])))
    assert type(pair) is Pair
    assert pair == Pair(2, (4, [3, 3]))  # lists are leaves unless asked
    assert map_leaves(lambda leaf: leaf * 2, [1, {"a": 2}], into_lists=True) == [2, {"a": 4}]


@pytest.mark.parametrize("value", [0, -3, 2.0, True, "4", None])
def test_check_int_names_what_it_received(value):
    with pytest.raises(ValueError, match=rf"^VecFrameStack: n_stack must be an int >= 1, received {value!r}$"):
        check_int("VecFrameStack: n_stack", value)


def test_check_int_accepts_numpy_ints_and_names_alternatives():
    assert check_int("n", np.int64(3)) == 3
    assert type(check_int("n", np.int64(3))) is int
    with pytest.raises(ValueError, match=r"in_series must be an int >= 1 or 'auto', received 'many'"):
        check_int("in_series", "many", alternatives="or 'auto'")


def test_both_monitors_write_the_same_sb3_file(tmp_path):
    env = EpisodeMonitor(CartPoleEnv(), str(tmp_path / "0.monitor.csv"))  # no spec: env_id "None"
    env.reset(seed=0)
    while not env.step(0)[2]:
        pass
    env.close()
    venv = VecMonitor(DummyVecEnv([CartPoleEnv]), str(tmp_path / "1"))
    venv.reset()
    while not venv.step([0])[2][0]:
        pass
    venv.close()
    lines = [(tmp_path / name).read_text().splitlines() for name in ("0.monitor.csv", "1.monitor.csv")]
    assert [json.loads(text[0][1:])["env_id"] for text in lines] == ["None", "None"]
    assert [text[1] for text in lines] == ["r,l,t", "r,l,t"]
    assert [len(text) for text in lines] == [3, 3]


@imports_sb3
def test_monitor_csv_is_byte_for_byte_sb3s(tmp_path):
    from stable_baselines3.common.monitor import ResultsWriter

    row = {"r": 21.0, "l": 812, "t": 3.25, "lives": 0}
    ours = MonitorCsv(str(tmp_path / "ours.monitor.csv"), t_start=1.5, env_id=None, extra_keys=("lives",))
    ours.write_row(row)
    ours.close()
    theirs = ResultsWriter(str(tmp_path / "sb3"), header={"t_start": 1.5, "env_id": str(None)}, extra_keys=("lives",))
    theirs.write_row(row)
    theirs.close()
    assert (tmp_path / "ours.monitor.csv").read_bytes() == (tmp_path / "sb3.monitor.csv").read_bytes()


def test_monitor_reads_gym_ids(tmp_path):
    venv = VecMonitor(DummyVecEnv([lambda: gym.make("CartPole-v1")]), str(tmp_path))
    venv.close()
    assert json.loads((tmp_path / "monitor.csv").read_text().splitlines()[0][1:])["env_id"] == "CartPole-v1"


def test_a_space_inside_a_value_is_a_leaf():
    reply = Pair(SPACE, {"infos": [{"x": np.ones(2)}]})  # what a worker's reply carries
    assert map_leaves(lambda leaf: leaf, reply, into_lists=True).left is SPACE
    assert [path for path, _ in iter_leaves(reply)] == [(0,), (1, "infos")]
