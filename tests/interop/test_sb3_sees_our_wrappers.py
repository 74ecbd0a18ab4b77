"""SB3's own helpers on to_sb3: evaluate_policy, EvalCallback, get_vec_normalize_env and
sync_envs_normalization see our VecMonitor, VecNormalize and per-game monitors as theirs.

Each test imports SB3 itself: collecting the suite imports neither SB3 nor torch."""
from __future__ import annotations

import collections
import warnings

import gymnasium as gym
import numpy as np
import pytest

from tests.worker_groups import imports_sb3
from vec_envs import ALEVecEnv, DummyVecEnv, SubprocVecEnv, VecEnvWrapper
from vec_envs.interop import to_sb3
from vec_envs.wrappers import VecMonitor, VecNormalize
from vec_envs.wrappers import VecTransposeImage as OurVecTransposeImage
from vec_envs.wrappers.atari import make_atari_env

pytestmark = imports_sb3


class RandomPolicy:
    """Anything with ``predict`` is a policy to ``evaluate_policy``: seeded random actions."""

    def __init__(self, n_actions, seed=0):
        self.n_actions, self.rng = n_actions, np.random.default_rng(seed)

    def predict(self, obs, state=None, episode_start=None, deterministic=False):
        return self.rng.integers(0, self.n_actions, size=len(obs)), None


class EpisodeLog(VecEnvWrapper):
    """Records every ``infos[i]["episode"]`` the wrapped venv reports since its last reset, per env."""

    def __init__(self, venv):
        super().__init__(venv)
        self.episodes = collections.defaultdict(list)

    def reset(self):
        self.episodes = collections.defaultdict(list)
        return self.venv.reset()

    def step_wait(self, timeout=None):
        obs, rewards, dones, infos = self.venv.step_wait(timeout)
        for i, info in enumerate(infos):
            if "episode" in info:
                self.episodes[i].append((info["episode"]["r"], info["episode"]["l"]))
        return obs, rewards, dones, infos


def cartpole():
    return gym.make("CartPole-v1")


def counted(log, returns, lengths, num_envs):
    """The first episodes of each env, as evaluate_policy counts them (env i gets
    ``(n + i) // num_envs`` of the n episodes), in the order they ended."""
    want = {i: log.episodes[i][:(len(returns) + i) // num_envs] for i in range(num_envs)}
    return sorted(zip(returns, lengths)), sorted(pair for pairs in want.values() for pair in pairs)


def evaluate(venv, n_actions, episodes):
    """evaluate_policy(return_episode_rewards=True) with every warning an error."""
    from stable_baselines3.common.evaluation import evaluate_policy

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return evaluate_policy(RandomPolicy(n_actions), to_sb3(venv), n_eval_episodes=episodes,
                               return_episode_rewards=True)


# --------------------------------------------------------------- evaluate_policy
def test_evaluate_policy_reads_vec_monitors_raw_returns_under_vec_normalize(closing):
    log = EpisodeLog(VecMonitor(SubprocVecEnv([cartpole] * 4, in_series=2, context="fork")))
    venv = closing(VecNormalize(log))
    venv.seed(0)
    returns, lengths = evaluate(venv, 2, episodes=8)
    assert len(returns) == 8
    assert returns == [float(length) for length in lengths]  # CartPole: return = length, unnormalized
    got, want = counted(log, returns, lengths, 4)
    assert got == want


def test_evaluate_policy_counts_whole_atari_games_with_raw_scores(closing):
    from stable_baselines3.common.monitor import Monitor

    log = EpisodeLog(make_atari_env("Breakout", n_envs=2, seed=0, vec_env_cls=DummyVecEnv,
                                    env_kwargs={"max_num_frames_per_episode": 1200}))
    closing(log)
    returns, lengths = evaluate(log, 4, episodes=4)
    got, want = counted(log, returns, lengths, 2)
    assert got == want  # the per-game monitor's episodes: 5 lives, raw score, emulator frames
    assert min(lengths) > 148  # a single life of a random policy is far shorter (agent steps)
    assert to_sb3(log).env_is_wrapped(Monitor) == [True, True]


def test_alevecenv_games_are_monitored_episodes_to_sb3(closing):
    from stable_baselines3.common.monitor import Monitor

    env = to_sb3(closing(ALEVecEnv("Breakout", num_envs=2, seed=0)))
    assert env.env_is_wrapped(Monitor) == [True, True]
    assert env.env_is_wrapped(gym.Wrapper) == [False, False]


def test_without_any_monitor_sb3_still_warns(closing):
    from stable_baselines3.common.evaluation import evaluate_policy
    from stable_baselines3.common.monitor import Monitor

    env = to_sb3(closing(DummyVecEnv([cartpole] * 2)))
    assert env.env_is_wrapped(Monitor) == [False, False]
    with pytest.warns(UserWarning, match="not wrapped with a ``Monitor``"):
        evaluate_policy(RandomPolicy(2), env, n_eval_episodes=2)


# --------------------------------------------------------------- VecNormalize
def test_sb3_finds_our_vec_normalize_and_freezes_it(closing):
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import VecMonitor as SB3VecMonitor
    from stable_baselines3.common.vec_env import VecNormalize as SB3VecNormalize
    from stable_baselines3.common.vec_env import is_vecenv_wrapped, unwrap_vec_normalize

    ours = VecNormalize(VecMonitor(DummyVecEnv([cartpole] * 2)))
    env = closing(to_sb3(ours))
    model = PPO("MlpPolicy", env, n_steps=16, batch_size=32, n_epochs=1, device="cpu", seed=0)
    found = model.get_vec_normalize_env()
    assert isinstance(found, SB3VecNormalize)
    assert found is unwrap_vec_normalize(env)
    assert found.source is ours
    assert is_vecenv_wrapped(env, SB3VecMonitor)
    found.training = False
    assert ours.training is False
    count = ours.obs_rms.count
    env.reset()
    env.step(np.zeros(2, int))
    assert ours.obs_rms.count == count  # frozen: SB3's switch is ours


def test_sync_envs_normalization_copies_our_statistics(closing):
    from stable_baselines3.common.vec_env import sync_envs_normalization

    train_ours = VecNormalize(VecMonitor(DummyVecEnv([cartpole] * 2)))
    eval_ours = VecNormalize(VecMonitor(DummyVecEnv([cartpole])), training=False)
    train, evaluation = closing(to_sb3(train_ours)), closing(to_sb3(eval_ours))
    train.reset()
    for _ in range(30):
        train.step(np.ones(2, int))
    sync_envs_normalization(train, evaluation)
    np.testing.assert_array_equal(eval_ours.obs_rms.mean, train_ours.obs_rms.mean)
    np.testing.assert_array_equal(eval_ours.obs_rms.var, train_ours.obs_rms.var)
    assert eval_ours.obs_rms.count == train_ours.obs_rms.count == 62
    assert eval_ours.ret_rms.var == train_ours.ret_rms.var
    assert eval_ours.obs_rms is not train_ours.obs_rms
    obs = np.ones((1, 4), np.float32)
    np.testing.assert_array_equal(eval_ours.normalize_obs(obs), train_ours.normalize_obs(obs))


def test_sync_from_sb3s_own_vec_normalize_into_ours(closing):
    from stable_baselines3.common.vec_env import DummyVecEnv as SB3DummyVecEnv
    from stable_baselines3.common.vec_env import VecNormalize as SB3VecNormalize
    from stable_baselines3.common.vec_env import sync_envs_normalization

    theirs = closing(SB3VecNormalize(SB3DummyVecEnv([cartpole])))
    theirs.reset()
    for _ in range(10):
        theirs.step(np.ones(1, int))
    ours = VecNormalize(DummyVecEnv([cartpole]))
    sync_envs_normalization(theirs, closing(to_sb3(ours)))
    np.testing.assert_array_equal(ours.obs_rms.mean, theirs.obs_rms.mean)
    assert ours.obs_rms.count == theirs.obs_rms.count


def test_statistics_of_another_shape_are_refused_by_name(closing):
    from stable_baselines3.common.vec_env import unwrap_vec_normalize

    ours = VecNormalize(DummyVecEnv([cartpole]))
    view = unwrap_vec_normalize(closing(to_sb3(ours)))
    pendulum = VecNormalize(DummyVecEnv([lambda: gym.make("Pendulum-v1")]))
    with pytest.raises(ValueError, match=r"obs_rms: the statistics received have shapes \(\(3,\), \(3,\)\)"):
        view.obs_rms = closing(pendulum).obs_rms


def test_off_policy_learning_stores_our_original_observations(closing):
    from stable_baselines3 import DQN

    ours = VecNormalize(VecMonitor(DummyVecEnv([cartpole] * 2)))
    model = DQN("MlpPolicy", closing(to_sb3(ours)), learning_starts=40, buffer_size=500, train_freq=8,
                device="cpu", seed=0)
    model.learn(200)
    buffer, last = model.replay_buffer, model.replay_buffer.pos - 1
    going = buffer.dones[last] == 0  # an ended env's next obs is its terminal obs, not the reset's
    assert going.any()
    np.testing.assert_array_equal(buffer.next_observations[last][going], ours.get_original_obs()[going])
    view = model.get_vec_normalize_env()
    obs = ours.get_original_obs()
    np.testing.assert_allclose(view.unnormalize_obs(view.normalize_obs(obs)), obs, rtol=1e-5, atol=1e-5)


def test_image_views_keep_sb3_from_transposing_again(closing):
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import VecTransposeImage, is_vecenv_wrapped

    venv = OurVecTransposeImage(make_atari_env("Pong", n_envs=1, seed=0, vec_env_cls=DummyVecEnv))
    env = closing(to_sb3(venv))
    assert is_vecenv_wrapped(env, VecTransposeImage)
    model = PPO("CnnPolicy", env, n_steps=8, batch_size=8, n_epochs=1, device="cpu")
    assert model.get_env() is env  # SB3 added no VecTransposeImage of its own


# --------------------------------------------------------------- EvalCallback
@pytest.mark.slow  # trains SB3's PPO
def test_eval_callback_reports_the_mean_of_our_vec_monitor(closing, tmp_path):
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import EvalCallback

    train = closing(to_sb3(VecNormalize(VecMonitor(DummyVecEnv([cartpole] * 2)))))
    log = EpisodeLog(VecMonitor(DummyVecEnv([cartpole] * 2)))
    eval_ours = VecNormalize(log, training=False)
    callback = EvalCallback(closing(to_sb3(eval_ours)), n_eval_episodes=4, eval_freq=512, log_path=str(tmp_path),
                            warn=True)
    model = PPO("MlpPolicy", train, n_steps=256, batch_size=64, n_epochs=2, device="cpu", seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model.learn(2048, callback=callback)
    assert len(callback.evaluations_results) == 2
    returns, lengths = callback.evaluations_results[-1], callback.evaluations_length[-1]
    got, want = counted(log, returns, lengths, 2)  # the log holds the last evaluation's episodes
    assert got == want
    assert callback.last_mean_reward == pytest.approx(np.mean([r for r, _ in want]))
    assert eval_ours.obs_rms.count > 0  # frozen, so only EvalCallback's sync gave it statistics
