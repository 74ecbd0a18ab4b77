"""VecVideoRecorder: MP4 clips that read back with imageio, several per run, clear errors."""
from __future__ import annotations

import functools
import os
import subprocess
import sys

import numpy as np
import pytest

from tests.backends import BACKENDS
from tests.envs import ColorEnv
from tests.wrapper_envs import FrameEnv
from vec_envs import DummyVecEnv
from vec_envs.wrappers import VecVideoRecorder


def read_video(path):
    """(frames, (height, width)) of an MP4, read with imageio's FFMPEG plugin."""
    import imageio.v2 as imageio

    frames = []
    with imageio.get_reader(path, format="FFMPEG") as reader:
        for frame in reader:  # the plugin reports an unknown length: iterate
            frames.append(frame)
    return frames


@pytest.mark.parametrize("make", BACKENDS)
def test_two_clips_and_a_clip_cut_by_close(make, tmp_path):
    venv = make([functools.partial(FrameEnv, length=5)] * 3)
    folder = tmp_path / "new" / "videos"
    recorder = VecVideoRecorder(venv, folder, lambda step: step in (0, 7, 11), video_length=3, name_prefix="clip")
    assert recorder.fps == 15  # from the envs' metadata
    recorder.reset()
    for _ in range(12):
        recorder.step([0, 0, 0])
    assert recorder.recording
    recorder.close()
    assert not recorder.recording
    assert venv.closed
    names = ["clip-step-0-to-step-3.mp4", "clip-step-7-to-step-10.mp4", "clip-step-11-to-step-14.mp4"]
    assert sorted(os.listdir(folder)) == sorted(names)
    assert recorder.video_paths == [str(folder / name) for name in names]
    for name, count in zip(names, (3, 3, 2)):
        frames = read_video(folder / name)
        assert len(frames) == count
        assert all(frame.shape == (20, 28, 3) for frame in frames)  # 3 frames of 10x14 tiled 2x2
    red = [int(np.median(frame[:10, :14, 0])) for frame in read_video(folder / names[0])]
    assert red == pytest.approx([0, 20, 40], abs=6)  # FrameEnv renders red = 20 * t


def test_the_trigger_is_asked_once_per_step_and_odd_sizes_are_padded(tmp_path):
    asked = []
    venv = DummyVecEnv([functools.partial(ColorEnv, size=(41, 59))])
    with VecVideoRecorder(venv, tmp_path, lambda step: asked.append(step) or step == 1, video_length=2) as recorder:
        recorder.reset()
        recorder.reset()
        for _ in range(4):
            recorder.step([0])
    assert asked == [0, 1, 3, 4]
    frames = read_video(tmp_path / "rl-video-step-1-to-step-3.mp4")
    assert len(frames) == 2
    assert frames[0].shape == (42, 60, 3)


def test_an_unwritable_folder_is_a_clear_error(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    for folder in (blocker, blocker / "videos"):
        with pytest.raises(ValueError, match="video_folder .* is not a writable directory"):
            VecVideoRecorder(DummyVecEnv([ColorEnv]), folder, lambda step: True, video_length=1)


def test_missing_video_packages_say_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "imageio_ffmpeg", None)
    with pytest.raises(ImportError, match=r'missing: imageio_ffmpeg\): pip install -e "\.\[video\]"'):
        VecVideoRecorder(DummyVecEnv([ColorEnv]), tmp_path, lambda step: True, video_length=1)


def test_importing_the_wrappers_does_not_import_imageio():
    code = "import sys, wrappers; print(sorted(m for m in ('imageio', 'imageio_ffmpeg') if m in sys.modules))"
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root, check=True)
    assert out.stdout.strip() == "[]"


def test_bad_arguments_are_clear_errors(tmp_path):
    with pytest.raises(ValueError, match="video_length must be an int >= 1, received 0"):
        VecVideoRecorder(DummyVecEnv([ColorEnv]), tmp_path, lambda step: True, video_length=0)
    with pytest.raises(TypeError, match="record_video_trigger must be a callable step -> bool, received int"):
        VecVideoRecorder(DummyVecEnv([ColorEnv]), tmp_path, 100, video_length=10)
