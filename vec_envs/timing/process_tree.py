"""CPU and memory of a process tree (a process, its workers, their children), counted one way
everywhere: the CPU seconds of every thread of every live process in the tree (Linux's
per-thread ``schedstat``, in nanoseconds; elsewhere psutil's user + sys, in clock ticks),
and the summed RSS.

Needs psutil (the ``bench`` extra): every function imports it when called.

Example:
    >>> own_tree_cpu() > 0
    True
"""
from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from vec_envs.extras import missing_extra

__all__ = ["psutil_module", "process_tree", "process_cpu", "tree_cpu", "own_tree_cpu", "machine_busy_s", "tree_rss",
           "TreeSampler", "kill_tree", "kill_leftovers"]

SAMPLE_INTERVAL_S = 0.1       # how often a TreeSampler reads the tree's memory


def psutil_module() -> Any:
    """``psutil``, or an ImportError that says which extra installs it."""
    try:
        import psutil
    except ImportError:
        raise missing_extra("bench", "counting the CPU of a process tree needs psutil") from None
    return psutil


def process_tree(root: Any) -> list[Any]:
    """``root`` (a ``psutil.Process``) and all its descendants (children, grandchildren, ...)."""
    psutil = psutil_module()
    try:
        return [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def process_cpu(proc: Any) -> float:
    """CPU seconds so far of every thread of ``proc`` (a ``psutil.Process``)."""
    try:
        return sum(int((task / "schedstat").read_text().split()[0])
                   for task in Path(f"/proc/{proc.pid}/task").iterdir()) / 1e9
    except (OSError, ValueError, IndexError):
        cpu = proc.cpu_times()
        return float(cpu.user + cpu.system)


def tree_cpu(root: Any) -> dict[int, float]:
    """CPU seconds so far of every process in the tree of ``root``, by pid."""
    psutil = psutil_module()
    times = {}
    for proc in process_tree(root):
        try:
            times[proc.pid] = process_cpu(proc)
        except psutil.Error:
            pass
    return times


def own_tree_cpu() -> float:
    """CPU seconds so far of this process and every live process under it (its workers)."""
    return sum(tree_cpu(psutil_module().Process()).values())


def machine_busy_s() -> float:
    """CPU seconds the whole machine has been busy (every process, and time stolen by a hypervisor)."""
    t = psutil_module().cpu_times()
    return sum(getattr(t, name, 0.0) for name in ("user", "nice", "system", "irq", "softirq", "steal"))


def tree_rss(procs: list[Any]) -> int:
    """Summed RSS of ``procs`` in bytes (a page shared by several processes counts in each)."""
    psutil = psutil_module()
    total = 0
    for proc in procs:
        try:
            total += proc.memory_info().rss
        except psutil.Error:
            pass
    return total


class TreeSampler(threading.Thread):
    """Samples a process tree every ``SAMPLE_INTERVAL_S``: peak summed RSS, and every process seen."""

    def __init__(self, root: Any) -> None:
        super().__init__(daemon=True)
        self.root, self.peak = root, 0
        self.seen: dict[int, Any] = {}
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.is_set():
            procs = process_tree(self.root)
            self.seen.update((p.pid, p) for p in procs[1:])
            self.peak = max(self.peak, tree_rss(procs))
            self.stopped.wait(SAMPLE_INTERVAL_S)


def kill_tree(root: Any, killed: threading.Event) -> None:
    """Kill ``root`` with everything it started (a cell past its timeout); sets ``killed``."""
    psutil = psutil_module()
    killed.set()
    for proc in process_tree(root):
        try:
            proc.kill()
        except psutil.Error:
            pass


def kill_leftovers(procs: list[Any], grace_s: float = 3.0) -> int:
    """Kill the processes of a finished cell that outlived it; returns how many."""
    psutil = psutil_module()
    alive = [p for p in procs if p.is_running()]
    _, alive = psutil.wait_procs(alive, timeout=grace_s)
    for proc in alive:
        try:
            proc.kill()
        except psutil.Error:
            pass
    return len(alive)
