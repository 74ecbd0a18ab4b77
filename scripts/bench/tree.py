"""Parent side of a cell: run it in a fresh process and sample its whole process tree.

The tree (the cell, its workers, their children, a Ray runtime it started) is sampled
with psutil: CPU (user + sys over the timed window / wall; 200 % = two cores busy),
peak summed RSS, and the CPU the rest of the machine used meanwhile (noise). A cell
past its timeout is killed with everything it started; processes that outlive a cell
are killed and counted.
"""
from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
import threading
import time
from typing import Any

import psutil

from bench import SCRIPTS
from bench.harness import MARK, CellSpec

__all__ = ["run_cell_process", "machine_busy_s", "own_tree_cpu"]

RSS_INTERVAL_S = 0.1          # how often the tree's memory is sampled


def process_tree(root: psutil.Process) -> list[psutil.Process]:
    """``root`` and all its descendants (children, grandchildren, ...)."""
    try:
        return [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def tree_cpu(root: psutil.Process) -> dict[int, float]:
    """user + sys seconds of every process in the tree, by pid."""
    times = {}
    for proc in process_tree(root):
        try:
            cpu = proc.cpu_times()
            times[proc.pid] = cpu.user + cpu.system
        except psutil.Error:
            pass
    return times


def own_tree_cpu() -> float:
    """CPU seconds so far of this process and every live process under it (its workers)."""
    return sum(tree_cpu(psutil.Process()).values())


def machine_busy_s() -> float:
    """CPU seconds the whole machine has been busy (every process, and time stolen by a hypervisor)."""
    t = psutil.cpu_times()
    return sum(getattr(t, name, 0.0) for name in ("user", "nice", "system", "irq", "softirq", "steal"))


def tree_rss(procs: list[psutil.Process]) -> int:
    """Summed RSS of ``procs`` in bytes (a page shared by several processes counts in each)."""
    total = 0
    for proc in procs:
        try:
            total += proc.memory_info().rss
        except psutil.Error:
            pass
    return total


class TreeSampler(threading.Thread):
    """Samples a process tree every ``RSS_INTERVAL_S``: peak summed RSS, and every process seen."""

    def __init__(self, root: psutil.Process) -> None:
        super().__init__(daemon=True)
        self.root, self.peak = root, 0
        self.seen: dict[int, psutil.Process] = {}
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.is_set():
            procs = process_tree(self.root)
            self.seen.update((p.pid, p) for p in procs[1:])
            self.peak = max(self.peak, tree_rss(procs))
            self.stopped.wait(RSS_INTERVAL_S)


def kill_tree(root: psutil.Process, killed: threading.Event) -> None:
    """Kill a cell that ran past its timeout, with everything it started."""
    killed.set()
    for proc in process_tree(root):
        try:
            proc.kill()
        except psutil.Error:
            pass


def kill_leftovers(procs: list[psutil.Process], grace_s: float = 3.0) -> int:
    """Kill the processes of a finished cell that outlived it; returns how many."""
    alive = [p for p in procs if p.is_running()]
    _, alive = psutil.wait_procs(alive, timeout=grace_s)
    for proc in alive:
        try:
            proc.kill()
        except psutil.Error:
            pass
    return len(alive)


def cell_environ() -> dict[str, str]:
    """The cell's environment: scripts/ first on PYTHONPATH, so the cell and its workers import ``bench``."""
    env = dict(os.environ)
    paths = [str(SCRIPTS), *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))]
    env["PYTHONPATH"] = os.pathsep.join(paths)
    return env


def read_markers(proc: subprocess.Popen[str], root: psutil.Process) -> dict[str, Any]:
    """Follow the cell's marker lines; measure the tree's CPU % over its window, and the
    CPU other processes of the machine used meanwhile (``other_cpu_pct``: noise)."""
    record: dict[str, Any] = {}
    cpu0, busy0, t0 = {}, 0.0, 0.0
    assert proc.stdout is not None and proc.stdin is not None  # both are pipes (run_cell_process)
    for line in proc.stdout:
        if not line.startswith(MARK):
            continue
        kind, _, payload = line[len(MARK):].partition(" ")
        if kind == "window-start":
            cpu0, busy0, t0 = tree_cpu(root), machine_busy_s(), time.perf_counter()
        elif kind == "window-end":
            wall, cpu1, busy = time.perf_counter() - t0, tree_cpu(root), machine_busy_s() - busy0
            tree = sum(t - cpu0.get(pid, 0.0) for pid, t in cpu1.items())
            record["cpu_pct"], record["other_cpu_pct"] = 100 * tree / wall, 100 * (busy - tree) / wall
            try:
                proc.stdin.write("go\n")
                proc.stdin.flush()
            except OSError:
                pass  # the cell died; its exit code tells
        else:
            record.update(json.loads(payload))
    return record


def run_cell_process(spec: CellSpec, timeout: float) -> dict[str, Any]:
    """Run one cell in a fresh process; its result plus CPU %, peak MB, or an error."""
    cmd = [sys.executable, "-m", "bench.harness", spec.to_json()]
    with subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, env=cell_environ(), cwd=SCRIPTS) as proc:
        root, timed_out = psutil.Process(proc.pid), threading.Event()
        sampler = TreeSampler(root)
        stderr_tail: collections.deque[str] = collections.deque(maxlen=20)
        drain = threading.Thread(target=lambda: stderr_tail.extend(proc.stderr or ()), daemon=True)
        killer = threading.Timer(timeout, kill_tree, (root, timed_out))
        for thread in (sampler, drain, killer):
            thread.start()
        try:
            record = read_markers(proc, root)
            proc.wait()
        except KeyboardInterrupt:
            kill_tree(root, threading.Event())
            raise
        finally:
            killer.cancel()
            sampler.stopped.set()
            sampler.join()
            drain.join(timeout=5)
    record["peak_mb"] = sampler.peak / 2**20
    record["leftover_processes"] = kill_leftovers(list(sampler.seen.values()))
    if proc.returncode != 0 and "error" not in record:
        reason = f"timed out after {timeout:g} s" if timed_out.is_set() else "crashed"
        record["error"] = f"cell {reason} (exit code {proc.returncode}): " + "".join(stderr_tail)[-500:]
    return record
