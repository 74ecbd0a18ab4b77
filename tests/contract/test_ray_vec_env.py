"""RayVecEnv on a real Ray runtime: same results as DummyVecEnv, failures named, loopback only.

Every test here shares the session's two-node runtime of ``tests/ray_runtime.py``; the
contract suite runs on RayVecEnv through ``tests/backends.py``.
"""
from __future__ import annotations

import functools
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import gymnasium as gym
import numpy as np
import pytest

from tests import ray_runtime
from tests.backends import uses_ray_runtime
from tests.envs import DictObsEnv, SeededEnv
from tests.helpers import (
    alive,
    assert_same,
    check_hang_times_out_and_close_works,
    fns_with,
    run_trace,
    step_until_error,
)
from vec_envs import DummyVecEnv, RayVecEnv
from vec_envs.errors import ClosedEnvironmentError, EnvTimeoutError, EnvWorkerError
from vec_envs.ray import ray_vec_env
from vec_envs.ray.ray_vec_env import connect_ray, default_cpus_per_worker

pytestmark = [
    pytest.mark.slow,  # starts Ray or compares every backend over many steps
    pytest.mark.skipif(not ray_runtime.ray_available(), reason="ray is not installed"),
    uses_ray_runtime,
]

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SECONDS = 15  # an error must arrive well within this (actor start-up included)


@pytest.fixture
def cluster():
    return ray_runtime.ray_runtime()


def actor_places(venv):
    """``[(node id, pid)]`` of the venv's actors, in worker order."""
    import ray

    return ray.get([worker.actor.where.remote() for worker in venv.workers])


def wait_gone(pids, seconds=SECONDS):
    deadline = time.monotonic() + seconds
    while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return [pid for pid in pids if alive(pid)]


# ------------------------------------------------------------------ no runtime needed
def test_importing_vec_envs_does_not_import_ray():
    code = "import sys, vec_envs; print(vec_envs.RayVecEnv.__name__, 'ray' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["RayVecEnv", "False"]


def test_without_ray_the_constructor_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now raises ImportError
    with pytest.raises(ImportError, match=r'pip install -e "\.\[ray\]"'):
        RayVecEnv([SeededEnv])


@pytest.mark.parametrize("kwargs,match", [
    ({"scheduling": "round-robin"}, r"scheduling must be one of \('spread', 'pack'\), received 'round-robin'"),
    ({"num_cpus_per_worker": -1}, r"num_cpus_per_worker must be a number >= 0 or None, received -1"),
], ids=["scheduling", "num_cpus"])
def test_bad_arguments_are_clear_errors_before_ray_starts(kwargs, match):
    with pytest.raises(ValueError, match=match):
        RayVecEnv([SeededEnv], **kwargs)


def test_default_cpus_ask_one_cpu_for_the_whole_venv():
    for workers in (1, 2, 3, 7, 64):
        share = default_cpus_per_worker(workers)
        assert 0 < share <= 1 / workers
        assert workers * share > 0.99


# ---------------------------------------------------------------- against DummyVecEnv


@pytest.mark.parametrize("in_series", [2, "auto"])
def test_cartpole_300_steps_identical_to_dummy(cluster, in_series):
    fns = [lambda: gym.make("CartPole-v1")] * 5
    actions = np.random.default_rng(0).integers(0, 2, (300, 5))
    venv = RayVecEnv(fns, in_series=in_series)
    assert venv.in_series == (2 if in_series == 2 else 3)  # "auto": one actor per cluster CPU
    trace = run_trace(venv, actions)
    assert_same(run_trace(DummyVecEnv(fns), actions), trace)
    assert sum(len(terminal) for *_, terminal in trace[1:]) > 20  # many auto-resets compared


def test_dict_observations_300_steps_identical_to_dummy(cluster):
    fns = [functools.partial(DictObsEnv, length=3 + i) for i in range(3)]
    actions = np.random.default_rng(1).uniform(-1, 1, (300, 3, 2)).astype(np.float32)
    trace = run_trace(RayVecEnv(fns, in_series=2), actions)
    assert_same(run_trace(DummyVecEnv(fns), actions), trace)


def test_replies_from_the_object_store_come_back_writable(cluster):
    with RayVecEnv([functools.partial(SeededEnv, length=2)] * 2, in_series=1, copy=False) as venv:
        venv.reset()
        venv.step([0, 0])
        obs, rewards, _, infos = venv.step([0, 0])
        terminal = infos[0]["terminal_observation"]
        single = venv.reset_single_env(1)
        for array in (obs, rewards, terminal, single):
            assert array.flags.writeable
        obs[:] = 0  # a view of the VecEnv's own buffer, not of Ray's object store


# --------------------------------------------------------------------------- failures
def test_env_exception_in_step_names_env_worker_method_and_traceback(cluster):
    with RayVecEnv(fns_with("step"), in_series=2) as venv:
        venv.reset()
        err = step_until_error(venv, SECONDS)
    assert isinstance(err, EnvWorkerError)
    assert (err.env_index, err.worker_index, err.method) == (2, 1, "step")
    assert "FaultyEnv fails in step" in err.remote_traceback
    assert "Traceback (most recent call last)" in err.remote_traceback
    assert err.remote_traceback in str(err)
    assert str(err).startswith("env 2 (worker 1) raised in step()")


def test_exception_in_reset_and_in_constructor(cluster):
    with RayVecEnv(fns_with("reset"), in_series=2) as venv:
        with pytest.raises(EnvWorkerError, match="fails in reset") as info:
            venv.reset()
        assert (info.value.env_index, info.value.worker_index, info.value.method) == (2, 1, "reset")
    with pytest.raises(EnvWorkerError, match="refuses to be built") as info:
        RayVecEnv(fns_with("init", at=3), in_series=2)
    assert (info.value.env_index, info.value.worker_index, info.value.method) == (3, 1, "__init__")


def test_factory_the_actor_cannot_unpickle_is_reported(cluster, tmp_path, monkeypatch):
    (tmp_path / "driver_only_envs.py").write_text("from tests.envs import SeededEnv\n\n\n"
                                                  "def make_env():\n    return SeededEnv()\n")
    monkeypatch.syspath_prepend(str(tmp_path))  # on the driver's path only, not the actors'
    from driver_only_envs import make_env

    with pytest.raises(EnvWorkerError, match="No module named 'driver_only_envs'") as info:
        RayVecEnv([SeededEnv, make_env], in_series=1)
    assert (info.value.worker_index, info.value.method) == (1, "__init__")


def test_actor_killed_mid_run_names_its_envs(cluster):
    with RayVecEnv([SeededEnv] * 4, in_series=2) as venv:
        venv.reset()
        venv.step(np.zeros(4, np.int64))
        _, pid = actor_places(venv)[1]
        os.kill(pid, signal.SIGKILL)
        err = step_until_error(venv, SECONDS)
    assert isinstance(err, EnvWorkerError)
    assert (err.worker_index, err.env_index, err.method) == (1, 2, "step")
    assert str(err).startswith("worker 1 (envs 2..3) died (ActorDiedError")
    assert str(err).endswith("during step()")


def test_hang_past_timeout_names_the_busy_envs_and_close_still_works(cluster):
    venv = RayVecEnv(fns_with("hang"), in_series=2, timeout=1.0)
    pids = [pid for _, pid in actor_places(venv)]
    venv.reset()
    check_hang_times_out_and_close_works(venv, SECONDS, lambda: wait_gone(pids) == [])
    with pytest.raises(ClosedEnvironmentError):
        venv.reset()


def test_actors_no_node_can_host_time_out_instead_of_hanging(cluster, monkeypatch):
    monkeypatch.setattr(ray_vec_env, "ACTOR_START_TIMEOUT_S", 2.0)
    start = time.monotonic()
    with pytest.raises(EnvTimeoutError, match=r"envs \[0\] \(workers \[0\]\) did not answer within 2.0 s"):
        RayVecEnv([SeededEnv], resources_per_worker={"no_such_resource": 1}, timeout=1.0)
    assert time.monotonic() - start < SECONDS


def test_restart_policy_rebuilds_the_actor_and_flags_its_envs(cluster):
    venv = RayVecEnv(fns_with("kill", after=3), in_series=2, on_error="restart", max_restarts=1)
    with venv:
        venv.reset()
        first_pid = actor_places(venv)[1][1]
        flagged = []
        for _ in range(4):
            obs, rewards, dones, infos = venv.step(np.zeros(4, np.int64))
            flagged.append([bool(info.get("env_restarted")) for info in infos])
        assert flagged == [[False] * 4] * 3 + [[False, False, True, True]]
        assert dones[2:].all()
        assert not dones[:2].any()
        assert (rewards[2:] == 0).all()
        assert "died (ActorDiedError" in infos[2]["error"]
        assert actor_places(venv)[1][1] != first_pid
        assert venv.restarts == 1
        assert np.abs(obs[2]).max() <= 1  # a fresh first observation
        with pytest.raises(EnvWorkerError, match=r"max_restarts=1 reached"):
            for _ in range(10):
                venv.step(np.zeros(4, np.int64))


# ---------------------------------------------------------------- runtime and cluster
def test_actors_spread_over_both_nodes_and_match_dummy(cluster):
    import ray

    nodes = {node["NodeID"] for node in ray.nodes() if node["Alive"]}
    assert len(nodes) == 2
    fns = [functools.partial(SeededEnv, length=3 + i) for i in range(4)]
    actions = np.random.default_rng(2).integers(0, 3, (30, 4))
    ray_runtime.wait_until_idle()  # a node still freeing earlier actors would look full
    venv = RayVecEnv(fns, in_series=1, scheduling="spread")
    places = actor_places(venv)
    assert {node for node, _ in places} == nodes, places
    assert_same(run_trace(DummyVecEnv(fns), actions), run_trace(venv, actions))


def test_pack_keeps_actors_on_the_drivers_node(cluster):
    import ray

    ray_runtime.wait_until_idle()
    with RayVecEnv([SeededEnv] * 2, in_series=1, scheduling="pack") as venv:
        places = actor_places(venv)
    assert {node for node, _ in places} == {ray.get_runtime_context().get_node_id()}


def test_every_ray_process_listens_on_loopback_only(cluster):
    with RayVecEnv([SeededEnv] * 2, in_series=1) as venv:
        actor_pids = {pid for _, pid in actor_places(venv)}
        pids = ray_runtime.runtime_pids()
        assert actor_pids <= pids
        sockets = ray_runtime.listening(pids | {os.getpid()})
    assert len({pid for pid, _, _ in sockets}) >= 4  # gcs, raylets, agents, workers
    assert [s for s in sockets if s[1] not in ray_runtime.LOOPBACK_ADDRESSES] == []


def test_close_keeps_the_runtime_it_joined(cluster):
    import ray

    with RayVecEnv([SeededEnv], address="auto") as venv:
        assert venv.started_ray is False
        venv.reset()
    assert ray.is_initialized()
    assert connect_ray(None) is False


STARTS_ITS_OWN = textwrap.dedent("""
    import json, sys, psutil, ray
    from vec_envs import RayVecEnv
    from tests.envs import SeededEnv
    first = RayVecEnv([SeededEnv] * 2, in_series=2)
    first.reset(); first.close()
    second = RayVecEnv([SeededEnv] * 2, in_series=2)
    pids = [p.pid for p in psutil.Process().children(recursive=True)]
    print(json.dumps([first.started_ray, second.started_ray, ray.is_initialized(), pids]))
    second.close()
""")


def test_a_runtime_it_started_is_kept_for_reuse_until_the_process_exits():
    env = {**os.environ, **ray_runtime.RAY_ENV}
    out = subprocess.run([sys.executable, "-c", STARTS_ITS_OWN], cwd=REPO, env=env, capture_output=True,
                         text=True, timeout=90)
    assert out.returncode == 0, out.stderr[-3000:]
    started_first, started_second, initialized, pids = json.loads(out.stdout.splitlines()[-1])
    assert (started_first, started_second, initialized) == (True, False, True)
    assert len(pids) >= 3
    assert wait_gone(pids) == []
