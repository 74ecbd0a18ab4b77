"""vec_envs.interop against the real thing: gymnasium's vector envs and wrappers, and SB3."""
from __future__ import annotations

import functools
import os
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AsyncVectorEnv, AutoresetMode, SyncVectorEnv

from tests.envs import OptionsEnv, SeededEnv
from tests.helpers import assert_same
from tests.worker_groups import imports_sb3
from vec_envs import DummyVecEnv, SubprocVecEnv
from vec_envs.interop import from_gymnasium, to_gymnasium, to_sb3
from vec_envs.spaces.batching import copy_obs
from vec_envs.wrappers import VecFrameStack, VecMonitor, VecNormalize

#: episodes that end by termination (length 4) and by truncation (length 3), with infos
ENV_FNS = [functools.partial(SeededEnv, length=4), functools.partial(SeededEnv, length=3, truncate=True),
           functools.partial(SeededEnv, length=5)]
ACTIONS = np.random.default_rng(0).integers(0, 3, size=(14, 3))


def cartpole():
    return gym.make("CartPole-v1", max_episode_steps=30)


def backend(name, env_fns):
    return DummyVecEnv(env_fns) if name == "dummy" else SubprocVecEnv(env_fns, in_series=2, context="fork")


# ------------------------------------------------------------------ to_gymnasium
@pytest.mark.parametrize("name", ["dummy", "subproc"])
def test_to_gymnasium_steps_like_gymnasiums_same_step_sync_vector_env(name, closing):
    ours = closing(to_gymnasium(backend(name, ENV_FNS)))
    ref = closing(SyncVectorEnv(ENV_FNS, autoreset_mode=AutoresetMode.SAME_STEP))
    assert ours.metadata["autoreset_mode"] is AutoresetMode.SAME_STEP
    assert (ours.single_observation_space, ours.single_action_space) == (ref.single_observation_space,
                                                                         ref.single_action_space)
    assert (ours.observation_space, ours.action_space) == (ref.observation_space, ref.action_space)
    assert_same(ours.reset(seed=7), ref.reset(seed=7))
    for actions in ACTIONS:
        obs, rewards, terminations, truncations, infos = ours.step(actions)
        ref_obs, ref_rewards, ref_terminations, ref_truncations, ref_infos = ref.step(actions)
        np.testing.assert_array_equal(obs, ref_obs)
        np.testing.assert_array_equal(rewards, ref_rewards)
        assert_same((terminations, truncations), (ref_terminations, ref_truncations))
        assert infos.keys() == ref_infos.keys()
        for key in infos:
            if key != "final_obs":
                assert_same(infos[key], ref_infos[key])
        for got, want in zip(infos.get("final_obs", []), ref_infos.get("final_obs", [])):
            assert_same(got, want)


def test_gymnasiums_record_episode_statistics_accepts_it_and_agrees_with_vec_monitor(closing):
    stats = gym.wrappers.vector.RecordEpisodeStatistics(to_gymnasium(VecMonitor(DummyVecEnv([cartpole] * 4))))
    envs = closing(gym.wrappers.vector.ClipReward(stats, max_reward=0.5))  # a reward wrapper on top
    envs.reset(seed=0)
    theirs, ours = [], []
    rng = np.random.default_rng(1)
    while len(theirs) < 10:
        _, rewards, terminations, truncations, infos = envs.step(rng.integers(0, 2, size=4))
        assert (rewards == 0.5).all()
        if "episode" in infos:
            theirs += list(infos["episode"]["r"][infos["_episode"]])
            ours += list(infos["final_info"]["episode"]["r"][infos["_final_info"]])
        assert not (terminations & truncations).any()
    np.testing.assert_allclose(theirs, ours)
    assert set(theirs) != {30.0}  # some episodes terminated before the time limit


def test_to_gymnasium_over_our_wrappers_stacks_the_final_obs_too(closing):
    envs = closing(to_gymnasium(VecFrameStack(DummyVecEnv([cartpole] * 2), 3)))
    obs, _ = envs.reset(seed=0)
    assert obs.shape == (2, 12)
    assert envs.single_observation_space.shape == (12,)
    while True:
        obs, _, _, _, infos = envs.step(np.ones(2, int))
        if "final_obs" in infos:
            break
    i = int(np.flatnonzero(infos["_final_obs"])[0])
    assert infos["final_obs"][i].shape == (12,)
    assert not obs[i, :8].any()  # a new episode's stack starts from zeros


def test_to_gymnasium_errors_name_the_mistake(closing):
    with pytest.raises(TypeError, match="expected a vec_envs VecEnv.*received SyncVectorEnv"):
        to_gymnasium(SyncVectorEnv([cartpole]))
    envs = closing(to_gymnasium(DummyVecEnv([cartpole])))
    with pytest.raises(TypeError, match=r"set_options\(\): expected a dict .* received 7 \(int\)"):
        envs.reset(options=7)
    envs.close()
    with pytest.raises(Exception, match="called after close"):
        envs.step(np.zeros(1, int))


@pytest.mark.parametrize("name", ["dummy", "subproc"])
def test_to_gymnasium_reset_options_reach_every_env_for_that_reset(name, closing):
    envs = closing(to_gymnasium(backend(name, [functools.partial(OptionsEnv, length=1)] * 3)))
    obs, infos = envs.reset(seed=0, options={"level": 2})
    assert infos["options"]["level"].tolist() == [2, 2, 2]
    assert infos["options"]["_level"].all()
    np.testing.assert_array_equal(obs[1], SeededEnv().reset(seed=1)[0])
    _, _, terminations, _, infos = envs.step(np.zeros(3, int))  # every episode ends: auto-reset
    assert terminations.all()
    assert list(infos["options"]) == [None] * 3
    _, infos = envs.reset()
    assert list(infos["options"]) == [None] * 3


def test_to_gymnasium_call_get_attr_set_attr(closing):
    envs = closing(to_gymnasium(DummyVecEnv([SeededEnv] * 2)))
    assert envs.call("ping", 2, scale=3) == (("pong", 6), ("pong", 6))
    envs.set_attr("length", [7, 8])
    assert envs.get_attr("length") == (7, 8) == envs.call("length")


# ------------------------------------------------------------------ from_gymnasium
def gym_vector_env(mode):
    if mode == "async":
        return AsyncVectorEnv(ENV_FNS, context="fork")
    if mode == "no-copy":  # observations in gymnasium's own buffer, overwritten by the masked reset
        return SyncVectorEnv(ENV_FNS, copy=False)
    return SyncVectorEnv(ENV_FNS, autoreset_mode=mode)


def plain(value):
    """gymnasium batches info values into arrays: their values, to compare."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(plain(v) for v in value)
    return value.item() if isinstance(value, np.generic) else value


def trace(venv):
    """Everything a user of the VecEnv can observe, with infos and reset infos."""
    with venv:
        venv.seed(11)
        out = [copy_obs(venv.reset()), list(venv.reset_infos)]
        for actions in ACTIONS:
            out.append(copy_obs(venv.step(actions)))  # copies: with copy=False obs are views
            out.append(list(venv.reset_infos))
        out.append(venv.reset_single_env(1))
        out.append(venv.reset_infos[1])
    return out


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP, AutoresetMode.DISABLED,
                                  "no-copy", "async"],
                         ids=["next-step", "same-step", "disabled", "next-step-copy-false", "async-next-step"])
def test_from_gymnasium_made_same_step_is_bit_identical_to_dummy_vec_env(mode):
    got, want = trace(from_gymnasium(gym_vector_env(mode), autoreset_mode="same_step")), trace(DummyVecEnv(ENV_FNS))
    assert_same(plain(got), plain(want))
    assert any(info.get("TimeLimit.truncated") for step in want[2::2] for info in step[3])
    assert any(info.get("TimeLimit.truncated") is False for step in want[2::2] for info in step[3])


def trace_in_mode(venv):
    """A trace of a next-step or disabled VecEnv: the ended envs reset by ``reset_envs`` (disabled)."""
    with venv:
        venv.seed(11)
        out = [copy_obs(venv.reset()), list(venv.reset_infos)]
        for t, actions in enumerate(ACTIONS):
            out.append(copy_obs(venv.step(actions)))
            dones = out[-1][2]
            if venv.autoreset_mode is AutoresetMode.DISABLED and dones.any():
                out.append(venv.reset_envs(dones, seed=t))
            out.append(list(venv.reset_infos))
    return out


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.DISABLED], ids=["next-step", "disabled"])
def test_from_gymnasium_keeps_the_vector_envs_mode_bit_identical_to_dummy_vec_env(mode):
    venv = from_gymnasium(SyncVectorEnv(ENV_FNS, autoreset_mode=mode))
    assert venv.autoreset_mode is mode
    got, want = trace_in_mode(venv), trace_in_mode(DummyVecEnv(ENV_FNS, autoreset_mode=mode))
    assert_same(plain(got), plain(want))
    assert sum(step[2].sum() for step in want[2:] if isinstance(step, tuple)) >= 6


def test_from_gymnasium_refuses_a_mode_it_cannot_make(closing):
    with pytest.raises(ValueError, match=r"from_gymnasium\(autoreset_mode='next_step'\): .* same_step; .*"
                                         r"autoreset_mode=AutoresetMode.NEXT_STEP"):
        from_gymnasium(closing(SyncVectorEnv(ENV_FNS, autoreset_mode=AutoresetMode.SAME_STEP)),
                       autoreset_mode="next_step")


def test_our_wrappers_over_from_gymnasium_match_them_over_dummy_vec_env():
    def run(venv):
        with VecNormalize(VecFrameStack(VecMonitor(venv), 2)) as stack:
            stack.seed(3)
            out = [stack.reset()]
            for actions in ACTIONS % 2:
                obs, rewards, dones, infos = stack.step(actions)
                out.append((obs, rewards, dones, [info.get("terminal_observation") for info in infos],
                            [info.get("episode", {}).get("r") for info in infos]))
        return out

    assert_same(run(from_gymnasium(gym.make_vec("CartPole-v1", 3, vectorization_mode="sync"), "same_step")),
                run(DummyVecEnv([lambda: gym.make("CartPole-v1")] * 3)))


def test_from_gymnasium_over_gymnasiums_own_wrappers(closing):
    inner = gym.wrappers.vector.RecordEpisodeStatistics(SyncVectorEnv([cartpole] * 2))
    venv = closing(from_gymnasium(inner, autoreset_mode="same_step"))
    venv.seed(0)
    venv.reset()
    episodes = []
    while not episodes:
        _, _, dones, infos = venv.step(np.zeros(2, int))
        episodes = [info["episode"] for info in infos if "episode" in info]
    assert episodes[0]["r"] == episodes[0]["l"] > 0  # CartPole: reward 1 per step
    assert all("terminal_observation" in infos[i] for i in np.flatnonzero(dones))


def test_from_gymnasium_errors_name_the_mistake(closing):
    with pytest.raises(TypeError, match="expected a gymnasium.vector.VectorEnv, received DummyVecEnv"):
        from_gymnasium(closing(DummyVecEnv([cartpole])))
    venv = closing(from_gymnasium(AsyncVectorEnv([cartpole] * 2, context="fork")))
    with pytest.raises(NotImplementedError, match=r"env_method\(indices=1\).*AsyncVectorEnv"):
        venv.env_method("get_wrapper_attr", "spec", indices=1)
    with pytest.raises(NotImplementedError, match="no access to env states"):
        venv.get_states()
    with pytest.raises(ValueError, match="expected 2 actions"):
        venv.step(np.zeros(3, int))
    with pytest.raises(ValueError, match=r"FromGymnasiumVecEnv.set_options\(\): received \[\{'a': 1\}, \{\}\], but a "
                                         "gymnasium vector env resets every env with the same options"):
        venv.set_options([{"a": 1}, {}])


def test_from_gymnasium_set_options_reach_every_env(closing):
    venv = closing(from_gymnasium(SyncVectorEnv([OptionsEnv] * 2)))
    venv.set_options({"level": 4})
    venv.reset()
    assert [info["options"] for info in venv.reset_infos] == [{"level": 4}] * 2
    venv.reset()
    assert [info["options"] for info in venv.reset_infos] == [None] * 2


# ------------------------------------------------------------------ to_sb3
def test_sb3_is_imported_only_when_to_sb3_is_called():
    code = ("import sys, vec_envs.interop, wrappers; "
            "assert 'stable_baselines3' not in sys.modules, 'imported at once'")
    subprocess.run([sys.executable, "-c", code], check=True)


@imports_sb3
def test_sb3_vec_normalize_over_to_sb3_matches_it_over_sb3s_dummy_vec_env(closing):
    from stable_baselines3.common.vec_env import DummyVecEnv as SB3DummyVecEnv
    from stable_baselines3.common.vec_env import VecEnv
    from stable_baselines3.common.vec_env import VecNormalize as SB3VecNormalize

    env_fns = [lambda: gym.make("CartPole-v1")] * 3
    ours = closing(SB3VecNormalize(to_sb3(SubprocVecEnv(env_fns, in_series=2, context="fork"))))
    theirs = closing(SB3VecNormalize(SB3DummyVecEnv(env_fns)))
    assert isinstance(ours.venv, VecEnv)
    ours.seed(5), theirs.seed(5)
    assert_same(ours.reset(), theirs.reset())
    for actions in np.random.default_rng(2).integers(0, 2, size=(60, 3)):
        obs, rewards, dones, infos = ours.step(actions)
        want = theirs.step(actions)
        assert_same((obs, rewards, dones), want[:3])
        for got_info, want_info in zip(infos, want[3]):  # SB3 sets TimeLimit.truncated on every step
            assert got_info.get("TimeLimit.truncated", False) == want_info["TimeLimit.truncated"]
            assert got_info.keys() - {"TimeLimit.truncated"} == want_info.keys() - {"TimeLimit.truncated"}
            if "terminal_observation" in got_info:
                assert_same(got_info["terminal_observation"], want_info["terminal_observation"])


@pytest.mark.slow  # trains SB3's PPO
@imports_sb3
def test_sb3_ppo_trains_on_our_wrappers_in_worker_processes(closing, tmp_path):
    from stable_baselines3 import PPO

    venv = VecNormalize(VecMonitor(SubprocVecEnv([lambda: gym.make("CartPole-v1")] * 4, in_series=2)))
    env = closing(to_sb3(venv))
    assert env.get_attr("render_mode") == [None] * 4
    assert env.env_is_wrapped(gym.Wrapper) == [True] * 4
    model = PPO("MlpPolicy", env, n_steps=32, batch_size=64, n_epochs=1, seed=0, device="cpu")
    model.learn(256)
    assert len(model.ep_info_buffer) > 0  # VecMonitor's infos[i]["episode"] reach SB3's logger
    actions, _ = model.predict(env.reset(), deterministic=True)
    assert actions.shape == (4,)
    model.save(tmp_path / "ppo")


@imports_sb3
def test_to_sb3_errors_name_the_mistake(closing):
    with pytest.raises(TypeError, match="to_sb3.*received SyncVectorEnv"):
        to_sb3(closing(SyncVectorEnv([cartpole])))
    env = closing(to_sb3(DummyVecEnv([cartpole])))
    with pytest.raises(ValueError, match=r"set_options\(\): expected a dict for every env or a list of 1"):
        env.set_options([{}, {}])


@imports_sb3
def test_to_sb3_set_options_reach_the_envs_at_the_next_reset(closing):
    from stable_baselines3.common.vec_env import VecNormalize as SB3VecNormalize

    ours = to_sb3(SubprocVecEnv([OptionsEnv] * 2, in_series=1, context="fork"))
    env = closing(SB3VecNormalize(ours))
    env.set_options([{"level": 0}, {"level": 1}])  # through SB3's wrapper to ours
    env.reset()
    assert [info["options"] for info in ours.reset_infos] == [{"level": 0}, {"level": 1}]
    env.reset()
    assert [info["options"] for info in ours.reset_infos] == [None, None]


# ------------------------------------------------------------------ the overhead script
@pytest.mark.slow  # runs the benchmark
def test_bench_interop_smoke_run():
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    script = os.path.join(repo, "scripts", "benchmark.py")
    done = subprocess.run([sys.executable, script, "interop", "--rounds", "1", "--steps", "20", "--clock", "cpu"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    rows = {line.split()[0]: line.split() for line in done.stdout.splitlines()[2:]}
    assert set(rows) == {"direct", "to_gymnasium", "to_sb3", "gymnasium-sync", "from_gymnasium",
                         "gymnasium-same", "from_gym-same"}
    assert float(rows["to_sb3"][1]) > 0
    assert rows["to_sb3"][3].startswith("us")
