"""The wrappers refuse what they cannot use: impossible VecNormalize files, NaN in per-env
dict actions (VecCheckNan), video paths that exist (VecVideoRecorder)."""
from __future__ import annotations

import glob
import math
import os

import numpy as np
import pytest

from tests.faulty_envs import DictActionEnv, OutputEnv
from tests.scripts.test_run_atari import run_script
from tests.wrapper_envs import FrameEnv
from vec_envs import DummyVecEnv
from vec_envs.wrappers import VecCheckNan, VecNormalize, VecNormalizeFileError, VecVideoRecorder


# ------------------------------------------------------- VecNormalize.load
def saved_statistics(tmp_path) -> tuple[str, dict[str, np.ndarray]]:
    path = str(tmp_path / "stats.npz")
    with VecNormalize(DummyVecEnv([FrameEnv] * 2)) as venv:
        venv.reset()
        venv.step([0, 0])
        venv.save(path)
    with np.load(path, allow_pickle=False) as npz:
        return path, {name: npz[name] for name in npz.files}


IMPOSSIBLE = [
    pytest.param("obs_rms.0.var", lambda a: -np.abs(a) - 1, r"obs_rms\.0\.var holds negative variances "
                 r"\(min -\d.*\); a variance is >= 0", id="negative-variance"),
    pytest.param("obs_rms.0.mean", lambda a: a.astype(str), r"obs_rms\.0\.mean has dtype <U\d+; expected real "
                 r"numbers", id="text-mean"),
    pytest.param("obs_rms.0.mean", lambda a: np.full_like(a, np.nan), r"obs_rms\.0\.mean holds NaN or infinite "
                 r"values", id="nan-mean"),
    pytest.param("ret_rms.var", lambda a: np.full_like(a, np.inf), r"ret_rms\.var holds NaN or infinite values",
                 id="infinite-variance"),
    pytest.param("ret_rms.count", lambda a: np.array(-3.0), r"ret_rms\.count is -3\.0; a count is >= 0",
                 id="negative-count"),
    pytest.param("ret_rms.count", lambda a: np.array(1 + 2j), r"ret_rms\.count has dtype complex128; expected "
                 r"real numbers",
                 id="complex-count"),
]


@pytest.mark.parametrize("name, change, reason", IMPOSSIBLE)
def test_impossible_statistics_are_refused_by_load(tmp_path, name, change, reason):
    path, arrays = saved_statistics(tmp_path)
    arrays[name] = change(arrays[name])
    with open(path, "wb") as f:
        np.savez(f, **arrays)
    with DummyVecEnv([FrameEnv] * 2) as venv, \
            pytest.raises(VecNormalizeFileError, match=rf"is not a readable VecNormalize file \({reason}\)"):
        VecNormalize.load(path, venv)


def test_possible_statistics_still_load(tmp_path):
    path, arrays = saved_statistics(tmp_path)
    arrays["obs_rms.0.var"] = np.zeros_like(arrays["obs_rms.0.var"])  # a constant pixel: variance 0
    with open(path, "wb") as f:
        np.savez(f, **arrays)
    with VecNormalize.load(path, DummyVecEnv([FrameEnv] * 2)) as venv:
        assert np.isfinite(venv.reset()).all()


# ------------------------------------------------------------ VecCheckNan
@pytest.mark.parametrize("bad", [math.nan, math.inf])
def test_nan_in_a_list_of_dict_actions_is_found(bad):
    good = {"move": 0, "aim": np.zeros(2, np.float32)}
    with VecCheckNan(DummyVecEnv([DictActionEnv] * 3)) as venv:
        venv.reset()
        kind = "NaN" if math.isnan(bad) else "inf"
        with pytest.raises(ValueError, match=rf"^action\['aim'\] of env 1 contains {kind} before step$"):
            venv.step([good, {"move": 0, "aim": np.array([0.0, bad])}, good])
        with pytest.raises(ValueError, match=rf"^action\['aim'\] of env 2 contains {kind} before step$"):
            venv.step({"move": [0, 0, 0], "aim": np.array([[0, 0], [0, 0], [bad, 0]])})
        venv.step([good] * 3)


def test_nan_in_a_tuple_of_scalar_actions_is_found():
    with VecCheckNan(DummyVecEnv([OutputEnv] * 2)) as venv:
        venv.reset()
        with pytest.raises(ValueError, match=r"^action of env 1 contains NaN before step$"):
            venv.step((0.0, math.nan))


# ----------------------------------------------------- VecVideoRecorder
class UnrenderableEnv(FrameEnv):
    def render(self):
        raise RuntimeError("no frames today")


def test_a_clip_whose_first_frame_failed_is_not_listed(tmp_path):
    recorder = VecVideoRecorder(DummyVecEnv([UnrenderableEnv] * 2), tmp_path, lambda step: True, video_length=3)
    with pytest.raises(RuntimeError, match="no frames today"):
        recorder.reset()
    recorder.close()
    assert recorder.video_paths == []
    assert os.listdir(tmp_path) == []


def test_every_listed_clip_exists(tmp_path):
    with VecVideoRecorder(DummyVecEnv([FrameEnv] * 2), tmp_path, lambda step: step % 4 == 0, video_length=2) as rec:
        rec.reset()
        for _ in range(8):
            rec.step([0, 0])
    assert [os.path.basename(p) for p in rec.video_paths] == [
        "rl-video-step-0-to-step-2.mp4", "rl-video-step-4-to-step-6.mp4", "rl-video-step-8-to-step-10.mp4"]
    assert all(os.path.getsize(p) > 0 for p in rec.video_paths)


def test_run_atari_leaves_no_trailing_one_frame_clip(tmp_path):
    pytest.importorskip("imageio_ffmpeg")
    videos = tmp_path / "videos"
    proc = run_script("--backend", "dummy", "--num-envs", "2", "--steps", "40", "--video", str(videos),
                      "--video-length", "5", "--video-interval", "10")
    assert proc.returncode == 0, proc.stderr
    clips = sorted(os.path.basename(p) for p in glob.glob(str(videos / "*.mp4")))
    assert clips == ["ALE-Breakout-v5-step-0-to-step-5.mp4", "ALE-Breakout-v5-step-10-to-step-15.mp4"]
