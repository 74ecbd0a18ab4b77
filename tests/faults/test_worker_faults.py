"""Faults around the worker backends: text observations of the parent's own slice, one
caller at a time, timeouts, Ctrl-C, forked children, one deadline for close, which env a
dead worker was stepping, unpicklable infos."""
from __future__ import annotations

import functools
import math
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

from tests.backends import BACKENDS
from tests.faulty_envs import (
    OutputEnv,
    SlowCloseEnv,
    SlowStepEnv,
    TextEnv,
    UnpicklableInfoEnv,
)
from tests.helpers import children
from vec_envs import SubprocVecEnv
from vec_envs.errors import BrokenVecEnvError, ConcurrentCallError, EnvTimeoutError, EnvWorkerError

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORKER_BACKENDS = [p for p in BACKENDS if not p.id.startswith("dummy")]
SUBPROC_BACKENDS = [p for p in BACKENDS if p.id.startswith("subproc")]


# ------------------------------------------------------- text observations
@pytest.mark.parametrize("make", BACKENDS)
def test_text_observations_reach_the_caller_from_every_slice(make, closing):
    venv = closing(make([functools.partial(TextEnv, i, length=2) for i in range(4)]))
    assert list(venv.reset()) == ["e0-r", "e1-r", "e2-r", "e3-r"]
    assert list(venv.step(np.zeros(4, np.int64))[0]) == ["e0-1", "e1-1", "e2-1", "e3-1"]
    obs, _, dones, infos = venv.step(np.zeros(4, np.int64))
    assert list(obs) == ["e0-r", "e1-r", "e2-r", "e3-r"]
    assert dones.all()
    assert [info["terminal_observation"] for info in infos] == ["e0-2", "e1-2", "e2-2", "e3-2"]
    assert venv.reset_single_env(3) == "e3-r"


def test_the_default_subproc_steps_a_slice_in_the_parent():
    with SubprocVecEnv([functools.partial(TextEnv, i) for i in range(4)], in_series=2, step_in_parent=True) as venv:
        assert [w.is_local for w in venv.workers] == [False, True]
        assert list(venv.reset()) == ["e0-r", "e1-r", "e2-r", "e3-r"]


# --------------------------------------------------------- one caller
@pytest.mark.parametrize("make", BACKENDS)
def test_a_call_from_a_second_thread_is_refused_at_once(make, closing):
    venv = closing(make([functools.partial(SlowStepEnv, 0.4)] * 2))
    venv.reset()
    inside = threading.Event()
    result: dict[str, object] = {}

    def step_in_thread():
        inside.set()
        result["step"] = venv.step(np.zeros(2, np.int64))

    stepper = threading.Thread(target=step_in_thread, name="stepper")
    stepper.start()
    inside.wait()
    time.sleep(0.1)  # the stepper is inside step() now
    name = type(venv).__name__
    for call, method in [(lambda: venv.step(np.zeros(2, np.int64)), "step"), (lambda: venv.get_attr("t"), "get_attr"),
                         (venv.reset, "reset"), (venv.close, "close"), (lambda: venv.seed(1), "seed"),
                         (venv.recv, "recv"), (lambda: venv.send([0], [0]), "send"), (venv.async_reset, "async_reset")]:
        start = time.monotonic()
        with pytest.raises(ConcurrentCallError, match=rf"{name}\.{method}\(\) called from thread 'MainThread' while "
                                                      rf"thread 'stepper' is inside {name}\.step\(\); a VecEnv "
                                                      r"serves one caller at a time"):
            call()
        assert time.monotonic() - start < 0.2
    stepper.join(10)
    assert not stepper.is_alive()
    assert result["step"][1].tolist() == [1.0, 1.0]
    assert venv.step(np.zeros(2, np.int64))[1].tolist() == [1.0, 1.0]  # the protocol is intact


@pytest.mark.parametrize("make", BACKENDS)
def test_a_call_while_another_thread_calls_an_env_method_is_refused(make, closing):
    venv = closing(make([functools.partial(SlowStepEnv, 0.4)] * 2))
    venv.reset()
    caller = threading.Thread(target=venv.env_method, args=("step", 0), kwargs={"indices": [0]}, name="caller")
    caller.start()
    time.sleep(0.1)  # the caller is inside env_method() now
    name = type(venv).__name__
    with pytest.raises(ConcurrentCallError, match=rf"{name}\.step\(\) called from thread 'MainThread' while "
                                                  rf"thread 'caller' is inside {name}\.env_method\(\)"):
        venv.step(np.zeros(2, np.int64))
    caller.join(10)
    assert not caller.is_alive()


def test_many_threads_hammering_one_venv_get_clear_errors_and_no_corruption():
    venv = SubprocVecEnv([functools.partial(SlowStepEnv, 0.01)] * 4, in_series=1)
    venv.reset()
    errors: list[BaseException] = []
    steps: list[int] = []  # list.append is atomic: no count is lost between threads
    refused: list[int] = []
    together = threading.Barrier(4)  # each round, the four threads call step() at once

    def hammer():
        for _ in range(50):
            try:
                together.wait(timeout=30)
                venv.step(np.zeros(4, np.int64))  # 10 ms inside: the other three arrive meanwhile
                steps.append(1)
            except ConcurrentCallError:
                refused.append(1)
            except Exception as exc:  # anything else is the bug this test looks for
                errors.append(exc)

    threads = [threading.Thread(target=hammer) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    assert len(steps) > 0
    assert len(refused) > 0  # the guard did refuse callers (else this test hammered nothing)
    assert len(steps) + len(refused) == 4 * 50
    assert venv.step(np.zeros(4, np.int64))[1].tolist() == [1.0] * 4
    venv.close()
    assert not children(), [p.cmdline() for p in children()]


# ------------------------------------------------------------ timeouts
@pytest.mark.parametrize("make", WORKER_BACKENDS)
def test_timeout_zero_means_do_not_wait_and_bad_values_are_refused(make, closing):
    in_parent = {"step_in_parent": False} if getattr(make, "func", make).__name__ == "subproc" else {}
    venv = closing(make([functools.partial(SlowStepEnv, 0.5)] * 2, **in_parent))  # (no timeout stops the parent)
    venv.reset()
    venv.step_async(np.zeros(2, np.int64))
    start = time.monotonic()
    with pytest.raises(EnvTimeoutError, match=r"did not answer within 0.0 s"):
        venv.step_wait(timeout=0)
    assert time.monotonic() - start < 0.3
    assert venv.step_wait(timeout=None)[1].tolist() == [1.0, 1.0]
    bad_arguments = [
        ({"timeout": "5"}, TypeError, r"timeout must be a number of seconds >= 0 or None \(no limit\), received '5'"),
        ({"timeout": -1}, ValueError, r"timeout must be .*, received -1"),
        ({"timeout": math.nan}, ValueError, r"timeout must be .*, received nan"),
        ({"max_restarts": -1}, ValueError, r"max_restarts must be an int >= 0, received -1"),
        ({"max_restarts": "x"}, ValueError, r"max_restarts must be an int >= 0, received 'x'"),
    ]
    for kwargs, error, message in bad_arguments:
        with pytest.raises(error, match=message):
            make([OutputEnv] * 2, **kwargs)


# ------------------------------------------------------------- Ctrl-C
class InterruptingEnv(OutputEnv):
    """Sends this process a SIGINT (a Ctrl-C) at step ``at``; workers ignore it, the parent
    gets a KeyboardInterrupt in the middle of stepping its own slice."""

    def __init__(self, at: int = 2):
        super().__init__()
        self.at = at

    def step(self, action):
        result = super().step(action)
        if self.t == self.at:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.5)  # the interrupt lands here, in the parent
        return result


def check_closes_within_a_second(venv) -> None:
    """close() after a Ctrl-C: prompt, quiet (the KeyboardInterrupt was the user's one error), complete."""
    start = time.monotonic()
    try:
        venv.close()
    except KeyboardInterrupt:
        pytest.fail("close() raised KeyboardInterrupt")
    assert time.monotonic() - start < 1.0
    assert not children(), [p.cmdline() for p in children()]


def test_ctrl_c_while_the_parent_steps_its_own_slice_closes_at_once():
    fns = [OutputEnv] * 3 + [InterruptingEnv]
    venv = SubprocVecEnv(fns, in_series=2, step_in_parent=True)
    venv.reset()
    with pytest.raises(KeyboardInterrupt):
        for _ in range(5):
            venv.step(np.zeros(4, np.int64))
    check_closes_within_a_second(venv)


@pytest.mark.parametrize("delay", [0.0, 0.05, 0.2])
def test_ctrl_c_while_waiting_for_busy_workers_closes_within_a_second(delay):
    venv = SubprocVecEnv([functools.partial(SlowStepEnv, 0.3)] * 8, in_series=1)
    venv.reset()
    timer = threading.Timer(delay, signal.pthread_kill, (threading.main_thread().ident, signal.SIGINT))
    with pytest.raises(KeyboardInterrupt):
        timer.start()  # (inside: with delay 0 the Ctrl-C may come while start() waits for the thread)
        for _ in range(10):
            venv.step(np.zeros(8, np.int64))
    timer.join()
    check_closes_within_a_second(venv)


@pytest.mark.slow  # runs scripts/run_atari.py, which steps Atari emulators
@pytest.mark.parametrize("delay", [0.2, 1.0])
def test_run_atari_ctrl_c_while_the_parent_steps_a_slice_exits_at_once_and_quietly(delay):
    from tests.scripts.test_run_atari import INTERRUPTED, start_script  # (skips without ale-py)

    proc = start_script("--num-envs", "4", "--steps", "100000000")  # in_series "auto": the parent steps envs 2, 3
    try:
        assert "4 envs on subproc" in proc.stdout.readline()  # stepping from now on
        time.sleep(delay)
        sent = time.monotonic()
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        took = time.monotonic() - sent
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 130, out + err
    assert INTERRUPTED.search(out), out + err
    assert "closing the envs failed" not in err, err
    assert "Traceback" not in err, err
    assert took < 3.0, f"exited {took:.1f} s after the Ctrl-C"


# ------------------------------------------------------------ fork
FORK_SCRIPT = textwrap.dedent("""
    import os, sys
    import numpy as np
    from tests.faulty_envs import OutputEnv
    from vec_envs import SubprocVecEnv
    from vec_envs.errors import VecEnvError

    if __name__ == "__main__":
        venv = SubprocVecEnv([OutputEnv] * 4, in_series=2, context=sys.argv[1])
        venv.reset()
        pids = [w.process.pid for w in venv.workers if not w.is_local]
        child = os.fork()
        if child == 0:
            try:
                venv.step(np.zeros(4, np.int64))
                sys.exit("the child stepped the parent's workers")
            except VecEnvError as err:
                assert "is a fork of it" in str(err), err
            venv.close()  # the child's copy: must not stop the parent's workers
            sys.exit(0)   # a normal exit: atexit handlers and finalizers run
        _, status = os.waitpid(child, 0)
        assert os.waitstatus_to_exitcode(status) == 0, status
        for pid in pids:
            os.kill(pid, 0)  # still there
        assert venv.step(np.zeros(4, np.int64))[1].tolist() == [1.0] * 4
        venv.close()
        print("parent ok")
""")


@pytest.mark.parametrize("context", ["forkserver", "fork"])
def test_a_forked_child_leaves_the_parents_workers_alone(context):
    proc = subprocess.run([sys.executable, "-c", FORK_SCRIPT, context], cwd=REPO, capture_output=True, text=True,
                          timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "parent ok" in proc.stdout, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    assert "AssertionError" not in proc.stderr, proc.stderr


# ------------------------------------------------------ close deadline
def test_close_waits_one_deadline_for_all_hanging_env_closes():
    venv = SubprocVecEnv([SlowCloseEnv] * 4, in_series=1)
    venv.close_timeout = 1.0
    venv.reset()
    start = time.monotonic()
    with pytest.warns(RuntimeWarning, match=r"SubprocVecEnv.close\(\): envs \[0, 1, 2, 3\] \(workers \[0, 1, 2, 3\]\) "
                                            r"were still busy after 1\.\d s and were killed \(their envs were not "
                                            r"closed\)"):
        venv.close()
    assert time.monotonic() - start < 2.5
    assert not children(), [p.cmdline() for p in children()]


def test_close_drains_all_busy_workers_together():
    venv = SubprocVecEnv([functools.partial(SlowStepEnv, 3600)] * 6, in_series=1)
    venv.close_timeout = 1.0
    venv.reset()
    venv.step_async(np.zeros(6, np.int64))
    start = time.monotonic()
    with pytest.warns(RuntimeWarning, match=r"envs \[0, 1, 2, 3, 4, 5\] \(workers \[0, 1, 2, 3, 4, 5\]\) were still "
                                            r"busy after 1\.\d s and were killed"):
        venv.close()
    assert time.monotonic() - start < 2.5
    assert not children(), [p.cmdline() for p in children()]


# ------------------------------------------- which env a dead worker ran
@pytest.mark.parametrize("make", SUBPROC_BACKENDS)
def test_a_dead_worker_names_the_env_it_was_stepping(make, closing):
    fns = [OutputEnv] * 4 + [functools.partial(SlowStepEnv, kill_at=2)] + [OutputEnv]
    venv = closing(make(fns, in_series=3, step_in_parent=False))
    venv.reset()
    venv.step(np.zeros(6, np.int64))
    with pytest.raises(EnvWorkerError, match=r"env 4 \(worker 1, envs 3\.\.5\) was killed by signal SIGKILL during "
                                             r"step\(\)") as info:
        venv.step(np.zeros(6, np.int64))
    err = info.value
    assert (err.env_index, err.env_indices, err.worker_index, err.method) == (4, [3, 4, 5], 1, "step")


def test_env_indices_of_an_env_exception_list_the_workers_envs():
    with SubprocVecEnv([OutputEnv, functools.partial(OutputEnv, ("reward-none",))], in_series=2) as venv:
        venv.reset()
        with pytest.raises(EnvWorkerError) as info:
            venv.step([0, 0])
        assert (info.value.env_index, info.value.env_indices) == (1, [0, 1])


# --------------------------------------------------- unpicklable infos
@pytest.mark.parametrize("make", SUBPROC_BACKENDS)
def test_an_unpicklable_info_names_the_env_and_what_cannot_be_pickled(make, closing):
    fns = [OutputEnv, OutputEnv, functools.partial(UnpicklableInfoEnv, at=1), OutputEnv]
    venv = closing(make(fns, step_in_parent=False))
    venv.reset()
    with pytest.raises(EnvWorkerError, match=r"env 2 \(worker \d\) raised in step\(\): the info env 2 returned from "
                                             r"step\(\) cannot be pickled to reach the parent process "
                                             r"\(\w+Error: .*\); keep infos to picklable values") as info:
        venv.step(np.zeros(4, np.int64))
    assert (info.value.env_index, info.value.method) == (2, "step")
    with pytest.raises(BrokenVecEnvError, match=r"env 2 raised in step\(\).*call reset\(\)"):
        venv.step(np.zeros(4, np.int64))
    venv.reset()
    venv.set_attr("at", 0, indices=2)
    assert venv.step(np.zeros(4, np.int64))[1].tolist() == [1.0] * 4


def test_an_unpicklable_info_under_recv_send_names_the_env_as_lock_step_does():
    """The shared-memory recv/send path words it as the lock-step path."""
    fns = [OutputEnv, OutputEnv, OutputEnv, functools.partial(UnpicklableInfoEnv, at=1)]
    with SubprocVecEnv(fns, in_series=2, batch_size=2) as venv:
        assert type(venv.scheduler).__name__ == "LaneScheduler"  # the path under test
        venv.async_reset()
        with pytest.raises(EnvWorkerError, match=r"env 3 \(worker 1\) raised in step\(\): the info env 3 returned "
                                                 r"from step\(\) cannot be pickled to reach the parent process "
                                                 r"\(\w+Error: .*\); keep infos to picklable values") as info:
            for _ in range(200):  # env 3's first step fails, whichever round sends it
                obs, rewards, dones, infos, env_ids = venv.recv()
                venv.send(np.zeros(len(env_ids), np.int64), env_ids)
        assert (info.value.env_index, info.value.method) == (3, "step")
