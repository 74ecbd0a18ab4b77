"""scripts/run_atari.py as a user runs it: a subprocess with a tiny budget."""
from __future__ import annotations

import csv
import glob
import os
import re
import signal
import subprocess
import sys
import time

import cv2
import numpy as np
import pytest

pytest.importorskip("ale_py", reason="the Atari tests need ale-py: pip install -e '.[atari]'")

import vec_envs  # noqa: E402
from tests.xvfb import XVFB, Display, on_a_server, one_server_at_a_time  # noqa: E402

pytestmark = pytest.mark.slow  # runs console commands or scripts in processes of their own

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(REPO, "scripts", "run_atari.py")
SUMMARY = re.compile(r"^summary: steps (\d+) \| wall time [\d.]+ s \| \d+ steps/s \| episodes (\d+)"
                     r"(?: \| score mean [\d.-]+ median [\d.-]+ max ([\d.-]+))?$", re.M)
INTERRUPTED = re.compile(r"^interrupted: steps \d+ \| wall time [\d.]+ s \| \d+ steps/s \| episodes \d+", re.M)
ALE_BANNER = ("A.L.E: Arcade Learning Environment", "[Powered by Stella]")


def script_env(**overrides: str | None) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [REPO, os.environ.get("PYTHONPATH")])))
    for key, value in overrides.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def run_script(*args: str, env: dict[str, str] | None = None, cwd: str = REPO) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, SCRIPT, *args], cwd=cwd, env=env or script_env(),
                          capture_output=True, text=True, timeout=120)


def start_script(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen:
    """In a session of its own, so a Ctrl-C can go to the whole group as from a terminal."""
    return subprocess.Popen([sys.executable, SCRIPT, *args], cwd=REPO, env=env or script_env(), text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)


def ctrl_c(proc: subprocess.Popen) -> tuple[str, str]:
    os.killpg(proc.pid, signal.SIGINT)
    return proc.communicate(timeout=60)


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.strip() and not line.startswith(ALE_BANNER)]


# ------------------------------------------------------------------ normal runs
def test_default_run_exits_0_and_prints_the_summary():
    proc = run_script("--steps", "400")
    assert proc.returncode == 0, proc.stderr
    match = SUMMARY.search(proc.stdout)
    assert match, proc.stdout
    assert match.group(1) == "400"
    assert "ALE/Breakout-v5: 8 envs on subproc, obs (84, 84, 4)" in proc.stdout
    assert "step/s" in proc.stderr  # the live progress bar
    assert "Traceback" not in proc.stderr
    assert (proc.stdout + proc.stderr).count("A.L.E: Arcade Learning Environment") <= 1  # not once per worker


def test_summary_scores_are_the_real_game_scores(tmp_path):
    proc = run_script("--env-id", "SpaceInvaders", "--backend", "dummy", "--num-envs", "2", "--steps", "1600",
                      "--seed", "3", "--monitor-dir", str(tmp_path))  # aliens are worth 5..30 points
    assert proc.returncode == 0, proc.stderr
    match = SUMMARY.search(proc.stdout)
    assert match, proc.stdout
    assert match.group(3) is not None, proc.stdout
    scores = []
    for path in sorted(glob.glob(str(tmp_path / "*.monitor.csv"))):
        with open(path) as f:
            f.readline()
            scores += [float(row["r"]) for row in csv.DictReader(f)]
    assert sorted(os.listdir(tmp_path)) == ["0.monitor.csv", "1.monitor.csv"]
    assert int(match.group(2)) == len(scores) > 0  # episodes = real games (not lives)
    assert float(match.group(3)) == max(scores) > 30  # not clipped rewards
    assert "episodes=" in proc.stderr


def read_video(path: str) -> list[np.ndarray]:
    import imageio.v2 as imageio

    with imageio.get_reader(path, format="FFMPEG") as reader:
        return [frame for frame in reader]


def test_video_writes_playable_mp4_clips(tmp_path):
    pytest.importorskip("imageio_ffmpeg")
    videos = tmp_path / "videos"
    proc = run_script("--backend", "dummy", "--num-envs", "2", "--steps", "80", "--video", str(videos),
                      "--video-length", "20", "--video-interval", "30")
    assert proc.returncode == 0, proc.stderr
    clips = sorted(glob.glob(str(videos / "*.mp4")))
    assert len(clips) == 2, clips  # batch steps 0-19 and 30-49 of 40
    for clip in clips:
        frames = read_video(clip)
        assert len(frames) > 0
        assert frames[0].shape[:2] == (420, 160)  # 2 envs tiled 2 x 1, each 210 x 160
        assert frames[-1].mean() > 5  # game frames, not black


# ------------------------------------------------------------------ --render
BREAKOUT_H, BREAKOUT_W = 210, 160


def breakout_walls() -> np.ndarray:
    """Rows 16..56 of a Breakout frame: the top and side walls, the same in every game state."""
    from vec_envs.wrappers.atari import make_atari

    env = make_atari("Breakout")
    frame, _ = env.reset(seed=0)
    env.close()
    return frame[16:57]


def tiles_on_screen(screen: np.ndarray, walls: np.ndarray) -> list[tuple[int, int]]:
    """Top-left corners (x, y) of every place the Breakout walls appear pixel for pixel
    (only the wall pixels are compared: the ball may fly between them)."""
    mask = np.repeat((walls.max(axis=2) > 0)[:, :, None], 3, axis=2).astype(np.uint8)
    scores = cv2.matchTemplate(screen, walls, cv2.TM_SQDIFF, mask=mask)
    ys, xs = np.nonzero(scores == 0)
    return sorted((int(x), int(y) - 16) for x, y in zip(xs, ys))


def render_on(display: Display, walls: np.ndarray) -> tuple[list[tuple[int, int]], np.ndarray, int, str, str]:
    """Run the script with ``--render`` on ``display`` until the 3 tiles are on its screen (60 s at
    most), then Ctrl-C: the tiles found, the last screenshot, the exit status, stdout, stderr
    (the script's own exit status and output where it ended before the Ctrl-C)."""
    proc = start_script("--backend", "dummy", "--num-envs", "3", "--steps", "1000000", "--render",
                        env=script_env(DISPLAY=display.name))
    try:
        assert "3 envs on dummy" in proc.stdout.readline()
        tiles: list[tuple[int, int]] = []
        screen = display.screenshot()
        deadline = time.monotonic() + 60
        while len(tiles) < 3 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)  # until the window is up and drawn
            screen = display.screenshot()
            tiles = tiles_on_screen(screen, walls)
        out, err = proc.communicate(timeout=60) if proc.poll() is not None else ctrl_c(proc)
    finally:
        proc.kill()
        proc.wait()
    return tiles, screen, proc.returncode, out, err


@pytest.mark.skipif(XVFB is None, reason="no Xvfb binary (apt-get install xvfb); CI installs it")
@one_server_at_a_time
def test_render_shows_one_game_tile_per_env_in_one_window():
    walls = breakout_walls()
    tiles, screen, returncode, out, err = on_a_server(lambda display: render_on(display, walls),
                                                      lambda result: result[1].any() and result[2] >= 0)
    assert returncode == 130, err
    assert INTERRUPTED.search(out), out
    assert len(tiles) == 3, tiles
    (x, y) = tiles[0]
    assert tiles == sorted([(x, y), (x + BREAKOUT_W, y), (x, y + BREAKOUT_H)])  # 2 x 2 grid, row by row
    empty_cell = screen[y + BREAKOUT_H:y + 2 * BREAKOUT_H, x + BREAKOUT_W:x + 2 * BREAKOUT_W]
    assert empty_cell.shape == (BREAKOUT_H, BREAKOUT_W, 3)
    assert not empty_cell.any()  # no 4th env


# ------------------------------------------------------------------ bad arguments
BAD_ARGUMENTS = [
    pytest.param(["--num-envs", "0"], "argument --num-envs: expected a positive int, received '0'",
                 id="num-envs-0"),
    pytest.param(["--policy", "json"], "--policy expects MODULE:CALLABLE", id="policy-without-callable"),
    pytest.param(["--in-series", "zero"], "argument --in-series: expected a positive int, received 'zero'",
                 id="in-series"),
    pytest.param(["--backend", "threads"], "argument --backend: invalid choice: 'threads'", id="backend"),
    pytest.param(["--sticky-actions", "2"], "--sticky-actions must be in [0, 1], received 2.0", id="sticky"),
]
BAD_SETUPS = [
    pytest.param(["--env-id", "Brekout"],
                 "--env-id: unknown Atari game 'Brekout' (did you mean 'Breakout'?); expected a game "
                 "name such as 'Breakout'", id="unknown-env-id"),
    pytest.param(["--video", "/dev/null/videos"], "--video '/dev/null/videos' is not a writable folder",
                 id="unwritable-video-dir"),
    pytest.param(["--monitor-dir", "/dev/null/mon"], "--monitor-dir '/dev/null/mon' is not a writable folder",
                 id="unwritable-monitor-dir"),
    pytest.param(["--policy", "no_such_module:act"], "--policy: cannot import module 'no_such_module'",
                 id="policy-not-found"),
]


@pytest.mark.parametrize("code, args, message", [pytest.param(2, *p.values, id=p.id) for p in BAD_ARGUMENTS]
                         + [pytest.param(1, *p.values, id=p.id) for p in BAD_SETUPS])
def test_bad_argument_exits_2_and_a_bad_setup_1_each_with_one_clear_line(code, args, message):
    proc = run_script(*args)
    assert proc.returncode == code
    lines = error_lines(proc.stderr)
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("run_atari.py: error: "), lines[0]
    assert message in lines[0], lines[0]
    assert not any(line.startswith(ALE_BANNER) for line in proc.stderr.splitlines())  # no env was built
    assert proc.stdout == ""


def test_unwritable_video_dir_when_not_root(tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root can write into a read-only directory")
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    proc = run_script("--video", str(locked))
    assert proc.returncode == 1
    assert "is not a writable folder" in proc.stderr


def test_render_without_display_is_one_clear_line():
    proc = run_script("--render", env=script_env(DISPLAY=None, WAYLAND_DISPLAY=None))
    assert proc.returncode == 1
    assert error_lines(proc.stderr) == [
        "run_atari.py: error: --render: render(mode='human') needs a display, but DISPLAY is not set; "
        "run under a virtual display (xvfb-run -a python scripts/run_atari.py --render) or record with "
        "--video DIR instead"]


def test_ray_backend_without_ray_is_one_clear_line(tmp_path):
    stub = tmp_path / "ray"  # an installed ray is hidden behind a package that fails to import
    stub.mkdir()
    (stub / "__init__.py").write_text("raise ImportError('No module named ray (hidden by the test)')\n")
    env = script_env(PYTHONPATH=os.pathsep.join([str(tmp_path), REPO]))
    proc = run_script("--backend", "ray", env=env)
    assert proc.returncode == 1
    lines = error_lines(proc.stderr)
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("run_atari.py: error: --backend ray: "), proc.stderr
    if hasattr(vec_envs, "RayVecEnv"):
        assert 'pip install -e ".[ray]"' in lines[0]  # the contract of RayVecEnv (docs/contract.md)
    else:
        assert "this version of vec_envs has no RayVecEnv" in lines[0]


# ------------------------------------------------------------------ --policy
def test_policy_hook_drives_the_envs(tmp_path):
    (tmp_path / "my_agent.py").write_text(
        "import numpy as np\n"
        "calls = []\n"
        "def act(obs):\n"
        "    assert obs.shape == (2, 84, 84, 4), obs.shape\n"
        "    calls.append(1)\n"
        "    if len(calls) == 10:\n"
        "        print('policy called 10 times', flush=True)\n"
        "    return np.ones(len(obs), dtype=int)\n")
    proc = run_script("--backend", "dummy", "--num-envs", "2", "--steps", "40", "--policy", "my_agent:act",
                      cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert "policy called 10 times" in proc.stdout
    assert SUMMARY.search(proc.stdout)


# ------------------------------------------------------------------ Ctrl-C
def is_running(psutil, process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def is_mp_helper(process) -> bool:
    """multiprocessing's forkserver and resource tracker: they leave when the script exits."""
    try:
        cmdline = " ".join(process.cmdline())
    except Exception:
        return False
    return "multiprocessing.forkserver" in cmdline or "multiprocessing.resource_tracker" in cmdline


def test_ctrl_c_prints_the_summary_finishes_videos_and_leaves_no_process(tmp_path):
    psutil = pytest.importorskip("psutil")
    pytest.importorskip("imageio_ffmpeg")
    videos = tmp_path / "videos"
    proc = start_script("--backend", "subproc", "--num-envs", "4", "--in-series", "2", "--steps", "100000000",
                        "--video", str(videos), "--video-length", "30", "--video-interval", "30")
    try:
        assert "4 envs on subproc" in proc.stdout.readline()
        while len(glob.glob(str(videos / "*.mp4"))) < 2 and proc.poll() is None:
            time.sleep(0.1)  # until a first clip was finished and a second one started
        children = psutil.Process(proc.pid).children(recursive=True)  # workers, ffmpeg, ...
        os.killpg(proc.pid, signal.SIGINT)
        summary = ""
        while not summary.startswith("interrupted:") and proc.poll() is None:
            summary = proc.stdout.readline()
        running_at_summary = [p for p in children if is_running(psutil, p) and not is_mp_helper(p)]
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 130, err
    assert INTERRUPTED.search(summary), summary + out
    assert "Traceback" not in err, err
    assert len(children) >= 3  # 2 workers, ffmpeg (and the forkserver)
    assert running_at_summary == []  # closed by the script, not reaped at its exit
    _, alive = psutil.wait_procs(children, timeout=30)
    assert alive == []  # the multiprocessing helpers too
    clips = sorted(glob.glob(str(videos / "*.mp4")))
    assert len(clips) >= 2
    for clip in clips:  # the clip cut short by Ctrl-C too
        assert len(read_video(clip)) > 0
