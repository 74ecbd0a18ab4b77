"""render(mode="human"): a real OpenCV window on a real (virtual) X display."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import cv2
import numpy as np
import pytest

from tests.xvfb import XVFB, on_a_server, one_server_at_a_time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COLORS = [(255, 0, 0), (0, 255, 0), (0, 0, 255), (255, 255, 0), (0, 255, 255)]

RENDER_SCRIPT = textwrap.dedent(f"""
    import functools, select, sys
    import cv2
    from vec_envs import DummyVecEnv
    from tests.envs import ColorEnv
    venv = DummyVecEnv([functools.partial(ColorEnv, c) for c in {COLORS!r}])
    venv.reset()
    venv.render(mode="human")
    print("shown", cv2.getWindowProperty("vec_envs: 5 envs", cv2.WND_PROP_VISIBLE) > 0, flush=True)
    while not select.select([sys.stdin], [], [], 0.05)[0]:
        venv.render(mode="human")  # keeps the window painted until the test took its screenshot
    venv.close()
    print("closed", flush=True)
""")


def run_python(code, env, **kwargs):
    return subprocess.Popen([sys.executable, "-c", code], cwd=REPO, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kwargs)


@pytest.mark.skipif(XVFB is None, reason="no Xvfb binary (apt-get install xvfb); CI installs it")
@one_server_at_a_time
def test_human_render_shows_every_tile_in_one_window():
    from tests.envs import ColorEnv
    from vec_envs import tile_images

    expected = tile_images([ColorEnv(c).render() for c in COLORS])

    def attempt(display):  # the screen with the window, then after close(); the client's exit status
        proc = run_python(RENDER_SCRIPT, dict(os.environ, DISPLAY=display.name), stdin=subprocess.PIPE)
        try:
            shown = proc.stdout.readline().strip()
            if not shown and proc.wait(timeout=60) < 0:  # killed by a signal before its window was up
                return display.screenshot(), display.screenshot(), proc.returncode, proc.stderr.read()
            assert shown == "shown True", proc.stderr.read()  # the window's title
            screen = wait_for_screen(display, lambda shot: shows(shot, expected))
            proc.stdin.write("\n")
            proc.stdin.flush()
            assert proc.stdout.readline().strip() == "closed", proc.stderr.read()
            return screen, wait_for_screen(display, lambda shot: not shows(shot, expected)), 0, ""
        finally:
            proc.kill()
            proc.wait()

    screen, after_close, returncode, err = on_a_server(attempt, lambda result: result[0].any() and result[2] == 0)
    assert returncode == 0, err
    assert shows(screen, expected), f"the window never showed the tiles pixel for pixel; {describe(screen)}"
    assert not shows(after_close, expected)


def describe(screen):
    """Where something is drawn on ``screen`` (to tell a missing window from a misplaced one)."""
    rows, cols = np.nonzero(screen.any(axis=2))
    if len(rows) == 0:
        return "the screen is black"
    return (f"non-black pixels span x {cols.min()}..{cols.max()}, y {rows.min()}..{rows.max()}, colors "
            f"{np.unique(screen[rows, cols], axis=0)[:8].tolist()}")


def best_region(screen, image):
    """The region of ``screen`` that looks most like ``image``."""
    _, _, (x, y), _ = cv2.minMaxLoc(cv2.matchTemplate(screen, image, cv2.TM_SQDIFF))
    return screen[y:y + image.shape[0], x:x + image.shape[1]]


def shows(screen, image):
    """``image`` is on ``screen``, pixel for pixel."""
    return np.array_equal(best_region(screen, image), image)


def wait_for_screen(display, done, seconds=15.0):
    """Screenshots until ``done(shot)`` (a loaded machine paints late); the last one."""
    deadline = time.monotonic() + seconds
    shot = display.screenshot()
    while not done(shot) and time.monotonic() < deadline:
        time.sleep(0.1)
        shot = display.screenshot()
    return shot


def test_human_render_without_display_is_a_clear_error_not_a_crash():
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    code = textwrap.dedent("""
        from vec_envs import DummyVecEnv
        from vec_envs.errors import VecEnvError
        from tests.envs import ColorEnv
        venv = DummyVecEnv([ColorEnv])
        venv.reset()
        try:
            venv.render(mode="human")
        except VecEnvError as exc:
            print("error:", exc)
        venv.close()
    """)
    proc = run_python(code, env)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "error: render(mode='human') needs a display, but DISPLAY is not set" in out


def test_human_render_with_unreachable_display_is_a_clear_error():
    proc = run_python("from vec_envs.rendering.opencv_viewer import check_display\n"
                      "try:\n    check_display()\nexcept Exception as e:\n    print(e)",
                      dict(os.environ, DISPLAY=":12345"))
    out, err = proc.communicate(timeout=60)
    assert "DISPLAY=:12345 cannot be reached" in out, err
