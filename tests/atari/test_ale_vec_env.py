"""ALEVecEnv against the real engine (ale-py's ALEVectorInterface): the contract where
ALE can honour it, clear errors where it cannot, and the wrappers on top."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import numpy as np
import psutil
import pytest

pytest.importorskip("ale_py", reason="ALEVecEnv needs ale-py: pip install -e '.[atari]'")

from tests.helpers import assert_same, check_lockstep_misuse  # noqa: E402
from tests.worker_groups import imports_sb3  # noqa: E402
from vec_envs import ALEVecEnv, DummyVecEnv, tile_images  # noqa: E402
from vec_envs.errors import (  # noqa: E402
    AlreadyPendingCallError,
    ClosedEnvironmentError,
    EngineLimitError,  # noqa: E402
    EnvTimeoutError,
    NoAsyncCallError,
)
from vec_envs.wrappers import VecFrameStack, VecMonitor, VecNormalize, VecTransposeImage  # noqa: E402
from vec_envs.wrappers.atari import make_atari_env  # noqa: E402

pytestmark = pytest.mark.slow  # steps Atari emulators

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
N = 3


def actions_for(steps, n=N, seed=0, n_actions=4):
    return np.random.default_rng(seed).integers(0, n_actions, size=(steps, n))


def trace(venv, actions):
    """Everything a user observes: the reset obs, then per step obs, rewards, dones and
    the terminal rows. Closes ``venv``."""
    with venv:
        out = [np.array(venv.reset())]
        for action in actions:
            obs, rewards, dones, infos = venv.step(action)
            terminal = [(i, info["terminal_observation"], info["TimeLimit.truncated"])
                        for i, info in enumerate(infos) if "terminal_observation" in info]
            out.append((np.array(obs), rewards, dones, terminal))
    return out


# ------------------------------------------------------------------ shapes and options
@pytest.mark.parametrize("frame_stack", [1, 4], ids=["no-stack", "stack4"])
def test_shapes_and_dtypes_match_the_make_atari_env_path(frame_stack, closing):
    venv = closing(ALEVecEnv("Breakout", N, frame_stack=frame_stack))
    reference = closing(make_atari_env("Breakout", 1, vec_env_cls=DummyVecEnv))
    if frame_stack > 1:
        reference = VecFrameStack(reference, n_stack=frame_stack)
    assert venv.observation_space == reference.observation_space
    assert venv.action_space == reference.action_space
    obs = venv.reset()
    assert obs.shape == (N, 84, 84, frame_stack)
    assert obs.dtype == np.uint8
    obs, rewards, dones, infos = venv.step(np.ones(N, np.int64))
    assert obs.shape == (N, 84, 84, frame_stack)
    assert obs.dtype == np.uint8
    assert rewards.shape == (N,)
    assert rewards.dtype == np.float32
    assert dones.shape == (N,)
    assert dones.dtype == np.bool_
    assert [sorted(info) for info in infos] == [["episode_frame_number", "frame_number", "lives"]] * N
    assert infos[0]["lives"] == 5


def test_color_and_raw_frames(closing):
    color = closing(ALEVecEnv("Pong", 1, frame_stack=2, grayscale=False))
    assert color.reset().shape == (1, 84, 84, 6)
    raw = closing(ALEVecEnv("Pong", 1, warp_frame=False))
    assert raw.reset().shape == (1, 210, 160, 3)
    assert raw.get_images()[0].shape == (210, 160, 3)


def test_bad_options_are_clear_errors():
    with pytest.raises(TypeError, match=r"unknown option\(s\) \['sticky'\]; the options are .*noop_max"):
        ALEVecEnv("Breakout", 2, sticky=0.25)
    with pytest.raises(ValueError, match=r"ALEVecEnv: batch_size must be an int in 1..2 \(num_envs\) or None, "
                                         r"received 3"):
        ALEVecEnv("Breakout", 2, batch_size=3)
    with pytest.raises(ValueError, match="num_envs must be an int >= 1, received 0"):
        ALEVecEnv("Breakout", 0)
    with pytest.raises(ValueError, match=r"repeat_action_probability must be in \[0, 1\], received 2"):
        ALEVecEnv("Breakout", 2, repeat_action_probability=2)
    with pytest.raises(ValueError, match="frame_stack must be an int >= 1, received 0"):
        ALEVecEnv("Breakout", 2, frame_stack=0)


# ------------------------------------------------------------------ determinism and seeds
def test_same_seed_gives_the_same_trajectory_twice():
    actions = actions_for(30, n=2)
    options = {"frame_stack": 4, "repeat_action_probability": 0.25, "max_num_frames_per_episode": 60}
    first = trace(ALEVecEnv("Breakout", 2, seed=3, **options), actions)
    second = trace(ALEVecEnv("Breakout", 2, seed=3, **options), actions)
    assert_same(first, second)
    assert not np.array_equal(first[-1][0][0], first[-1][0][1])  # env 1 (seed 4) plays its own game


def test_env_i_gets_seed_plus_i_once_at_the_next_reset(closing):
    venv = closing(ALEVecEnv("Breakout", 2))
    assert venv.seed(5) == [5, 6]
    seeded = venv.reset()
    swapped = closing(ALEVecEnv("Breakout", 2))
    swapped.seed([6, 5])
    np.testing.assert_array_equal(swapped.reset(), seeded[::-1])
    assert venv.reset_infos[0]["episode_frame_number"] == swapped.reset_infos[1]["episode_frame_number"]


def test_reset_options_other_than_empty_ones_are_refused(closing):
    venv = closing(ALEVecEnv("Breakout", 2, seed=0))
    venv.set_options([{}, None])  # nothing to pass: the reset goes on as seeded
    reference = closing(ALEVecEnv("Breakout", 2, seed=0))
    np.testing.assert_array_equal(venv.reset(), reference.reset())
    with pytest.raises(EngineLimitError, match=r"ALEVecEnv.set_options\(\): received options \{'mode': 2\}, "
                                               r"but ale-py's vector engine .* noop_max=.*SubprocVecEnv"):
        venv.set_options({"mode": 2})
    venv.reset()  # the refused options were dropped


def test_reset_single_env_resets_that_env_alone(closing):
    venv = closing(ALEVecEnv("Breakout", 2, frame_stack=4, seed=0))
    venv.reset()
    before, *_ = venv.step(np.array([1, 1]))
    venv.seed(5)  # env 1 gets 6
    obs1 = venv.reset_single_env(1)
    assert obs1.shape == (84, 84, 4)
    assert not obs1[..., :3].any()  # a fresh stack: zeros, then the frame
    reference = closing(ALEVecEnv("Breakout", 2, frame_stack=4, seed=5))
    np.testing.assert_array_equal(obs1, reference.reset()[1])
    assert venv.reset_infos[1] == reference.reset_infos[1]
    obs, *_ = venv.step(np.array([1, 1]))
    np.testing.assert_array_equal(obs[0, ..., :3], before[0, ..., 1:])  # env 0 played on


# ------------------------------------------------------------------ auto-reset and scores
def test_game_over_gives_the_terminal_observation_and_a_reset_in_the_same_step(closing):
    frames = 40  # 10 steps of 4 frames, then truncation
    venv = closing(ALEVecEnv("Breakout", 2, frame_stack=4, seed=0, clip_rewards=False,
                             max_num_frames_per_episode=frames))
    obs = venv.reset()
    start_frames = [info["episode_frame_number"] for info in venv.reset_infos]
    for step in range(frames // 4):
        previous = obs
        obs, _, dones, infos = venv.step(np.array([1, 3]))
        assert dones.tolist() == [step == frames // 4 - 1] * 2
    for i, info in enumerate(infos):
        terminal = info["terminal_observation"]
        np.testing.assert_array_equal(terminal[..., :3], previous[i, ..., 1:])  # the old episode, one step on
        assert not obs[i, ..., :3].any()
        assert obs[i, ..., 3].any()  # the new episode's first frame
        assert info["TimeLimit.truncated"] is True
        assert info["episode"]["l"] == start_frames[i] + frames
        assert venv.reset_infos[i]["episode_frame_number"] == info["episode_frame_number"] < frames


def test_lost_lives_end_episodes_and_the_score_covers_the_whole_game(closing):
    venv = closing(ALEVecEnv("Breakout", 2, seed=1, clip_rewards=False))
    unclipped = closing(ALEVecEnv("Breakout", 2, seed=1))
    venv.reset(), unclipped.reset()
    rng = np.random.default_rng(0)
    scores, lost_lives, games = np.zeros(2), np.zeros(2, int), []
    lives = [info["lives"] for info in venv.reset_infos]
    while len(games) < 2:
        action = rng.integers(0, 4, size=2)
        obs, rewards, dones, infos = venv.step(action)
        _, clipped, clipped_dones, _ = unclipped.step(action)
        np.testing.assert_array_equal(clipped, np.sign(rewards))
        np.testing.assert_array_equal(clipped_dones, dones)
        scores += rewards
        for i, info in enumerate(infos):
            if "episode" in info:
                games.append((i, info["episode"]["r"], scores[i], lost_lives[i]))
                scores[i], lost_lives[i] = 0, 0
            elif dones[i]:  # a lost life: the episode ends, the game goes on from that frame
                assert info["lives"] == lives[i] - 1
                assert info["TimeLimit.truncated"] is False
                np.testing.assert_array_equal(info["terminal_observation"], obs[i])
                lost_lives[i] += 1
            lives[i] = info["lives"]
    for _, reported, summed, lost in games:
        assert reported == summed
        assert lost == 4  # 5 lives: 4 lost mid-game, then the game over


# ------------------------------------------------------------------ misuse and limits
def test_misuse_errors(closing):
    venv = closing(ALEVecEnv("Breakout", N))
    venv.reset()
    check_lockstep_misuse(venv, N)
    with pytest.raises(ValueError, match=r"step_async\(\): action 4 for env 1 is outside the action space "
                                         r"Discrete\(4\) \(expected an int from 0 to 3\)"):
        venv.step(np.array([0, 4, 0]))
    assert venv.step(np.array([0, 3, 0]))[0].shape[0] == N  # refused before the engine saw it: still usable
    with pytest.raises(ValueError, match="render"):
        venv.render(mode="ansi")
    venv.close()
    venv.close()  # idempotent
    for call in (venv.reset, lambda: venv.step(np.zeros(N, np.int64)), lambda: venv.get_attr("ale")):
        with pytest.raises(ClosedEnvironmentError, match="after close"):
            call()


def test_what_the_engine_cannot_do_names_the_alternative(closing):
    venv = closing(ALEVecEnv("Breakout", 2, render_mode="rgb_array"))
    venv.reset()
    assert venv.get_attr("render_mode") == ["rgb_array", "rgb_array"]
    assert venv.get_attr("spec", 1) == [None]
    assert venv.get_attr("action_space", [0])[0] == venv.action_space
    calls = {"get_attr": lambda: venv.get_attr("ale"), "set_attr": lambda: venv.set_attr("ale", None),
             "env_method": lambda: venv.env_method("get_action_meanings"), "get_states": venv.get_states,
             "step_batch": lambda: venv.step_batch(np.zeros(2, np.int64))}
    for name, call in calls.items():
        with pytest.raises(EngineLimitError, match=rf"{name}.*make_atari_env\(game, n, vec_env_cls=SubprocVecEnv\)"):
            call()
    assert venv.env_is_wrapped(object) == [False, False]  # no gymnasium wrappers around C++ envs


def test_lock_step_calls_with_a_smaller_batch_size_point_to_recv_send(closing):
    venv = closing(ALEVecEnv("Breakout", 4, batch_size=2))
    for call in (venv.reset, lambda: venv.step(np.zeros(4, np.int64)), lambda: venv.reset_single_env(0)):
        with pytest.raises(EngineLimitError, match=r"batch_size=2 < num_envs=4.*async_reset\(\) / recv\(\)"):
            call()


def test_a_wait_past_its_timeout_names_the_busy_envs_and_the_next_wait_gets_the_step(closing):
    # 8 envs x 200 frames on one engine thread: milliseconds a step, even on a loaded machine
    venv = closing(ALEVecEnv("Breakout", 8, frame_skip=200, num_threads=1))
    venv.reset()
    venv.step_async(np.ones(8, np.int64))
    with pytest.raises(EnvTimeoutError, match=r"within 1e-06 s; envs still busy: \[0, 1, 2, 3, 4, 5, 6, 7\]") as info:
        venv.step_wait(timeout=1e-6)
    assert info.value.env_indices == list(range(8))
    obs, _, _, infos = venv.step_wait()
    assert obs.shape == (8, 84, 84, 1)
    assert infos[0]["episode_frame_number"] > 200


def test_close_joins_the_engine_threads():
    process = psutil.Process()
    before = {thread.id for thread in process.threads()}  # by id: other tests' threads may end meanwhile
    venv = ALEVecEnv("Breakout", 4, num_threads=2)
    venv.reset()
    venv.step_async(np.ones(4, np.int64))
    assert len({thread.id for thread in process.threads()} - before) >= 2
    venv.close()  # with a step still in flight
    assert not {thread.id for thread in process.threads()} - before


# ------------------------------------------------------------------ rendering
def test_images_are_the_preprocessed_frames_tiled(closing):
    venv = closing(ALEVecEnv("Breakout", 4, frame_stack=2, render_mode="rgb_array"))
    with pytest.raises(EngineLimitError, match="no frames yet; call reset"):
        venv.get_images()
    obs = venv.reset()
    images = venv.get_images()
    assert [image.shape for image in images] == [(84, 84, 3)] * 4
    np.testing.assert_array_equal(images[2][..., 1], obs[2, ..., -1])
    np.testing.assert_array_equal(venv.render(mode="rgb_array"), tile_images(images))
    with pytest.raises(ValueError, match="render_mode must be None or 'rgb_array', received 'human'"):
        ALEVecEnv("Breakout", 1, render_mode="human")


# ------------------------------------------------------------------ wrappers and make_atari_env
def test_stacking_in_the_engine_equals_vec_frame_stack(closing):
    options = {"seed": 2, "episode_life": False, "max_num_frames_per_episode": 60}
    actions = actions_for(30, n=2)
    engine = trace(ALEVecEnv("Breakout", 2, frame_stack=4, **options), actions)
    stacked = trace(VecFrameStack(ALEVecEnv("Breakout", 2, **options), n_stack=4), actions)
    assert_same(engine, stacked)


def test_monitor_normalize_and_transpose_compose(closing):
    venv = ALEVecEnv("Breakout", 2, frame_stack=4, episode_life=False, max_num_frames_per_episode=80)
    wrapped = closing(VecNormalize(VecTransposeImage(VecMonitor(venv)), norm_reward=False))
    obs = wrapped.reset()
    assert obs.shape == (2, 4, 84, 84)
    assert obs.dtype == np.float32
    episodes = []
    for _ in range(20):
        obs, _, _, infos = wrapped.step(np.ones(2, np.int64))
        episodes += [info["episode"] for info in infos if "episode" in info]
        terminal = [info["terminal_observation"] for info in infos if "terminal_observation" in info]
        assert all(frames.shape == (4, 84, 84) for frames in terminal)
    assert len(episodes) >= 2
    assert all(episode["l"] == 20 for episode in episodes)  # VecMonitor counts steps


def test_make_atari_env_builds_it_with_the_same_option_names(closing):
    venv = closing(make_atari_env("BreakoutNoFrameskip-v4", 2, seed=7, vec_env_cls=ALEVecEnv,
                                  wrapper_kwargs={"noop_max": 5, "clip_rewards": False},
                                  env_kwargs={"repeat_action_probability": 0.25},
                                  vec_env_kwargs={"frame_stack": 4}))
    assert isinstance(venv, ALEVecEnv)
    assert venv.game == "breakout"
    assert (venv.options.noop_max, venv.options.clip_rewards, venv.options.repeat_action_probability,
            venv.options.frame_stack) == (5, False, 0.25, 4)
    reference = closing(ALEVecEnv("Breakout", 2, seed=7, frame_stack=4, noop_max=5, clip_rewards=False,
                                  repeat_action_probability=0.25))
    np.testing.assert_array_equal(venv.reset(), reference.reset())
    with pytest.raises(ValueError, match=r"monitor_dir is not available with ALEVecEnv.*infos\[i\]\['episode'\]"):
        make_atari_env("Breakout", 2, vec_env_cls=ALEVecEnv, monitor_dir="runs")
    with pytest.raises(TypeError, match=r"unknown option\(s\) \['mode'\]"):
        make_atari_env("Breakout", 2, vec_env_cls=ALEVecEnv, env_kwargs={"mode": 0})


# ------------------------------------------------------------------ the scripts
def run_script(name, *args, cwd=REPO):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [REPO, os.environ.get("PYTHONPATH")])))
    return subprocess.run([sys.executable, os.path.join(REPO, "scripts", name), *args], check=False, cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=120)


def test_run_atari_backend_ale_reports_real_scores_and_records_video(tmp_path):
    proc = run_script("run_atari.py", "--backend", "ale", "--num-envs", "2", "--steps", "2000",
                      "--video", str(tmp_path), "--video-length", "5", "--video-interval", "500")
    assert proc.returncode == 0, proc.stderr
    assert "on ale, obs (84, 84, 4)" in proc.stdout
    assert proc.stdout.count("summary: steps 2000 |") == 1
    clips = sorted(os.listdir(tmp_path))
    assert clips
    assert all(clip.endswith(".mp4") for clip in clips)
    proc = run_script("run_atari.py", "--backend", "ale", "--num-envs", "4", "--batch-size", "2", "--steps", "1000")
    assert proc.returncode == 0, proc.stderr
    assert "on ale in async batches of 2, obs (84, 84, 4)" in proc.stdout
    assert "summary: steps 1000 |" in proc.stdout


def test_bench_ale_runs_its_cells_side_by_side(tmp_path):
    proc = run_script("benchmark.py", "ale", "--methods", "ale", "--repeats", "1", "--window", "0.1", "--warmup", "0",
                      "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert "## W4: ALE/Breakout-v5" in proc.stdout
    row = r"^\| ALEVecEnv \| [\d,]+ \([\d,]+-[\d,]+\) \| n/a \| n/a \| [\d,]+ \| [\d.]+ \| \d+ \| \d+ \|$"
    assert re.search(row, proc.stdout, re.MULTILINE), proc.stdout
    assert (tmp_path / "cells.json").stat().st_size > 0


# ------------------------------------------------------------------ async batches (recv / send)
def action_of(env, t):
    """Each env's action depends only on the env and its own step count."""
    return (env * 7 + t * 3) % 4


def lock_step_trajectories(n, steps, **options):
    """Per env: [(obs, reward, done, terminal_observation or None)] under step()."""
    with ALEVecEnv("Breakout", n, **options) as venv:
        obs = venv.reset()
        out = {i: [(obs[i].copy(), np.float32(0.0), np.bool_(False), None)] for i in range(n)}
        for t in range(steps):
            obs, rewards, dones, infos = venv.step(np.array([action_of(i, t) for i in range(n)]))
            for i in range(n):
                out[i].append((obs[i].copy(), rewards[i], dones[i], infos[i].get("terminal_observation")))
    return out


@pytest.mark.parametrize("batch_size", [None, 2], ids=["whole-batch", "batch2-of-4"])
def test_recv_send_trajectories_equal_lock_step(batch_size, closing):
    options = {"seed": 4, "frame_stack": 4, "max_num_frames_per_episode": 40}  # an auto-reset every 10 steps
    steps = 14
    expected = lock_step_trajectories(4, steps, **options)
    venv = closing(ALEVecEnv("Breakout", 4, batch_size=batch_size, **options))
    venv.async_reset()
    got = {i: [] for i in range(4)}
    while min(len(rows) for rows in got.values()) <= steps:
        obs, rewards, dones, infos, env_ids = venv.recv()
        assert len(env_ids) == venv.batch_size
        assert len(set(env_ids.tolist())) == len(env_ids)
        for row, env in enumerate(env_ids.tolist()):
            got[env].append((obs[row].copy(), rewards[row], dones[row], infos[row].get("terminal_observation")))
        actions = np.array([action_of(env, len(got[env]) - 1) for env in env_ids.tolist()])
        venv.send(actions[::-1], env_ids[::-1])  # any order of the batch's envs
    for env in range(4):
        for t, (mine, reference) in enumerate(zip(got[env], expected[env][:steps + 1])):
            assert_same(mine[:3], reference[:3]), (env, t)
            assert (mine[3] is None) == (reference[3] is None)
            if mine[3] is not None:
                np.testing.assert_array_equal(mine[3], reference[3])


def test_async_reset_rows_are_reset_observations(closing):
    venv = closing(ALEVecEnv("Breakout", 4, batch_size=2, frame_stack=4, seed=0))
    venv.async_reset()
    obs, rewards, dones, infos, env_ids = venv.recv()
    assert obs.shape == (2, 84, 84, 4)
    assert not obs[..., :3].any()
    assert rewards.tolist() == [0.0, 0.0]
    assert dones.tolist() == [False, False]
    assert [info["lives"] for info in infos] == [5, 5]
    assert infos[0] == venv.reset_infos[int(env_ids[0])]


def test_send_is_for_the_whole_last_batch(closing):
    venv = closing(ALEVecEnv("Breakout", 4, batch_size=2))
    venv.async_reset()
    _, _, _, _, env_ids = venv.recv()
    with pytest.raises(EngineLimitError, match=r"send one action for each env of the last recv\(\), env_ids "
                                               rf"\[{env_ids[0]}, {env_ids[1]}\].*received env_ids \[{env_ids[0]}\]"):
        venv.send(np.zeros(1, np.int64), env_ids[:1])


def test_async_misuse_errors(closing):
    venv = closing(ALEVecEnv("Breakout", 4, batch_size=2, frame_skip=200))  # slow steps, for the timeout
    with pytest.raises(NoAsyncCallError):
        venv.recv()
    venv.async_reset()
    _, _, _, _, env_ids = venv.recv()
    with pytest.raises(ValueError, match="env"):
        venv.send(np.zeros(2, np.int64), np.array([e for e in range(4) if e not in env_ids][:2]))
    venv.send(np.zeros(2, np.int64), env_ids)
    with pytest.raises(AlreadyPendingCallError):
        venv.step(np.zeros(4, np.int64))
    _, _, _, _, env_ids = venv.recv()
    venv.send(np.zeros(2, np.int64), env_ids)
    with pytest.raises(EnvTimeoutError, match="busy") as info:
        venv.recv(timeout=1e-6)
    assert set(info.value.env_indices) == {0, 1, 2, 3}
    assert len(venv.recv()[4]) == 2  # the batch that was late
    with pytest.raises(AlreadyPendingCallError, match=r"async_reset\(\) called while envs \[\d, \d\] are in flight"):
        venv.async_reset()
    venv.recv()  # none in flight now: a new round may start
    venv.async_reset()
    obs, rewards, dones, _, _ = venv.recv()
    assert not rewards.any()
    assert not dones.any()
    assert obs.shape == (2, 84, 84, 1)


@imports_sb3
def test_gymnasium_and_sb3_adapters_run_it(closing):
    from vec_envs.interop import to_gymnasium, to_sb3

    envs = to_gymnasium(ALEVecEnv("Breakout", 2, frame_stack=4, max_num_frames_per_episode=40))
    try:
        obs, _ = envs.reset(seed=3)
        assert obs.shape == (2, 84, 84, 4)
        assert envs.single_action_space.n == 4
        for _ in range(10):
            obs, _, terminations, truncations, infos = envs.step(np.ones(2, np.int64))
        assert truncations.all()
        assert not terminations.any()
        assert infos["_final_obs"].all()
        assert infos["final_obs"][0].shape == (84, 84, 4)
    finally:
        envs.close()
    pytest.importorskip("stable_baselines3")
    from stable_baselines3.common.vec_env import VecTransposeImage as SB3VecTransposeImage

    sb3 = SB3VecTransposeImage(to_sb3(closing(ALEVecEnv("Breakout", 2, frame_stack=4, seed=0))))
    assert sb3.reset().shape == (2, 4, 84, 84)
    obs, rewards, dones, infos = sb3.step(np.ones(2, np.int64))
    assert obs.shape == (2, 4, 84, 84)
    assert rewards.shape == (2,)
    assert sb3.render_mode is None


def test_has_attr_and_render_mode_answer_what_get_attr_knows():
    venv = VecFrameStack(ALEVecEnv("Pong", num_envs=2, render_mode="rgb_array"), 2)
    try:
        assert venv.has_attr("render_mode") and venv.has_attr("spec")
        assert not venv.has_attr("lives")
        assert venv.render_mode == "rgb_array"
    finally:
        venv.close()
