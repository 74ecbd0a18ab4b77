"""to_gymnasium over a next-step VecEnv, any batch_size, against gymnasium's own SyncVectorEnv
and vector wrappers, and a CleanRL-style PPO loop on it."""
from __future__ import annotations

import functools

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, SyncVectorEnv

from tests.backends import subproc
from tests.envs import SeededEnv
from tests.helpers import assert_same, assert_same_step
from vec_envs import DummyVecEnv
from vec_envs.interop import to_gymnasium

ENV_FNS = [functools.partial(SeededEnv, length=4), functools.partial(SeededEnv, length=3, truncate=True),
           functools.partial(SeededEnv, length=5)]
ACTIONS = np.random.default_rng(0).integers(0, 3, size=(25, 3))


def cartpole():
    return gym.make("CartPole-v1", max_episode_steps=20)


@pytest.mark.parametrize("mode", ["same_step", "next_step", "disabled"])
@pytest.mark.parametrize("batch_size", [None, 2])
def test_the_adapter_shows_the_vec_envs_own_mode_for_any_batch_size(mode, batch_size, closing):
    venv = DummyVecEnv(ENV_FNS, autoreset_mode=mode, batch_size=batch_size)
    envs = closing(to_gymnasium(venv))
    assert envs.metadata["autoreset_mode"] is venv.autoreset_mode
    assert closing(to_gymnasium(DummyVecEnv(ENV_FNS, autoreset_mode=mode), autoreset_mode=mode)).metadata[
        "autoreset_mode"] is venv.autoreset_mode


def test_asking_for_another_mode_says_how_to_build_the_vec_env(closing):
    venv = closing(DummyVecEnv(ENV_FNS))
    with pytest.raises(ValueError, match=r"to_gymnasium\(autoreset_mode='NextStep'\): this DummyVecEnv resets its "
                                         r"envs with autoreset_mode='same_step'.*autoreset_mode='next_step'"):
        to_gymnasium(venv, autoreset_mode="NextStep")
    with pytest.raises(ValueError, match=r"autoreset_mode must be 'same_step', 'next_step' or 'disabled'.*'next'"):
        to_gymnasium(venv, autoreset_mode="next")


@pytest.mark.parametrize("batch_size", [None, 2])
def test_gymnasiums_vector_wrappers_on_it_equal_them_over_sync_vector_env(batch_size, closing):
    def stack(envs):
        envs = gym.wrappers.vector.RecordEpisodeStatistics(gym.wrappers.vector.NormalizeObservation(envs))
        return gym.wrappers.vector.ClipReward(gym.wrappers.vector.NormalizeReward(envs), min_reward=-1.0,
                                              max_reward=1.0)

    venv = subproc([cartpole] * 4, in_series=2, context="fork", autoreset_mode="next_step", batch_size=batch_size)
    ours = closing(stack(to_gymnasium(venv)))
    ref = closing(stack(SyncVectorEnv([cartpole] * 4, autoreset_mode=AutoresetMode.NEXT_STEP)))
    assert_same(ours.reset(seed=5), ref.reset(seed=5))
    lengths = []
    for actions in np.random.default_rng(2).integers(0, 2, size=(70, 4)):
        got, want = ours.step(actions), ref.step(actions)
        np.testing.assert_allclose(got[1], want[1], rtol=1e-6)  # float32 rewards here, float64 there
        episode, ref_episode = got[4].pop("episode", None), want[4].pop("episode", None)
        assert_same_step((got[0], want[1], *got[2:]), want)
        if episode is not None:  # its "t" is the wall-clock time
            assert_same((episode["r"], episode["l"]), (ref_episode["r"], ref_episode["l"]))
            lengths += episode["l"][got[4]["_episode"]].tolist()
    assert len(lengths) >= 8 and max(lengths) <= 20  # the reset rows are no steps of any episode
    np.testing.assert_array_equal(ours.env.env.env.obs_rms.mean, ref.env.env.env.obs_rms.mean)


def test_a_cleanrl_style_ppo_loop_trains_on_it(closing):
    torch = pytest.importorskip("torch")
    num_envs, num_steps = 4, 32
    envs = to_gymnasium(subproc([lambda: gym.make("CartPole-v1")] * num_envs, in_series=2, context="fork",
                                autoreset_mode="next_step", batch_size=2))
    envs = closing(gym.wrappers.vector.NormalizeReward(gym.wrappers.vector.RecordEpisodeStatistics(envs)))
    torch.manual_seed(0)
    agent = torch.nn.Sequential(torch.nn.Linear(4, 32), torch.nn.Tanh(), torch.nn.Linear(32, 3))  # logits, value
    optimizer = torch.optim.Adam(agent.parameters(), lr=2.5e-3)
    next_obs, _ = envs.reset(seed=1)
    next_done = np.zeros(num_envs, bool)
    episodes = 0
    for _ in range(3):  # rollouts, each followed by one PPO update
        obs, actions, logprobs, rewards, dones, values = [], [], [], [], [], []
        for _ in range(num_steps):
            with torch.no_grad():
                out = agent(torch.as_tensor(next_obs))
                dist = torch.distributions.Categorical(logits=out[:, :2])
                action = dist.sample()
            obs.append(next_obs), actions.append(action), logprobs.append(dist.log_prob(action))
            values.append(out[:, 2]), dones.append(next_done)
            next_obs, reward, terminations, truncations, infos = envs.step(action.numpy())
            next_done = terminations | truncations
            rewards.append(torch.as_tensor(reward, dtype=torch.float32))
            episodes += int(infos.get("_episode", np.zeros(num_envs, bool)).sum())
        with torch.no_grad():  # GAE, CleanRL's: a row after a done starts a new episode
            next_value, advantages, last = agent(torch.as_tensor(next_obs))[:, 2], [], 0.0
            for t in reversed(range(num_steps)):
                following_done = next_done if t == num_steps - 1 else dones[t + 1]
                nonterminal = 1.0 - torch.as_tensor(following_done, dtype=torch.float32)
                following = next_value if t == num_steps - 1 else values[t + 1]
                delta = rewards[t] + 0.99 * following * nonterminal - values[t]
                last = delta + 0.99 * 0.95 * nonterminal * last
                advantages.insert(0, last)
        b_obs = torch.as_tensor(np.concatenate(obs))
        b_adv, b_ret = torch.cat(advantages), torch.cat(advantages) + torch.cat(values)
        out = agent(b_obs)
        dist = torch.distributions.Categorical(logits=out[:, :2])
        ratio = (dist.log_prob(torch.cat(actions)) - torch.cat(logprobs)).exp()
        loss = -torch.min(ratio * b_adv, ratio.clamp(0.8, 1.2) * b_adv).mean() + 0.5 * ((out[:, 2] - b_ret) ** 2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        assert torch.isfinite(loss)
    assert episodes >= 4
