"""OpenCVViewer: one OpenCV window showing the tiled frames of a VecEnv."""
from __future__ import annotations

import os
import socket
import sys

import numpy as np

from vec_envs.errors import VecEnvError

__all__ = ["OpenCVViewer", "check_display"]

NO_DISPLAY = (
    "render(mode='human') needs a display, but {why}. Use render(mode='rgb_array') to get "
    "the tiled frames as an array, or run under a virtual display: xvfb-run -a python ..."
)


def _x_display_reachable(display: str) -> bool:
    host, _, rest = display.rpartition(":")
    number = rest.split(".")[0]
    if not number.isdigit():
        return False
    address: str | tuple[str, int]
    if host in ("", "unix"):
        path = f"/tmp/.X11-unix/X{number}"
        family, address = socket.AF_UNIX, path
    else:
        family, address = socket.AF_INET, (host, 6000 + int(number))
    try:
        with socket.socket(family, socket.SOCK_STREAM) as sock:
            sock.settimeout(1.0)
            sock.connect(address)
        return True
    except OSError:
        return False


def check_display() -> None:
    """Raise ``VecEnvError`` unless a display is there (Qt aborts the process otherwise)."""
    if not sys.platform.startswith("linux"):
        return
    display = os.environ.get("DISPLAY")
    if not display:
        if os.environ.get("WAYLAND_DISPLAY"):
            return
        raise VecEnvError(NO_DISPLAY.format(why="DISPLAY is not set"))
    if not _x_display_reachable(display):
        raise VecEnvError(NO_DISPLAY.format(why=f"the X display DISPLAY={display} cannot be reached"))


class OpenCVViewer:
    """A single ``cv2.imshow`` window, reused across calls, closed by ``close()``.

    Example:
        >>> from vec_envs.rendering.tile_images import tile_images
        >>> try:
        ...     viewer = OpenCVViewer("my envs")
        ...     viewer.imshow(tile_images([np.zeros((32, 32, 3), np.uint8)] * 4))  # RGB in, shown at 1:1
        ...     viewer.close()
        ... except VecEnvError as err:  # no X display here: the error says what to do
        ...     assert "rgb_array" in str(err)
    """

    def __init__(self, title: str) -> None:
        check_display()
        try:
            import cv2
        except ImportError as exc:
            raise ImportError("render(mode='human') needs OpenCV: pip install opencv-python") from exc
        self._cv2 = cv2
        self.title = title
        self.is_open = False

    def imshow(self, img_rgb: np.ndarray) -> None:
        """Show an (H, W, 3) RGB uint8 image (or (H, W, 1) grayscale)."""
        cv2 = self._cv2
        try:
            if not self.is_open:
                cv2.namedWindow(self.title, cv2.WINDOW_AUTOSIZE | cv2.WINDOW_GUI_NORMAL)
                self.is_open = True
            frame = img_rgb[:, :, ::-1] if img_rgb.shape[-1] == 3 else img_rgb
            cv2.imshow(self.title, np.ascontiguousarray(frame))
            cv2.waitKey(1)
        except cv2.error as exc:
            raise VecEnvError(
                f"render(mode='human'): OpenCV cannot open a window ({exc.err.strip()}); "
                "opencv-python-headless has no GUI: install opencv-python instead"
            ) from exc

    def close(self) -> None:
        """Close the window if it is open (idempotent)."""
        if self.is_open:
            self.is_open = False
            self._cv2.destroyWindow(self.title)
            self._cv2.waitKey(1)
