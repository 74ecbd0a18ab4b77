"""The probes of ``scripts/probes/`` run as a user runs them and print their tables.

Nothing here is timed: the numbers only have to be numbers. The probes start together
(each in its own process) and are awaited by the tests that read them.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # times, probes or plots the benchmark

REPO = Path(__file__).resolve().parents[2]
PROBES = REPO / "scripts" / "probes"
NUMBER = r"-?\d[\d,]*(\.\d+)?"
STEP_PATH_CELLS = ("step(), empty infos", "step(), info every step", "recv() + send(), empty infos",
                   "recv() + send(), info every step")
RUNS = {  # name -> (the probe's file, its options, extra environment)
    "step_path": ("step_path.py", ["--num-envs", "4", "--warmup", "40", "--list-functions"], {}),
    "agent_pause": ("agent_pause.py", ["--pause-ms", "0", "2", "--steps", "5", "--num-envs", "2"], {}),
    "slice_loop": ("slice_loop.py", ["--env", "zero", "--num-envs", "3", "--rounds", "2", "--steps", "5"], {}),
    "slice_loop_python": ("slice_loop.py", ["--env", "cartpole", "--num-envs", "2", "--rounds", "2", "--steps", "5"],
                          {"VEC_ENVS_KERNELS": "0"}),
    "wake_penalty": ("wake_penalty.py", ["--sleeps-ms", "0,1", "--busy", "1", "--rounds", "5"], {}),
    "multiagent_rows": ("multiagent_rows.py", ["--rounds", "1", "--steps", "3", "--num-envs", "2"], {}),
}


@pytest.fixture(scope="module")
def probe() -> Iterator[Callable[[str], subprocess.CompletedProcess[str]]]:
    """Start every probe at once; ``probe(name)`` waits for one."""
    procs = {name: subprocess.Popen([sys.executable, str(PROBES / script), *args], stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True, env={**os.environ, **extra}, cwd=REPO,
                                    start_new_session=True)  # a probe left unread is ended with all it started
             for name, (script, args, extra) in RUNS.items()}
    done: dict[str, subprocess.CompletedProcess[str]] = {}

    def result(name: str) -> subprocess.CompletedProcess[str]:
        if name not in done:
            out, err = procs[name].communicate(timeout=200)
            done[name] = subprocess.CompletedProcess(procs[name].args, procs[name].returncode, out, err)
        return done[name]

    yield result
    for proc in procs.values():
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()


@pytest.mark.timeout(240)
def test_step_path_counts_the_files_and_functions_of_each_call(probe):
    done = probe("step_path")
    assert done.returncode == 0, done.stderr
    rows = {line.split(" | ")[0].lstrip("| "): line for line in done.stdout.splitlines() if line.startswith("| ")}
    assert set(rows) >= set(STEP_PATH_CELLS)
    for cell in STEP_PATH_CELLS:
        counts = [int(number) for number in rows[cell].strip("| ").split(" | ")[1:]]
        assert min(counts) > 0, cell  # parent and worker files and functions, each traced
    assert "vec_envs/vec_env_base.py: " in done.stdout  # the parent's step() starts in the base class
    assert "vec_envs/stepping/env_slice.py: " in done.stdout  # a worker steps its envs there


@pytest.mark.timeout(240)
@pytest.mark.parametrize("name,pattern", [
    ("agent_pause", rf"\| 2 \| {NUMBER} \| {NUMBER} \| {NUMBER} \|"),
    ("slice_loop", rf"EnvSlice's C loop.*\| plain loop \| {NUMBER} \| {NUMBER} \| \+0\.00 \|\n"
                   rf"\| EnvSlice \| {NUMBER} \| {NUMBER} \| [+-]{NUMBER} \|"),
    ("slice_loop_python", r"EnvSlice's Python loop.*\| EnvSlice \|"),
    ("wake_penalty", rf"1 processes stepping CartPole-v1 meanwhile.*\| 0 \| {NUMBER} \| 1\.00 \|\n"
                     rf"\| 1 \| {NUMBER} \| {NUMBER} \|"),
    ("multiagent_rows", rf"\| 2 Echo envs x 3 agents \(agent rows\) \| {NUMBER} \| {NUMBER} \|.*"
                        rf"\| 6 EchoSingle envs \(single-agent, as many rows\) \| {NUMBER} \| {NUMBER} \|"),
], ids=["agent_pause", "slice_loop", "slice_loop_python", "wake_penalty", "multiagent_rows"])
def test_each_probe_prints_its_table(probe, name, pattern):
    done = probe(name)
    assert done.returncode == 0, done.stderr[-3000:]
    assert re.search(pattern, done.stdout, re.S), done.stdout


def test_no_benchmark_or_probe_replaces_a_private_name():
    """They measure vec_envs as it is: switches and stats hooks, never a private name swapped."""
    scripts = [*PROBES.glob("*.py"), *(REPO / "scripts" / "bench").glob("*.py"), REPO / "scripts" / "benchmark.py"]
    for script in scripts:
        text = script.read_text(encoding="utf-8")
        assert not re.search(r"(?<!self)\._[a-z]\w*\s*=(?!=)|setattr\(|monkeypatch", text), script.name
