"""render(mode="human"): a real OpenCV window on a real (virtual) X display."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import cv2
import numpy as np
import pytest

from tests.xvfb import XVFB, xvfb

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLORS = [(255, 0, 0), (0, 255, 0), (0, 0, 255), (255, 255, 0), (0, 255, 255)]

RENDER_SCRIPT = textwrap.dedent(f"""
    import functools, sys, time
    from vec_envs import DummyVecEnv
    from tests.envs import ColorEnv
    venv = DummyVecEnv([functools.partial(ColorEnv, c) for c in {COLORS!r}])
    venv.reset()
    for _ in range(5):
        venv.render(mode="human")
        time.sleep(0.1)
    print("shown", flush=True)
    sys.stdin.readline()          # keep the window up until the test took its screenshot
    venv.close()
    print("closed", flush=True)
""")


def run_python(code, env, **kwargs):
    return subprocess.Popen([sys.executable, "-c", code], cwd=REPO, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kwargs)


@pytest.mark.skipif(XVFB is None, reason="no Xvfb binary (apt-get install xvfb); CI installs it")
def test_human_render_shows_every_tile_in_one_window():
    from tests.envs import ColorEnv
    from vec_envs import tile_images

    expected = tile_images([ColorEnv(c).render() for c in COLORS])
    with xvfb() as display:
        proc = run_python(RENDER_SCRIPT, dict(os.environ, DISPLAY=display.name), stdin=subprocess.PIPE)
        try:
            assert proc.stdout.readline().strip() == "shown", proc.stderr.read()
            screen = display.screenshot()
            proc.stdin.write("\n")
            proc.stdin.flush()
            assert proc.stdout.readline().strip() == "closed", proc.stderr.read()
            after_close = display.screenshot()
        finally:
            proc.kill()
            proc.wait()
    scores = cv2.matchTemplate(screen, expected, cv2.TM_SQDIFF)
    _, _, (x, y), _ = cv2.minMaxLoc(scores)
    shown = screen[y:y + expected.shape[0], x:x + expected.shape[1]]
    np.testing.assert_array_equal(shown, expected)  # every tile, pixel for pixel, at its place
    assert cv2.minMaxLoc(cv2.matchTemplate(after_close, expected, cv2.TM_SQDIFF))[0] > 0


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
    proc = run_python("from vec_envs.opencv_viewer import check_display\n"
                      "try:\n    check_display()\nexcept Exception as e:\n    print(e)",
                      dict(os.environ, DISPLAY=":12345"))
    out, err = proc.communicate(timeout=60)
    assert "DISPLAY=:12345 cannot be reached" in out, err
