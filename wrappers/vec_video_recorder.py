"""VecVideoRecorder: clips of the tiled env frames, written as H.264 MP4 files."""
from __future__ import annotations

import contextlib
import importlib.util
import os
import signal
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from vec_envs.arguments import check_int
from vec_envs.errors import VecEnvError
from vec_envs.extras import install_hint
from vec_envs.types import VecEnvObs, VecEnvRecvReturn, VecEnvStepReturn
from vec_envs.vec_env_base import VecEnvBase
from vec_envs.vec_env_wrapper import VecEnvWrapper

__all__ = ["VecVideoRecorder"]

VIDEO_MODULES = ("imageio", "imageio_ffmpeg")
MISSING_VIDEO_DEPS = ('VecVideoRecorder needs imageio and imageio-ffmpeg to write MP4 files '
                      f"(missing: {{missing}}): {install_hint('video')}")
FOLDER_NOT_WRITABLE = "VecVideoRecorder: video_folder {folder!r} is not a writable directory ({reason})"
FRAME_SIZE_CHANGED = ("VecVideoRecorder: frame {index} of {path} is {received} pixels (height, width), "
                      "but the clip started with {expected}; every frame of a clip must have one size")
DEFAULT_FPS = 30
NO_ASYNC = ("VecVideoRecorder.{method}(): a clip is one frame of all envs tiled per lock-step step, and "
            "under recv/send the envs are at different steps; record with step()/reset(), or record "
            "one env in its own lock-step VecEnv")


def _missing_video_modules() -> list[str]:
    """The video modules that cannot be imported (checked without importing them)."""
    missing = []
    for name in VIDEO_MODULES:
        present = sys.modules[name] is not None if name in sys.modules else importlib.util.find_spec(name) is not None
        if not present:
            missing.append(name)
    return missing


@contextlib.contextmanager
def _interrupts_deferred() -> Iterator[None]:
    """Hold a SIGINT (Ctrl-C) until the block is done, then deliver it as usual."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: received.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if received:
            signal.raise_signal(signal.SIGINT)


def _import_imageio() -> Any:
    try:
        import imageio.v2 as imageio
        import imageio_ffmpeg  # noqa: F401  (the FFMPEG plugin's backend)
    except ImportError as exc:
        raise ImportError(MISSING_VIDEO_DEPS.format(missing=exc.name)) from exc
    return imageio


def _writable_folder(folder: str | os.PathLike) -> str:
    path = os.path.abspath(os.fspath(folder))
    try:
        os.makedirs(path, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as exc:
        reason = f"{type(exc).__name__}: {exc.strerror or exc}"
        raise ValueError(FOLDER_NOT_WRITABLE.format(folder=path, reason=reason)) from exc
    return path


def _video_frame(frame: np.ndarray | None) -> np.ndarray:
    """An RGB uint8 frame with even height and width (H.264 in yuv420p needs them even)."""
    if frame is None:
        raise ValueError("VecVideoRecorder: render(mode='rgb_array') returned None; make the envs with "
                         "render_mode='rgb_array'")
    frame = np.asarray(frame, np.uint8)
    if frame.ndim == 2:
        frame = frame[:, :, None]
    if frame.shape[2] == 1:
        frame = np.repeat(frame, 3, axis=2)
    frame = frame[:, :, :3]
    h, w = frame.shape[:2]
    if h % 2 or w % 2:
        frame = np.pad(frame, ((0, h % 2), (0, w % 2), (0, 0)))
    return frame


class VecVideoRecorder(VecEnvWrapper):
    """Records clips of ``render(mode="rgb_array")`` (the frames of every env, tiled) to MP4.

    ``record_video_trigger(step)`` is asked once per step count (0 at the first reset,
    then the number of steps taken) while no clip is recording; when it returns True a
    clip starts with the current frame and takes one frame per step until it has
    ``video_length`` frames. A run can record any number of clips; each file is finished
    when its clip ends, or on ``close()``. Files are H.264 (libx264, yuv420p) named
    ``{name_prefix}-step-{start}-to-step-{start + video_length}.mp4``; odd frame sizes are
    padded by one black row / column. The envs need ``render_mode="rgb_array"``. The
    frames are what the envs render, in every autoreset mode: under next-step an
    episode's last frame, then its reset's at the next step.

    Args:
        venv: the VecEnv to wrap.
        video_folder: where the clips go (created if missing; must be writable).
        record_video_trigger: ``step -> bool``, whether to start a clip at this step.
        video_length: frames per clip.
        name_prefix: start of every file name.
        fps: frames per second of the files (default: the envs' ``metadata["render_fps"]``,
            else 30).

    Example:
        >>> import os, tempfile
        >>> from vec_envs import DummyVecEnv
        >>> from vec_envs.wrappers.atari import make_atari
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     venv = DummyVecEnv([lambda: make_atari("Pong", render_mode="rgb_array")] * 2)
        ...     venv = VecVideoRecorder(venv, folder, lambda step: step % 10_000 == 0, video_length=5)
        ...     _ = venv.reset()
        ...     for _ in range(5):
        ...         _ = venv.step(np.zeros(2, int))
        ...     venv.close()
        ...     [name.endswith(".mp4") for name in os.listdir(folder)]
        [True]
    """

    def __init__(self, venv: VecEnvBase, video_folder: str | os.PathLike,
                 record_video_trigger: Callable[[int], bool], video_length: int,
                 name_prefix: str = "rl-video", fps: int | None = None) -> None:
        super().__init__(venv)
        if not callable(record_video_trigger):
            raise TypeError("VecVideoRecorder: record_video_trigger must be a callable step -> bool, "
                            f"received {type(record_video_trigger).__name__}")
        check_int("VecVideoRecorder: video_length", video_length)
        missing = _missing_video_modules()
        if missing:
            raise ImportError(MISSING_VIDEO_DEPS.format(missing=", ".join(missing)))
        self.video_folder = _writable_folder(video_folder)
        self.record_video_trigger, self.video_length = record_video_trigger, int(video_length)
        self.name_prefix = name_prefix
        self.fps = fps if fps is not None else self._env_fps()
        self.step_id = 0
        self.video_path: str | None = None
        self.video_paths: list[str] = []
        self._writer: Any = None
        self._frames = 0
        self._frame_size: tuple[int, int] | None = None
        self._asked_step = -1

    def _env_fps(self) -> int:
        try:
            metadata = self.venv.get_attr("metadata", indices=0)[0]
        except (AttributeError, VecEnvError):
            return DEFAULT_FPS
        return int((metadata or {}).get("render_fps") or DEFAULT_FPS)

    @property
    def recording(self) -> bool:
        """Whether a clip is being recorded."""
        return self._writer is not None

    def reset(self) -> VecEnvObs:
        obs = self.venv.reset()
        self._after_transition()
        return obs

    def step_wait(self, timeout: float | None = None) -> VecEnvStepReturn:
        result = self.venv.step_wait(timeout)
        self.step_id += 1
        self._after_transition()
        return result

    def async_reset(self) -> None:
        raise NotImplementedError(NO_ASYNC.format(method="async_reset"))

    def recv(self, timeout: float | None = None) -> VecEnvRecvReturn:
        raise NotImplementedError(NO_ASYNC.format(method="recv"))

    def send(self, actions: Any, env_ids: Any) -> None:
        raise NotImplementedError(NO_ASYNC.format(method="send"))

    def _after_transition(self) -> None:
        if self._writer is None:
            if self._asked_step == self.step_id:
                return
            self._asked_step = self.step_id
            if not self.record_video_trigger(self.step_id):
                return
            self._start_clip()
        self._capture_frame()

    def _start_clip(self) -> None:
        imageio = _import_imageio()
        name = f"{self.name_prefix}-step-{self.step_id}-to-step-{self.step_id + self.video_length}.mp4"
        self.video_path = os.path.join(self.video_folder, name)
        self._writer = imageio.get_writer(self.video_path, format="FFMPEG", mode="I", fps=self.fps,
                                          codec="libx264", pixelformat="yuv420p", macro_block_size=1,
                                          ffmpeg_log_level="error")
        self._frames, self._frame_size = 0, None

    def _capture_frame(self) -> None:
        frame = _video_frame(self.venv.render(mode="rgb_array"))
        size = frame.shape[:2]
        if self._frame_size is None:
            self._frame_size = size
        elif size != self._frame_size:
            raise ValueError(FRAME_SIZE_CHANGED.format(index=self._frames, path=self.video_path,
                                                       received=size, expected=self._frame_size))
        with _interrupts_deferred():  # a Ctrl-C mid-frame would leave an unreadable file
            self._writer.append_data(frame)
        self._frames += 1
        if self._frames >= self.video_length:
            self._finish_clip()

    def _finish_clip(self) -> None:
        writer, self._writer = self._writer, None
        with _interrupts_deferred():
            writer.close()
        if self._frames and self.video_path is not None and os.path.exists(self.video_path):
            self.video_paths.append(self.video_path)  # a clip whose first frame failed has no file

    def close(self) -> None:
        try:
            if self._writer is not None:
                self._finish_clip()
        finally:
            super().close()
