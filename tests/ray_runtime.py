"""The one Ray runtime of a test session: two nodes on 127.0.0.1, one CPU each.

Started on first use (``ray_runtime()``), reused by every Ray test, stopped by the
session fixture in ``conftest.py`` (``shutdown()``), which also checks that no process
of it is left. Nothing listens beyond loopback: this Ray version keeps every server on
loopback only when ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` (else it swaps 127.0.0.1 for
the machine's address), and two nodes on one machine need ``ray.cluster_utils.Cluster``
(``ray start --address`` refuses to join under that variable).
"""
from __future__ import annotations

import importlib.util
import os
import sys
import time
from typing import Any

import psutil

__all__ = ["LOOPBACK", "ray_available", "ray_runtime", "wait_until_idle", "runtime_pids", "listening", "shutdown"]

LOOPBACK = "127.0.0.1"
LOOPBACK_ADDRESSES = {"127.0.0.1", "::ffff:127.0.0.1", "::1"}
RAY_ENV = {
    "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",  # servers bind 127.0.0.1, not every interface
    "RAY_AUTH_MODE": "disabled",  # loopback only: no token to write under ~/.ray
}
NODE_ARGS = {"num_cpus": 1, "node_ip_address": LOOPBACK, "object_store_memory": 100 * 1024 * 1024}
EXIT_TIMEOUT_S = 15.0
IDLE_TIMEOUT_S = 15.0

_state: dict[str, Any] = {}


def ray_available() -> bool:
    """Ray is installed (checked without importing it)."""
    return importlib.util.find_spec("ray") is not None


def _loopback_only_environment() -> None:
    os.environ.update(RAY_ENV)
    constants = sys.modules.get("ray._private.ray_constants")
    if constants is not None:  # Ray was imported already: its constant was read then
        constants.ENABLE_RAY_CLUSTER = False


def ray_runtime() -> Any:
    """The session's two-node cluster (``ray.cluster_utils.Cluster``), this process connected."""
    if "cluster" in _state:
        return _state["cluster"]
    _loopback_only_environment()
    import ray
    from ray.cluster_utils import Cluster

    me = psutil.Process()
    before = {p.pid for p in me.children()}
    head_args = {**NODE_ARGS, "include_dashboard": False,
                 "dashboard_agent_listen_port": None}  # a free port, not 52365: other runtimes may run
    cluster = Cluster(initialize_head=True, head_node_args=head_args)
    _state["cluster"] = cluster
    cluster.add_node(**NODE_ARGS)
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, log_to_driver=False)
    _state["roots"] = [p for p in me.children() if p.pid not in before]
    return cluster


def wait_until_idle() -> None:
    """Wait until every node has all its CPUs free again (actors of earlier tests are gone).

    Ray frees a killed actor's resources once its process has exited; placement decided
    before that (SPREAD is best effort) would see a busy node.
    """
    import ray

    deadline = time.monotonic() + IDLE_TIMEOUT_S
    while time.monotonic() < deadline:
        if ray.available_resources().get("CPU", 0) >= ray.cluster_resources().get("CPU", 0):
            return
        time.sleep(0.1)
    raise TimeoutError(f"Ray still busy after {IDLE_TIMEOUT_S} s: {ray.available_resources()}")


def runtime_pids() -> set[int]:
    """Every live process of the session's runtime (its servers, agents and workers)."""
    pids = set()
    for root in _state.get("roots", []):
        try:
            pids |= {root.pid} | {p.pid for p in root.children(recursive=True)}
        except psutil.NoSuchProcess:
            pass
    return pids


def listening(pids: set[int]) -> list[tuple[int, str, int]]:
    """``(pid, ip, port)`` of every listening inet socket of ``pids``."""
    return [(c.pid, c.laddr.ip, c.laddr.port) for c in psutil.net_connections(kind="inet")
            if c.status == psutil.CONN_LISTEN and c.pid in pids]


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def shutdown() -> list[int]:
    """Stop the session's runtime if it was started; the pids of its processes still alive."""
    cluster = _state.pop("cluster", None)
    if cluster is None:
        return []
    import ray

    pids = runtime_pids()
    ray.shutdown()
    cluster.shutdown()
    deadline = time.monotonic() + EXIT_TIMEOUT_S
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    return sorted(pid for pid in pids if _alive(pid))
