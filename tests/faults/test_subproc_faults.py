"""SubprocVecEnv's failure model: errors name the env, nothing hangs, nothing leaks."""
from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import psutil
import pytest

from tests.envs import BadShapeEnv, SeededEnv
from tests.helpers import alive, check_hang_times_out_and_close_works, fns_with, step_until_error
from vec_envs import SubprocVecEnv
from vec_envs.errors import ClosedEnvironmentError, EnvTimeoutError, EnvWorkerError

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SECONDS = 10  # an error must arrive well within this


@pytest.mark.parametrize("fault,method", [("step", "step"), ("render", "render")])
def test_env_exception_names_env_worker_method_and_traceback(fault, method):
    with SubprocVecEnv(fns_with(fault), in_series=2) as venv:
        venv.reset()
        if fault == "render":
            with pytest.raises(EnvWorkerError) as info:
                venv.get_images()
            err = info.value
        else:
            err = step_until_error(venv, SECONDS)
        assert (err.env_index, err.worker_index, err.method) == (2, 1, method)
        assert f"FaultyEnv fails in {fault}" in err.remote_traceback
        assert "Traceback (most recent call last)" in err.remote_traceback
        assert err.remote_traceback in str(err)
        assert str(err).startswith(f"env 2 (worker 1) raised in {method}()")


def test_exception_in_reset_and_in_constructor():
    with SubprocVecEnv(fns_with("reset"), in_series=2) as venv:
        with pytest.raises(EnvWorkerError, match="fails in reset") as info:
            venv.reset()
        assert (info.value.env_index, info.value.method) == (2, "reset")
    start = time.monotonic()
    with pytest.raises(EnvWorkerError, match="refuses to be built") as info:
        SubprocVecEnv(fns_with("init", at=3), in_series=2)
    assert (info.value.env_index, info.value.worker_index, info.value.method) == (3, 1, "__init__")
    assert time.monotonic() - start < SECONDS


def test_exception_in_env_method_and_close():
    venv = SubprocVecEnv(fns_with("close"), in_series=2)
    pids = [w.process.pid for w in venv.workers]
    with pytest.raises(EnvWorkerError, match="has no attribute 'nope'") as info:
        venv.env_method("nope", indices=[1])
    assert (info.value.env_index, info.value.method) == (1, "nope")
    with pytest.raises(EnvWorkerError, match="fails in close") as info:
        venv.close()
    assert info.value.env_index == 2
    assert not any(alive(pid) for pid in pids)
    with pytest.raises(ClosedEnvironmentError):
        venv.reset()


@pytest.mark.parametrize("fault,how", [("kill", "was killed by signal SIGKILL"), ("exit", "exited with code 7")])
def test_worker_death_mid_step_is_noticed_at_once(fault, how):
    with SubprocVecEnv(fns_with(fault), in_series=2) as venv:
        venv.reset()
        err = step_until_error(venv, SECONDS)
        assert isinstance(err, EnvWorkerError)
        assert (err.worker_index, err.env_index, err.method) == (1, 2, "step")
        assert f"env 2 (worker 1, envs 2..3) {how} during step()" in str(err)


def test_hang_past_timeout_names_the_busy_envs_and_close_still_works():
    venv = SubprocVecEnv(fns_with("hang"), in_series=2, timeout=1.0)
    pids = [w.process.pid for w in venv.workers]
    venv.reset()
    check_hang_times_out_and_close_works(venv, SECONDS, lambda: not any(alive(pid) for pid in pids))


def test_wrong_shape_observation_names_both_shapes():
    with SubprocVecEnv([SeededEnv, functools.partial(BadShapeEnv, after=3)], in_series=1) as venv:
        venv.reset()
        err = step_until_error(venv, SECONDS)
        assert (err.env_index, err.worker_index, err.method) == (1, 1, "step")
        assert "has shape (2,), but the observation space" in str(err)
        assert "expects shape (3,)" in str(err)


def test_restart_policy_rebuilds_the_worker_and_flags_its_envs():
    venv = SubprocVecEnv(fns_with("kill", after=3), in_series=2, on_error="restart", max_restarts=2)
    with venv:
        venv.reset()
        first_pid = venv.workers[1].process.pid
        flagged = []
        for _ in range(4):
            obs, rewards, dones, infos = venv.step(np.zeros(4, np.int64))
            flagged.append([bool(info.get("env_restarted")) for info in infos])
        assert flagged[:3] == [[False] * 4] * 3
        assert flagged[3] == [False, False, True, True]
        assert dones[2:].all()
        assert not dones[:2].any()
        assert (rewards[2:] == 0).all()
        assert "killed by signal SIGKILL" in infos[2]["error"]
        assert venv.workers[1].process.pid != first_pid
        assert venv.restarts == 1
        assert obs.shape == (4, 3)
        assert np.abs(obs[2]).max() <= 1  # a fresh first observation
        for _ in range(3):
            venv.step(np.zeros(4, np.int64))  # the restarted env fails again after 3 steps
        with pytest.raises(EnvWorkerError, match=r"max_restarts=2 reached"):
            for _ in range(10):
                venv.step(np.zeros(4, np.int64))


PARENT_SCRIPT = textwrap.dedent("""
    import sys, time, numpy as np
    from vec_envs import SubprocVecEnv
    from tests.envs import SeededEnv
    venv = SubprocVecEnv([SeededEnv] * 4, in_series=2, context=sys.argv[1])
    venv.reset()
    try:
        print(" ".join(str(w.process.pid) for w in venv.workers), flush=True)
        while True:
            venv.step(np.zeros(4, np.int64))
            time.sleep(0.01)
    except KeyboardInterrupt:
        venv.close()
        print("interrupted cleanly", flush=True)
""")


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT], ids=lambda s: s.name)
@pytest.mark.parametrize("context", ["forkserver", pytest.param("spawn", marks=pytest.mark.slow), "fork"])
def test_parent_killed_leaves_no_worker_alive(sig, context):
    parent = subprocess.Popen([sys.executable, "-c", PARENT_SCRIPT, context], cwd=REPO, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        workers = [int(pid) for pid in parent.stdout.readline().split()]
        assert len(workers) == 2, parent.stderr.read()
        if sig == signal.SIGINT:
            os.killpg(parent.pid, sig)  # Ctrl-C reaches the whole process group
        else:
            parent.send_signal(sig)
        parent.wait(timeout=SECONDS)
        deadline = time.monotonic() + SECONDS
        while any(alive(pid) for pid in workers) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(alive(pid) for pid in workers)
        if sig == signal.SIGINT:
            out, err = parent.communicate()
            assert out.strip() == "interrupted cleanly", err
            assert parent.returncode == 0, err
            assert err.count("KeyboardInterrupt") == 0
    finally:
        if parent.poll() is None:
            parent.kill()


def shm_entries():
    return set(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else set()


def test_create_step_close_cycles_leak_nothing():
    me = psutil.Process()

    def cycle(crash):
        venv = SubprocVecEnv(fns_with("kill" if crash else "step", after=3 if crash else 10**6), in_series=2)
        venv.reset()
        try:
            for _ in range(5):
                venv.step(np.zeros(4, np.int64))
        except EnvWorkerError:
            assert crash
        venv.close()

    cycle(False)  # the forkserver process starts once and stays
    before = (open_fds(), len(me.children(recursive=True)), shm_entries())
    for i in range(20):
        cycle(crash=i % 4 == 0)
    time.sleep(0.2)
    after = (open_fds(), len(me.children(recursive=True)), shm_entries())
    assert set(after[0].items()) <= set(before[0].items()), f"new fds: {set(after[0].items()) - set(before[0].items())}"
    assert after[1] == before[1]
    assert after[2] <= before[2]


def open_fds():
    fds = {}
    for fd in os.listdir("/proc/self/fd"):
        try:
            fds[fd] = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            pass  # the descriptor listdir itself used
    return fds


class UnpicklableInfoEnv(SeededEnv):
    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        return obs, reward, terminated, truncated, {"callback": lambda: None}


def test_result_that_cannot_be_pickled_is_a_clear_error_not_a_dead_worker():
    with SubprocVecEnv([SeededEnv, UnpicklableInfoEnv], in_series=1) as venv:
        venv.reset()
        with pytest.raises(EnvWorkerError, match=r"the info env 1 returned from step\(\) cannot be pickled") as info:
            venv.step([0, 0])
        assert info.value.worker_index == 1
        assert "pickle" in str(info.value).lower()
        assert all(w.process.is_alive() for w in venv.workers)


# The lane path: one worker process plus the parent's own slice; steps are requested in
# the env lanes of shared memory instead of pipe messages.
@pytest.mark.parametrize("fault,how", [("kill", "was killed by signal SIGKILL"), ("step", "raised in step()")])
def test_lane_step_failures_are_reported(fault, how):
    venv = SubprocVecEnv(fns_with(fault, at=1), in_series=2, step_in_parent=True)
    assert type(venv.scheduler).__name__ == "LaneScheduler"  # the path under test
    with venv:
        venv.reset()
        err = step_until_error(venv, SECONDS)
        assert isinstance(err, EnvWorkerError)
        assert err.worker_index == 0
        assert how in str(err)


def test_lane_step_hang_times_out_and_restart_recovers():
    venv = SubprocVecEnv(fns_with("hang", at=1), in_series=2, step_in_parent=False, timeout=1.0)
    assert type(venv.scheduler).__name__ == "LaneScheduler"  # the path under test
    venv.reset()
    err = step_until_error(venv, SECONDS)
    assert isinstance(err, EnvTimeoutError)
    assert err.env_indices == [0, 1]
    venv.close()
    venv = SubprocVecEnv(fns_with("kill", at=1, after=3), in_series=2, step_in_parent=True, on_error="restart")
    with venv:
        venv.reset()
        restarted = []
        for _ in range(8):
            obs, rewards, dones, infos = venv.step(np.zeros(4, np.int64))
            restarted.append(bool(infos[1].get("env_restarted")))
        assert restarted[3]
        assert sum(restarted) == 2
        assert venv.restarts == 2
        assert type(venv.scheduler).__name__ == "LaneScheduler"  # the path under test


def test_lane_step_results_equal_dummy():
    from vec_envs import DummyVecEnv

    fns = [functools.partial(SeededEnv, length=3 + i) for i in range(6)]
    actions = np.random.default_rng(5).integers(0, 3, (300, 6))
    with SubprocVecEnv(fns, in_series=3, step_in_parent=True) as venv, DummyVecEnv(fns) as ref:
        assert type(venv.scheduler).__name__ == "LaneScheduler"  # the path under test
        venv.seed(9), ref.seed(9)
        np.testing.assert_array_equal(venv.reset(), ref.reset())
        for a in actions:
            obs, rew, done, infos = venv.step(a)
            obs_r, rew_r, done_r, infos_r = ref.step(a)
            np.testing.assert_array_equal(obs, obs_r)
            np.testing.assert_array_equal(rew, rew_r)
            np.testing.assert_array_equal(done, done_r)
            assert [set(i) for i in infos] == [set(i) for i in infos_r]


def test_a_worker_asleep_past_its_spin_budget_is_woken_through_the_pipe():
    from vec_envs import DummyVecEnv

    fns = [functools.partial(SeededEnv, length=4 + i) for i in range(4)]
    actions = np.random.default_rng(2).integers(0, 3, (12, 4))
    with SubprocVecEnv(fns, in_series=2, step_in_parent=True) as venv, DummyVecEnv(fns) as ref:
        worker = venv.workers[0]
        venv.seed(4), ref.seed(4)
        np.testing.assert_array_equal(venv.reset(), ref.reset())
        for k, a in enumerate(actions):
            if k % 2:
                deadline = time.monotonic() + 5.0   # far past the 2 ms spin budget: it sleeps
                while not venv.scheduler.lanes.sleeping(worker.index) and time.monotonic() < deadline:
                    time.sleep(0.01)
                assert venv.scheduler.lanes.sleeping(worker.index)
            obs, rew, done, infos = venv.step(a)      # a WAKE through the pipe when asleep
            obs_r, rew_r, done_r, infos_r = ref.step(a)
            np.testing.assert_array_equal(obs, obs_r)
            np.testing.assert_array_equal(rew, rew_r)
            np.testing.assert_array_equal(done, done_r)


def test_a_worker_replaced_at_a_reset_after_a_ctrl_c_is_watched_for_its_death():
    """The reset after a Ctrl-C replaces the worker a hanging env kept busy; recv/send then
    watches the replacement: killed, it is named at once, not taken for the old one."""
    import threading

    from tests.envs import FaultyEnv

    fns = [functools.partial(FaultyEnv, "hang", after=4), functools.partial(SeededEnv, length=1000)]
    with SubprocVecEnv(fns, in_series=1, batch_size=1) as venv:
        venv.reset()
        threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT)).start()
        with pytest.raises(KeyboardInterrupt):
            for _ in range(5):  # env 0 hangs at its fifth step
                venv.step(np.zeros(2, np.int64))
        venv.reset()  # the busy worker is killed and replaced
        venv.async_reset()
        sent, deadline = 0, time.monotonic() + SECONDS
        while sent < 5:  # env 0 hangs again at its fifth step, env 1 goes on (maybe many times first)
            assert time.monotonic() < deadline, f"env 0 was sent {sent} steps"
            *_, env_ids = venv.recv(timeout=5.0)
            venv.send(np.zeros(len(env_ids), np.int64), env_ids)
            sent += int(0 in env_ids)
        deadline = time.monotonic() + SECONDS
        while venv.workers[0].running_env() != 0 and time.monotonic() < deadline:
            time.sleep(0.01)  # (a loaded machine: its worker may not have begun the step it hangs in)
        os.kill(venv.workers[0].process.pid, signal.SIGKILL)
        deadline = time.monotonic() + SECONDS
        with pytest.raises(EnvWorkerError, match=r"env 0 \(worker 0\).*was killed by signal SIGKILL"):
            while time.monotonic() < deadline:
                *_, env_ids = venv.recv(timeout=5.0)
                venv.send(np.zeros(len(env_ids), np.int64), env_ids)


@pytest.mark.parametrize("shared_memory", [True, False])
@pytest.mark.parametrize("mode", ["same_step", "next_step"])
def test_a_worker_found_dead_by_a_reset_is_replaced_with_that_resets_seeds(shared_memory, mode):
    """A worker that died between calls is found by the next reset(): its replacement's envs
    are reset with that reset's seeds, so every row is the seeded reset and the steps after
    it match the same envs stepped alone."""
    from vec_envs import DummyVecEnv

    fns = [functools.partial(SeededEnv, length=1000)] * 4
    with SubprocVecEnv(fns, in_series=2, shared_memory=shared_memory, on_error="restart",
                       autoreset_mode=mode) as venv, DummyVecEnv(fns, autoreset_mode=mode) as ref:
        venv.reset()
        venv.workers[1].process.kill()
        venv.workers[1].process.join(SECONDS)
        venv.seed(7)
        ref.seed(7)
        np.testing.assert_array_equal(venv.reset(), ref.reset())
        assert venv.restarts == 1
        for _ in range(3):
            actions = np.array([0, 1, 2, 1])
            obs, rewards, dones, _ = venv.step(actions)
            obs_r, rewards_r, dones_r, _ = ref.step(actions)
            np.testing.assert_array_equal(obs, obs_r)
            np.testing.assert_array_equal(rewards, rewards_r)
            np.testing.assert_array_equal(dones, dones_r)


_ARMED: list[int] = []  # the parent's next read of an InterruptingInfo raises KeyboardInterrupt


def _interrupt_once() -> None:
    if _ARMED:
        _ARMED.pop()
        raise KeyboardInterrupt


class InterruptingInfo:
    """An info value whose unpickling (in the parent) is a Ctrl-C there, once armed."""

    def __reduce__(self):
        return _interrupt_once, ()


class InterruptingInfoEnv(SeededEnv):
    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        return obs, reward, terminated, truncated, {**info, "ctrl_c": InterruptingInfo()}


def test_a_ctrl_c_while_the_parent_reads_a_step_leaves_no_shared_memory_open_after_close():
    """A Ctrl-C while the parent reads what an env said: after reset() and close(), the
    shared memory's descriptor is closed at once, not at some later garbage collection."""
    import gc

    SubprocVecEnv([SeededEnv]).close()  # multiprocessing's helpers, which outlive every VecEnv
    before = psutil.Process().num_fds()
    gc.disable()
    try:
        venv = SubprocVecEnv([InterruptingInfoEnv] * 2, in_series=1, shared_memory=True)
        venv.reset()
        _ARMED.append(1)
        with pytest.raises(KeyboardInterrupt):
            venv.step(np.zeros(2, np.int64))
        venv.reset()
        venv.close()
        del venv
        deadline = time.monotonic() + SECONDS
        while psutil.Process().num_fds() > before and time.monotonic() < deadline:
            time.sleep(0.05)  # closed workers' pipes closing
        assert psutil.Process().num_fds() == before
    finally:
        _ARMED.clear()
        gc.enable()
