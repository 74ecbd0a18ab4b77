"""The DeepMind Atari wrappers and make_atari_env, against the real emulator (ale-py)."""
from __future__ import annotations

import csv
import json
import os
import pickle
import subprocess
import sys
import textwrap

import gymnasium as gym
import numpy as np
import pytest

pytestmark = pytest.mark.slow  # steps Atari emulators

pytest.importorskip("ale_py", reason="the Atari tests need ale-py: pip install -e '.[atari]'")
cv2 = pytest.importorskip("cv2")

from vec_envs import DummyVecEnv  # noqa: E402
from vec_envs.wrappers.atari import (  # noqa: E402
    ClipRewardEnv,
    EpisodeMonitor,
    EpisodicLifeEnv,
    FireResetEnv,
    MaxAndSkipEnv,
    NoopResetEnv,
    WarpFrame,
    make_atari,
    make_atari_env,
    wrap_deepmind,
)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class Recorder(gym.Wrapper):
    """Records every raw action, frame and reward that passes through it."""

    def __init__(self, env):
        super().__init__(env)
        self.actions, self.frames, self.rewards = [], [], []

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.actions.append(int(action))
        self.frames.append(obs.copy())
        self.rewards.append(float(reward))
        return obs, reward, terminated, truncated, info


def lives(env):
    return env.unwrapped.ale.lives()


# ------------------------------------------------------------------ where they are imported
def test_wrappers_atari_offers_the_atari_rooms_own_objects():
    import vec_envs.ale
    import vec_envs.wrappers.atari

    names = ("make_atari", "wrap_deepmind", "make_atari_env")
    assert {name: getattr(vec_envs.wrappers.atari, name) for name in names} == {
        name: getattr(vec_envs.ale, name) for name in names}


# ------------------------------------------------------------------ make_atari
@pytest.mark.parametrize("env_id", ["Breakout", "BreakoutNoFrameskip-v4", "ALE/Breakout-v5"])
def test_make_atari_is_frameskip_1_without_sticky_actions_by_default(env_id):
    env = make_atari(env_id)
    env.reset(seed=0)
    env.step(0)
    assert env.unwrapped.ale.getEpisodeFrameNumber() == 1
    assert env.unwrapped.ale.getFloat("repeat_action_probability") == 0.0
    env.close()
    sticky = make_atari(env_id, repeat_action_probability=0.25)
    assert sticky.unwrapped.ale.getFloat("repeat_action_probability") == 0.25
    sticky.close()


def test_make_atari_refuses_a_frameskip():
    with pytest.raises(ValueError, match="frameskip is fixed at 1; pass frame_skip to wrap_deepmind"):
        make_atari("Breakout", frameskip=4)


# ------------------------------------------------------------------ NoopResetEnv
def test_noop_reset_takes_1_to_noop_max_noops():
    rec = Recorder(make_atari("Breakout"))
    env = NoopResetEnv(rec, noop_max=30)
    counts = []
    for seed in range(20):
        rec.actions.clear()
        env.reset(seed=seed)
        counts.append(len(rec.actions))
        assert set(rec.actions) == {0}
        assert env.unwrapped.ale.getEpisodeFrameNumber() == counts[-1]
    assert min(counts) >= 1
    assert max(counts) <= 30
    assert len(set(counts)) >= 6  # really random, not a fixed count
    env.reset(seed=3)
    first = env.unwrapped.ale.getEpisodeFrameNumber()
    env.reset(seed=3)
    assert env.unwrapped.ale.getEpisodeFrameNumber() == first  # follows the seed


def test_noop_reset_with_noop_max_1_takes_exactly_one_noop():
    env = NoopResetEnv(make_atari("Pong"), noop_max=1)
    for seed in range(5):
        env.reset(seed=seed)
        assert env.unwrapped.ale.getEpisodeFrameNumber() == 1


def test_noop_reset_rejects_a_bad_noop_max():
    with pytest.raises(ValueError, match=r"noop_max must be an int >= 1, received 0"):
        NoopResetEnv(make_atari("Pong"), noop_max=0)


# ------------------------------------------------------------------ FireResetEnv
def frames_until_life_lost(env, limit=400):
    start = lives(env)
    for t in range(limit):
        env.step(0)
        if lives(env) < start:
            return t
    return None


def test_fire_reset_presses_fire_so_the_ball_is_in_play():
    rec = Recorder(make_atari("Breakout"))
    env = FireResetEnv(rec)
    env.reset(seed=0)
    assert rec.actions == [1, 2]
    assert frames_until_life_lost(env) is not None  # the ball was launched and missed

    without = make_atari("Breakout")
    without.reset(seed=0)
    assert frames_until_life_lost(without) is None  # no FIRE: the game waits forever


def test_wrap_deepmind_fires_only_for_games_with_fire():
    def has_fire_reset(env):
        while isinstance(env, gym.Wrapper):
            if isinstance(env, FireResetEnv):
                return True
            env = env.env
        return False

    assert has_fire_reset(wrap_deepmind(make_atari("Breakout")))
    assert not has_fire_reset(wrap_deepmind(make_atari("Freeway")))  # NOOP, UP, DOWN
    with pytest.raises(ValueError, match=r"FireResetEnv: the game needs action 1 = 'FIRE'.*'UP'"):
        FireResetEnv(make_atari("Freeway"))


# ------------------------------------------------------------------ EpisodicLifeEnv
def play_until_done(env, action=0, limit=5000):
    for _ in range(limit):
        obs, reward, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            return info
    raise AssertionError(f"no episode end within {limit} steps")


def test_life_loss_ends_the_episode_but_not_the_game():
    monitor = EpisodeMonitor(make_atari("Breakout"))
    env = FireResetEnv(EpisodicLifeEnv(MaxAndSkipEnv(monitor, skip=4)))
    ale = env.unwrapped.ale
    env.reset(seed=0)
    assert lives(env) == 5
    for lost in range(1, 5):
        info = play_until_done(env)
        assert lives(env) == 5 - lost
        assert not ale.game_over()
        assert "episode" not in info
        frame = ale.getEpisodeFrameNumber()
        env.reset()
        assert lives(env) == 5 - lost  # same game goes on: no life back,
        assert ale.getEpisodeFrameNumber() > frame  # and the frame count keeps running
    info = play_until_done(env)
    assert ale.game_over()
    assert info["episode"]["l"] == ale.getEpisodeFrameNumber()  # one episode = the whole game
    assert len(monitor.episode_returns) == 1
    env.reset()
    assert lives(env) == 5
    assert ale.getEpisodeFrameNumber() < 10  # a real reset


def test_reset_with_a_seed_after_a_lost_life_restarts_the_game():
    env = FireResetEnv(EpisodicLifeEnv(MaxAndSkipEnv(make_atari("Breakout"))))
    env.reset(seed=0)
    play_until_done(env)
    assert lives(env) == 4
    env.reset(seed=1)
    assert lives(env) == 5


# ------------------------------------------------------------------ MaxAndSkipEnv
def test_max_and_skip_pools_the_last_two_raw_frames_and_sums_rewards():
    rec = Recorder(make_atari("Breakout"))
    env = MaxAndSkipEnv(rec, skip=4)
    env.reset(seed=0)
    differs_from_last = 0
    for t in range(60):
        start = len(rec.frames)
        obs, reward, terminated, truncated, _ = env.step(1 if t == 0 else 2 + t % 2)
        assert len(rec.frames) - start == 4
        expected = np.maximum(rec.frames[-2], rec.frames[-1])
        np.testing.assert_array_equal(obs, expected)
        assert reward == sum(rec.rewards[start:])
        differs_from_last += not np.array_equal(obs, rec.frames[-1])
    assert differs_from_last > 10  # the pool really mixes two frames (the ball moves)


def test_max_and_skip_rejects_a_bad_skip():
    with pytest.raises(ValueError, match=r"skip must be an int >= 1, received 0"):
        MaxAndSkipEnv(make_atari("Pong"), skip=0)


# ------------------------------------------------------------------ WarpFrame
def real_frame():
    env = make_atari("Breakout")
    env.reset(seed=0)
    env.step(1)
    for _ in range(40):
        frame, *_ = env.step(2)
    return env, frame


def test_warp_frame_equals_the_opencv_reference_on_a_real_frame():
    env, frame = real_frame()
    warp = WarpFrame(env)
    out = warp.observation(frame)
    gray = cv2.cvtColor(frame, cv2.COLOR_RGB2GRAY)
    reference = cv2.resize(gray, (84, 84), interpolation=cv2.INTER_AREA)[:, :, None]
    assert out.shape == (84, 84, 1)
    assert out.dtype == np.uint8
    np.testing.assert_array_equal(out, reference)
    assert warp.observation_space == gym.spaces.Box(0, 255, (84, 84, 1), np.uint8)
    obs, _ = warp.reset(seed=0)
    assert obs.shape == (84, 84, 1)
    assert obs.dtype == np.uint8
    assert warp.observation_space.contains(obs)


def test_warp_frame_width_height_and_color():
    env, frame = real_frame()
    out = WarpFrame(env, width=64, height=48).observation(frame)
    assert out.shape == (48, 64, 1)
    color = WarpFrame(env, grayscale=False).observation(frame)
    np.testing.assert_array_equal(color, cv2.resize(frame, (84, 84), interpolation=cv2.INTER_AREA))


# ------------------------------------------------------------------ ClipRewardEnv
def test_clipped_rewards_are_the_sign_of_the_real_rewards():
    rec = Recorder(make_atari("SpaceInvaders"))
    env = ClipRewardEnv(rec)
    env.reset(seed=0)
    clipped = [env.step(1)[1] for _ in range(1500)]  # FIRE: aliens are worth 5..30 points
    assert set(clipped) <= {-1.0, 0.0, 1.0}
    assert clipped == [float(np.sign(r)) for r in rec.rewards]
    assert max(rec.rewards) > 1
    assert 1.0 in clipped
    assert ClipRewardEnv(make_atari("Pong")).reward(-3.5) == -1.0


# ------------------------------------------------------------------ make_atari_env
def test_make_atari_env_reports_the_real_score_at_game_over_only():
    venv = make_atari_env("SpaceInvaders", n_envs=2, seed=0, vec_env_cls=DummyVecEnv)  # SB3's keyword
    assert venv.observation_space.shape == (84, 84, 1)
    obs = venv.reset()
    assert obs.shape == (2, 84, 84, 1)
    assert obs.dtype == np.uint8
    rng = np.random.default_rng(0)
    dones, clipped, episodes = np.zeros(2, int), np.zeros(2), {}
    while len(episodes) < 2:
        _, rewards, done, infos = venv.step(rng.integers(0, 6, 2))
        assert set(rewards.tolist()) <= {-1.0, 0.0, 1.0}
        for i in set(range(2)) - set(episodes):
            dones[i] += done[i]
            clipped[i] += rewards[i]
            if "episode" in infos[i]:
                assert done[i]
                episodes[i] = infos[i]["episode"]
    venv.close()
    assert dones.tolist() == [3, 3]  # 3 lives: 2 life losses, then the game over
    for i in range(2):
        assert episodes[i]["r"] > clipped[i] > 0  # unclipped: an alien is worth 5+ points


def test_make_atari_env_writes_sb3_monitor_csvs(tmp_path):
    venv = make_atari_env("Pong", 2, seed=0, vec_env_cls=DummyVecEnv, monitor_dir=str(tmp_path / "mon"),
                          wrapper_kwargs={"frame_skip": 4})
    venv.reset()
    while not venv.get_attr("episode_returns", 0)[0]:  # one full Pong game in env 0
        venv.step(np.zeros(2, int))
    returns = venv.get_attr("episode_returns")
    venv.close()
    assert sorted(os.listdir(tmp_path / "mon")) == ["0.monitor.csv", "1.monitor.csv"]
    with open(tmp_path / "mon" / "0.monitor.csv") as f:
        header = json.loads(f.readline()[1:])
        rows = list(csv.DictReader(f))
    assert header["env_id"] == "ALE/Pong-v5"
    assert header["t_start"] > 0
    assert list(rows[0]) == ["r", "l", "t"]
    assert [float(r["r"]) for r in rows] == returns[0]
    assert returns[0][0] == -21.0


def test_make_atari_env_checks_its_arguments():
    with pytest.raises(ValueError, match=r"n_envs must be an int >= 1, received 0"):
        make_atari_env("Breakout", 0, vec_env_cls=DummyVecEnv)
    with pytest.raises(ValueError, match="unknown Atari game 'Nope'"):
        make_atari_env("Nope", 1, vec_env_cls=DummyVecEnv)
    with pytest.raises(TypeError, match=r"wrapper_kwargs \['frame_stack'\] do not fit wrap_deepmind"):
        make_atari_env("Breakout", 1, vec_env_cls=DummyVecEnv, wrapper_kwargs={"frame_stack": 4})


def rollout(venv, steps=120):
    rng = np.random.default_rng(1)
    observations, dones = [venv.reset()], []
    for _ in range(steps):
        obs, _, done, infos = venv.step(rng.integers(0, venv.action_space.n, venv.num_envs))
        observations.append(obs)
        dones.append(done)
    venv.close()
    return np.stack(observations), np.stack(dones)


@pytest.mark.parametrize("context", ["fork", "forkserver", "spawn"])
def test_subproc_make_atari_env_matches_dummy(context):
    from vec_envs import SubprocVecEnv

    expected_obs, expected_dones = rollout(make_atari_env("Breakout", 3, seed=7, vec_env_cls=DummyVecEnv))
    assert expected_dones.any()  # the rollout crosses at least one auto-reset
    venv = make_atari_env("Breakout", 3, seed=7, vec_env_kwargs={"context": context, "in_series": 2})
    assert isinstance(venv, SubprocVecEnv)  # the default backend
    obs, dones = rollout(venv)
    np.testing.assert_array_equal(obs, expected_obs)
    np.testing.assert_array_equal(dones, expected_dones)


class CaptureFns:
    """A stand-in backend that keeps the env factories make_atari_env hands it."""

    def __init__(self, env_fns):
        self.env_fns = env_fns

    def seed(self, seed):
        pass


def test_env_factory_imports_ale_py_itself_in_a_fresh_process():
    env_fn = make_atari_env("Breakout", 1, vec_env_cls=CaptureFns).env_fns[0]
    code = textwrap.dedent("""
        import pickle, sys
        import gymnasium as gym
        env_fn = pickle.loads(sys.stdin.buffer.read())
        assert "ale_py" not in sys.modules and "ALE/Breakout-v5" not in gym.registry
        env = env_fn()
        obs, info = env.reset(seed=0)
        print(obs.shape, "ale_py" in sys.modules)
    """)
    proc = subprocess.run([sys.executable, "-c", code], input=pickle.dumps(env_fn), cwd=REPO,
                          capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stdout.decode().split("\n")[0] == "(84, 84, 1) True"


def test_importing_the_module_has_no_side_effects():
    code = ("import os, sys; env = dict(os.environ); import vec_envs.wrappers.atari; "
            "print('ale_py' in sys.modules, 'cv2' in sys.modules, env == dict(os.environ))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip() == "False False True", proc.stderr
