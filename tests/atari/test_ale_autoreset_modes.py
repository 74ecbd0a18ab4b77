"""ALEVecEnv in next-step and disabled autoreset, row for row what ale-py's own engine
(``AtariVectorEnv``) returns in its ``NextStep`` mode over the same game, options, seeds and
actions (disabled: the agent resets the ended envs by mask), and the game records."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("ale_py", reason="ALEVecEnv needs ale-py: pip install -e '.[atari]'")

from ale_py.vector_env import AtariVectorEnv  # noqa: E402

from vec_envs import ALEVecEnv  # noqa: E402
from vec_envs.ale.ale_options import AtariOptions  # noqa: E402
from vec_envs.interop import to_gymnasium  # noqa: E402

pytestmark = pytest.mark.slow  # steps Atari emulators

N = 3
#: short games (a time limit of 60 frames: 15 steps), lost lives as episode ends
OPTIONS = {"frame_stack": 4, "max_num_frames_per_episode": 60, "clip_rewards": False}


def engine(mode, **options):
    """ale-py's own vector env with the engine settings ALEVecEnv gives for ``options``."""
    kwargs = AtariOptions(**options).engine_kwargs()
    kwargs["frameskip"] = kwargs.pop("frame_skip")
    kwargs["max_num_frames_per_episode"] = kwargs.pop("max_episode_steps")
    return AtariVectorEnv("breakout", N, autoreset_mode=mode, **kwargs)


def hwc(obs):
    return obs.transpose(0, 2, 3, 1)


def compare(ours, ref, steps, disabled):
    """Step both with the same actions (disabled: reset the ended envs by mask); the ends seen."""
    obs, infos = ours.reset(seed=3)
    ref_obs, ref_infos = ref.reset(seed=3)
    np.testing.assert_array_equal(obs, hwc(ref_obs))
    ends = 0
    for t, actions in enumerate(np.random.default_rng(0).integers(0, 4, size=(steps, N))):
        obs, rewards, terminations, truncations, infos = ours.step(actions)
        ref_obs, ref_rewards, ref_terminations, ref_truncations, ref_infos = ref.step(actions)
        np.testing.assert_array_equal(obs, hwc(ref_obs))
        np.testing.assert_array_equal(rewards, ref_rewards.astype(np.float32))
        np.testing.assert_array_equal(terminations, ref_terminations)
        np.testing.assert_array_equal(truncations, ref_truncations & ~ref_terminations)
        for key in ("lives", "episode_frame_number", "frame_number"):
            np.testing.assert_array_equal(infos[key], ref_infos[key])
        ended = terminations | truncations
        ends += int(ended.sum())
        if disabled and ended.any():
            seeds = np.arange(t, t + int(ended.sum()), dtype=np.int64)  # the engine's: one per env reset
            every = np.zeros(N, np.int64)
            every[ended] = seeds  # gymnasium's: one per env, those of the mask used
            obs, infos = ours.reset(seed=every.tolist(), options={"reset_mask": ended})
            ref_obs, ref_infos = ref.reset(seed=seeds, options={"reset_mask": ended})
            np.testing.assert_array_equal(obs[ended], hwc(ref_obs)[ended])
    return ends


def test_next_step_rows_equal_the_engines_own_next_step_mode(closing):
    ours = closing(to_gymnasium(ALEVecEnv("Breakout", N, autoreset_mode="next_step", **OPTIONS)))
    ref = engine("NextStep", **OPTIONS)
    try:
        assert compare(ours, ref, 50, disabled=False) >= 6  # lost lives and time limits
    finally:
        ref.close()


def test_disabled_rows_equal_the_engine_reset_by_mask(closing):
    options = {**OPTIONS, "episode_life": False}
    ours = closing(to_gymnasium(ALEVecEnv("Breakout", N, autoreset_mode="disabled", **options)))
    ref = engine("NextStep", **options)
    try:
        assert compare(ours, ref, 40, disabled=True) >= 6
    finally:
        ref.close()


def test_next_step_reports_each_game_once_with_its_real_score(closing):
    venv = closing(ALEVecEnv("Breakout", 2, seed=1, autoreset_mode="next_step", clip_rewards=False,
                             max_num_frames_per_episode=400))
    same = closing(ALEVecEnv("Breakout", 2, seed=1, clip_rewards=False, max_num_frames_per_episode=400))
    venv.reset()
    scores, games, after_end = np.zeros(2), [], np.zeros(2, bool)
    rng = np.random.default_rng(0)
    while len(games) < 4:
        obs, rewards, dones, infos = venv.step(rng.integers(0, 4, size=2))
        assert not rewards[after_end].any()  # the row after an end is its reset (or the next life's)
        scores += rewards
        for i, info in enumerate(infos):
            if "episode" in info:  # with the row where the engine reset the game
                assert after_end[i] and not dones[i]
                games.append((info["episode"]["r"], scores[i]))
                scores[i] = 0
        after_end = dones
    assert all(reported == summed for reported, summed in games)
    assert same.autoreset_mode.value == "SameStep"


def test_disabled_needs_what_the_engines_resets_need():
    with pytest.raises(ValueError, match=r"autoreset_mode='disabled'\): a lost life ends .*episode_life=False"):
        ALEVecEnv("Breakout", 2, autoreset_mode="disabled")
    with pytest.raises(ValueError, match=r"batch_size=1 < num_envs=2.*batch_size=None"):
        ALEVecEnv("Breakout", 2, autoreset_mode="disabled", episode_life=False, batch_size=1)


def test_recv_send_next_step_rows_of_each_env_equal_lock_step(closing):
    options = {**OPTIONS, "seed": 4, "autoreset_mode": "next_step"}
    steps, n = 24, 4
    actions = np.random.default_rng(5).integers(0, 4, size=(steps + 1, n))
    lock_step = closing(ALEVecEnv("Breakout", n, **options))
    first = lock_step.reset()
    expected = {i: [(first[i].copy(), 0.0, False)] for i in range(n)}
    for t in range(steps):
        obs, rewards, dones, _ = lock_step.step(actions[t])
        for i in range(n):
            expected[i].append((obs[i].copy(), rewards[i], dones[i]))
    venv = closing(ALEVecEnv("Breakout", n, batch_size=2, **options))
    venv.async_reset()
    got = {i: [] for i in range(n)}
    while min(len(rows) for rows in got.values()) <= steps:
        obs, rewards, dones, _, env_ids = venv.recv()
        for row, i in enumerate(env_ids.tolist()):
            got[i].append((obs[row].copy(), rewards[row], dones[row]))
        venv.send(np.array([actions[min(len(got[i]) - 1, steps), i] for i in env_ids.tolist()]), env_ids)
    for i in range(n):
        for mine, reference in zip(got[i], expected[i]):
            np.testing.assert_array_equal(mine[0], reference[0])
            assert mine[1:] == reference[1:]
    assert sum(done for rows in expected.values() for _, _, done in rows) >= 4


def test_make_atari_env_passes_the_mode_to_ale_vec_env(closing):
    from vec_envs.ale.make_atari_env import make_atari_env

    venv = closing(make_atari_env("Breakout", 2, vec_env_cls=ALEVecEnv, autoreset_mode="next_step"))
    assert venv.unwrapped.autoreset_mode.value == "NextStep"
