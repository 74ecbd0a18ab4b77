"""A real X server for the window tests: Xvfb with its screen mirrored to an XWD file."""
from __future__ import annotations

import os
import select
import shutil
import struct
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

import numpy as np
import pytest

XVFB = shutil.which("Xvfb")
#: the tests that start a server run one after another (in one worker under pytest-xdist): with
#: two servers starting and stopping at once, a client's window now and then never reached the
#: screen of the server it was given, which stayed black
one_server_at_a_time = pytest.mark.xdist_group("xvfb")
T = TypeVar("T")


class Display:
    def __init__(self, name: str, fbdir: str) -> None:
        self.name = name
        self.screen_file = os.path.join(fbdir, "Xvfb_screen0")

    def screenshot(self) -> np.ndarray:
        """The screen as an (H, W, 3) RGB array, read from Xvfb's XWD framebuffer file."""
        return read_xwd(self.screen_file)


def read_xwd(path: str) -> np.ndarray:
    """Decode a 24/32-bit ZPixmap XWD file (what Xvfb -fbdir writes) to RGB."""
    with open(path, "rb") as f:
        data = f.read()
    fields = struct.unpack(">25I", data[:100])
    header_size, width, height = fields[0], fields[4], fields[5]
    byte_order, bits_per_pixel, bytes_per_line, ncolors = fields[7], fields[11], fields[12], fields[19]
    if bits_per_pixel != 32:
        raise ValueError(f"expected a 32-bit XWD screen, got {bits_per_pixel} bits per pixel")
    start = header_size + 12 * ncolors
    rows = np.frombuffer(data, np.uint8, count=height * bytes_per_line, offset=start)
    pixels = rows.reshape(height, bytes_per_line)[:, : width * 4].reshape(height, width, 4)
    bgr = pixels[:, :, :3] if byte_order == 0 else pixels[:, :, 3:0:-1]
    return np.ascontiguousarray(bgr[:, :, ::-1])


@contextmanager
def xvfb(size: str = "800x600x24") -> Iterator[Display]:
    """Start Xvfb on a free display number (the server picks it, so test processes that start
    servers at once never share one); stop it afterwards. ``-noreset``: by default a server
    resets when its last client leaves, and a client connecting meanwhile is refused (Qt then
    aborts the process: "could not connect to display")."""
    fbdir = tempfile.mkdtemp(prefix="vec_envs-xvfb-")
    read_end, write_end = os.pipe()
    proc = None
    try:
        proc = subprocess.Popen([XVFB, "-displayfd", str(write_end), "-screen", "0", size, "-fbdir", fbdir,
                                 "-nolisten", "tcp", "-noreset"], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, pass_fds=(write_end,))
        os.close(write_end)
        write_end = -1
        number = b""
        deadline = time.monotonic() + 10
        while not number.endswith(b"\n") and time.monotonic() < deadline:  # written once it accepts clients
            if select.select([read_end], [], [], max(0.0, deadline - time.monotonic()))[0]:
                chunk = os.read(read_end, 16)
                if not chunk:
                    break  # it exited
                number += chunk
        if not number.endswith(b"\n"):
            raise RuntimeError(f"Xvfb did not start (exit status {proc.poll()})")
        yield Display(f":{int(number)}", fbdir)
    finally:
        for fd in (read_end, write_end):
            if fd >= 0:
                os.close(fd)
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=10)
        shutil.rmtree(fbdir, ignore_errors=True)


def on_a_server(attempt: Callable[[Display], T], reached_it: Callable[[T], bool], tries: int = 2) -> T:
    """``attempt(display)`` on a new server, once more on another one unless the client reached
    its server (``reached_it(result)``): now and then a window, mapped and viewable on its server,
    is never painted and the screen stays black (the cause is not found), and a client killed by a
    signal before the test was done with it was refused by its server. The last try's result is
    the test's."""
    for _ in range(tries - 1):
        with xvfb() as display:
            result = attempt(display)
        if reached_it(result):
            return result
    with xvfb() as display:
        return attempt(display)
