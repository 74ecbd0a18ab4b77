"""The contract of docs/contract.md, written once and run on every backend in ``backends.BACKENDS``."""
from __future__ import annotations

import functools

import gymnasium as gym
import numpy as np
import pytest

from tests.backends import BACKENDS
from tests.envs import ColorEnv, DictObsEnv, OldApiEnv, OptionsEnv, QuietEnv, SeededEnv
from tests.helpers import check_lockstep_misuse
from vec_envs import tile_images
from vec_envs.errors import ClosedEnvironmentError
from vec_envs.wrappers import VecMonitor

pytestmark = pytest.mark.parametrize("make", BACKENDS)

N = 4


def seeded_fns(n=N, **kwargs):
    return [functools.partial(SeededEnv, length=3 + i, **kwargs) for i in range(n)]


def test_shapes_and_dtypes(make, closing):
    venv = closing(make(seeded_fns()))
    assert venv.num_envs == N
    assert venv.observation_space.shape == (3,)
    obs = venv.reset()
    assert obs.shape == (N, 3)
    assert obs.dtype == np.float32
    obs, rewards, dones, infos = venv.step(np.ones(N, dtype=np.int64))
    assert obs.shape == (N, 3)
    assert obs.dtype == np.float32
    assert rewards.shape == (N,)
    assert rewards.dtype == np.float32
    assert dones.shape == (N,)
    assert dones.dtype == np.bool_
    assert isinstance(infos, list)
    assert len(infos) == N
    assert all(isinstance(i, dict) for i in infos)
    np.testing.assert_array_equal(rewards, np.full(N, 2.0))


def test_auto_reset_with_different_episode_lengths(make, closing):
    venv = closing(make(seeded_fns()))
    reference = [SeededEnv(length=3 + i) for i in range(N)]
    venv.seed(10)
    obs = venv.reset()
    expected = np.stack([env.reset(seed=10 + i)[0] for i, env in enumerate(reference)])
    np.testing.assert_array_equal(obs, expected)
    for _ in range(12):
        obs, rewards, dones, infos = venv.step(np.zeros(N, dtype=np.int64))
        for i, env in enumerate(reference):
            ref_obs, ref_reward, terminated, truncated, _ = env.step(0)
            assert dones[i] == (terminated or truncated)
            assert rewards[i] == ref_reward
            if dones[i]:
                np.testing.assert_array_equal(infos[i]["terminal_observation"], ref_obs)
                assert infos[i]["TimeLimit.truncated"] is False
                ref_obs, reset_info = env.reset()
                assert venv.reset_infos[i] == reset_info
            else:
                assert "terminal_observation" not in infos[i]
            np.testing.assert_array_equal(obs[i], ref_obs)


def test_quiet_envs_still_report_every_auto_reset(make, closing):
    """Envs with empty step infos: the ended ones are still found (their terminal_observation),
    and an empty reset info replaces the previous one."""
    venv = closing(make([functools.partial(QuietEnv, length=2 + i) for i in range(N)]))
    reference = [QuietEnv(length=2 + i) for i in range(N)]
    venv.seed(3)
    venv.reset()
    for i, env in enumerate(reference):
        env.reset(seed=3 + i)
    for _ in range(9):
        _, _, dones, infos = venv.step(np.zeros(N, dtype=np.int64))
        for i, env in enumerate(reference):
            _, _, terminated, _, _ = env.step(0)
            assert dones[i] == terminated
            assert set(infos[i]) == ({"terminal_observation", "TimeLimit.truncated"} if terminated else set())
            if terminated:
                assert venv.reset_infos[i] == env.reset()[1]


def test_truncation_versus_termination(make, closing):
    fns = [functools.partial(SeededEnv, length=2, truncate=True), functools.partial(SeededEnv, length=2)]
    venv = closing(make(fns))
    venv.reset()
    venv.step([0, 0])
    _, _, dones, infos = venv.step([0, 0])
    assert dones.tolist() == [True, True]
    assert infos[0]["TimeLimit.truncated"] is True
    assert infos[1]["TimeLimit.truncated"] is False


def test_seed_applies_once_at_next_reset(make, closing):
    venv = closing(make(seeded_fns()))
    assert venv.seed(7) == [7, 8, 9, 10]
    first = venv.reset()
    expected = np.stack([SeededEnv().reset(seed=7 + i)[0] for i in range(N)])
    np.testing.assert_array_equal(first, expected)
    second = venv.reset()
    assert not np.array_equal(first, second)
    venv.seed([3, 1, 4, 1])
    np.testing.assert_array_equal(venv.reset()[3], SeededEnv().reset(seed=1)[0])


def test_seed_list_of_wrong_length_is_a_clear_error(make, closing):
    venv = closing(make(seeded_fns()))
    with pytest.raises(ValueError, match="expected 4 seeds"):
        venv.seed([1, 2])


def reset_options(venv):
    return [info["options"] for info in venv.reset_infos]


def test_set_options_reach_every_env_at_the_next_reset_only(make, closing):
    venv = closing(make([functools.partial(OptionsEnv, length=1 + i % 2) for i in range(N)]))
    venv.set_options({"level": 3})
    venv.reset()
    assert reset_options(venv) == [{"level": 3}] * N
    venv.step(np.zeros(N, np.int64))  # envs 0 and 2 end and auto-reset: without options
    assert reset_options(venv) == [None, {"level": 3}, None, {"level": 3}]
    venv.set_options([{"level": i} for i in range(N - 1)] + [None])
    venv.reset()
    assert reset_options(venv) == [{"level": 0}, {"level": 1}, {"level": 2}, {}]
    venv.reset()
    assert reset_options(venv) == [None] * N


def test_set_options_through_async_reset_and_a_wrapper(make, closing):
    venv = closing(VecMonitor(make([OptionsEnv] * N, batch_size=2)))
    venv.set_options([{"level": i} for i in range(N)])
    venv.async_reset()
    seen = {}
    for _ in range(2):
        _, _, _, infos, env_ids = venv.recv()
        seen.update({int(i): info["options"] for i, info in zip(env_ids, infos)})
    assert seen == {i: {"level": i} for i in range(N)}
    venv.send(np.zeros(2, np.int64), env_ids)
    venv.recv()
    venv.reset()
    assert reset_options(venv) == [None] * N
    backend = venv.unwrapped
    if hasattr(backend, "reset_async"):  # the worker backends' split reset
        backend.set_options({"level": 9})
        backend.reset_async()
        backend.reset_wait()
        assert reset_options(backend) == [{"level": 9}] * N


def test_set_options_bad_input_is_a_clear_error(make, closing):
    venv = closing(make([OptionsEnv] * N))
    with pytest.raises(ValueError, match=r"set_options\(\): expected a dict for every env or a list of 4 "
                                         r"\(one per env\), received a list of 2"):
        venv.set_options([{}, {}])
    with pytest.raises(TypeError, match=r"set_options\(\): env 1's options must be a dict or None, received 3 \(int\)"):
        venv.set_options([{}, 3, {}, {}])
    with pytest.raises(TypeError, match=r"set_options\(\): expected a dict .* received 'fast' \(str\)"):
        venv.set_options("fast")
    venv.reset()
    assert reset_options(venv) == [None] * N  # nothing was kept from the refused calls
    venv.close()
    with pytest.raises(ClosedEnvironmentError, match=r"set_options\(\) called after close"):
        venv.set_options({})


def test_dict_and_tuple_observations(make, closing):
    venv = closing(make([functools.partial(DictObsEnv, length=2 + i) for i in range(3)]))
    venv.seed(0)
    obs = venv.reset()
    assert obs["pos"].shape == (3, 2, 2)
    assert obs["pos"].dtype == np.float32
    assert obs["nested"]["count"].shape == (3,)
    assert obs["nested"]["count"].dtype == np.int64
    assert obs["nested"]["pair"][0].shape == (3, 3)
    assert obs["nested"]["pair"][0].dtype == np.int8
    assert obs["nested"]["pair"][1].shape == (3, 2)
    reference = DictObsEnv(length=2)
    ref_first, _ = reference.reset(seed=0)
    np.testing.assert_array_equal(obs["pos"][0], ref_first["pos"])
    assert obs["nested"]["count"][0] == ref_first["nested"]["count"]
    reference.step(np.zeros(2))
    ref_last, *_ = reference.step(np.zeros(2))
    venv.step(np.zeros((3, 2), np.float32))
    _, _, dones, infos = venv.step(np.zeros((3, 2), np.float32))
    assert dones.tolist() == [True, False, False]
    terminal = infos[0]["terminal_observation"]
    np.testing.assert_array_equal(terminal["pos"], ref_last["pos"])
    np.testing.assert_array_equal(terminal["nested"]["pair"][1], ref_last["nested"]["pair"][1])


def test_attributes_and_methods_with_indices(make, closing):
    venv = closing(make(seeded_fns()))
    assert venv.get_attr("length") == [3, 4, 5, 6]
    assert venv.get_attr("length", indices=2) == [5]
    assert venv.get_attr("length", indices=[3, 0]) == [6, 3]
    venv.set_attr("length", 9, indices=[1, 2])
    assert venv.get_attr("length") == [3, 9, 9, 6]
    assert venv.env_method("ping", 2, scale=3, indices=[0]) == [("pong", 6)]
    assert venv.env_method("ping", 1) == [("pong", 1)] * N
    assert venv.env_is_wrapped(gym.wrappers.PassiveEnvChecker) == [False] * N
    with pytest.raises(IndexError, match="env index 7 is out of range for 4 envs"):
        venv.get_attr("length", indices=[7])


def test_env_is_wrapped_sees_gymnasium_wrappers(make, closing):
    venv = closing(make([lambda: gym.make("CartPole-v1")] * 2))
    assert venv.env_is_wrapped(gym.wrappers.TimeLimit) == [True, True]
    assert venv.env_is_wrapped(gym.wrappers.RecordEpisodeStatistics, indices=1) == [False]
    assert venv.get_attr("spec")[0].id == "CartPole-v1"


def test_reset_single_env(make, closing):
    venv = closing(make(seeded_fns()))
    venv.reset()
    venv.seed(5)
    obs2 = venv.reset_single_env(2)
    assert obs2.shape == (3,)
    np.testing.assert_array_equal(obs2, SeededEnv().reset(seed=7)[0])
    assert venv.reset_infos[2]["reset_count"] == 2


def test_render_rgb_array_tiles_every_frame(make, closing):
    colors = [(255, 0, 0), (0, 255, 0), (0, 0, 255)]
    venv = closing(make([functools.partial(ColorEnv, c) for c in colors]))
    venv.reset()
    images = venv.get_images()
    assert [img.shape for img in images] == [(40, 60, 3)] * 3
    tiled = venv.render(mode="rgb_array")
    np.testing.assert_array_equal(tiled, tile_images(images))
    assert tiled.shape == (80, 120, 3)
    assert tuple(tiled[30, 30]) == colors[0]
    assert tuple(tiled[30, 90]) == colors[1]
    assert tuple(tiled[70, 30]) == colors[2]
    assert tuple(tiled[70, 90]) == (0, 0, 0)


def test_get_images_without_rgb_array_mode_is_a_clear_error(make, closing):
    venv = closing(make(seeded_fns(2)))
    with pytest.raises(Exception, match="render_mode='rgb_array'"):
        venv.get_images()


def test_misuse_errors(make, closing):
    venv = closing(make(seeded_fns()))
    venv.reset()
    check_lockstep_misuse(venv, N)
    with pytest.raises(ValueError, match="render"):
        venv.render(mode="ansi")
    venv.close()
    venv.close()  # idempotent
    for call in (venv.reset, lambda: venv.step(np.zeros(N, np.int64)), lambda: venv.get_attr("t")):
        with pytest.raises(ClosedEnvironmentError, match="after close"):
            call()


def test_old_gym_api_env_runs_unchanged(make, closing):
    venv = closing(make([functools.partial(OldApiEnv, length=3), functools.partial(OldApiEnv, length=2)]))
    venv.seed(100)
    np.testing.assert_array_equal(venv.reset(), [[100.0], [101.0]])
    venv.step([0, 0])
    obs, rewards, dones, infos = venv.step([0, 0])
    assert dones.tolist() == [False, True]
    assert infos[1]["TimeLimit.truncated"] is False
    np.testing.assert_array_equal(infos[1]["terminal_observation"], [103.0])
    obs, rewards, dones, infos = venv.step([0, 0])
    assert dones.tolist() == [True, False]
    assert infos[0]["TimeLimit.truncated"] is True
    np.testing.assert_array_equal(obs, [[100.0], [102.0]])


def test_with_block_closes(make):
    with make(seeded_fns(2)) as venv:
        venv.reset()
    assert venv.closed
    with pytest.raises(ClosedEnvironmentError):
        venv.reset()


def test_copy_semantics(make, closing):
    venv = closing(make(seeded_fns(), copy=True))
    obs = venv.reset()
    kept = obs.copy()
    obs2, rewards, dones, infos = venv.step(np.zeros(N, np.int64))
    kept_rewards = rewards.copy()
    venv.step(np.zeros(N, np.int64))
    np.testing.assert_array_equal(obs, kept)
    np.testing.assert_array_equal(rewards, kept_rewards)
    assert not np.shares_memory(obs, obs2)


def test_copy_false_hands_out_views_valid_until_next_step(make, closing):
    venv = closing(make(seeded_fns(), copy=False))
    venv.reset()
    obs, *_ = venv.step(np.zeros(N, np.int64))
    snapshot = obs.copy()
    obs_next, *_ = venv.step(np.zeros(N, np.int64))
    np.testing.assert_array_equal(obs, obs_next)  # the same buffer, refreshed
    assert not np.array_equal(snapshot, obs_next)


def test_wrong_observation_shape_is_a_clear_error(make, closing):
    from tests.envs import BadShapeEnv

    venv = closing(make([SeededEnv, BadShapeEnv]))
    venv.reset()
    with pytest.raises(Exception, match=r"shape \(2,\).*expects shape \(3,\)") as info:
        venv.step([0, 0])
    assert "env 1" in str(info.value) + "".join(getattr(info.value, "__notes__", []))


def test_unwrapped_is_self(make, closing):
    venv = closing(make(seeded_fns(2)))
    assert venv.unwrapped is venv
