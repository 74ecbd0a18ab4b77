"""Workers leave with their parent, however it dies (SIGTERM, SIGKILL), under every start
method, whether idle or inside a long ``env.step``: a parent script builds a SubprocVecEnv,
prints its worker pids and is killed; no worker may outlive it by more than a few seconds."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import psutil
import pytest

from vec_envs.subproc.child import parent_alive

pytestmark = pytest.mark.slow  # kills, interrupts or fuzzes worker processes many times over

GRACE_S = 5.0  # a worker still there this long after its parent died is a leak
PARENT = textwrap.dedent('''
    import os
    import sys
    import time
    import numpy as np
    from tests.envs import SeededEnv
    from vec_envs import SubprocVecEnv


    class SlowEnv(SeededEnv):
        def step(self, action):
            os.write(1, b"stepping\\n")  # one write: the workers share the pipe
            time.sleep(60)
            return super().step(action)


    if __name__ == "__main__":
        context, busy = sys.argv[1], sys.argv[2] == "busy"
        venv = SubprocVecEnv([SlowEnv] * 4, in_series=2, context=context, step_in_parent=False)
        venv.reset()
        print(" ".join(str(w.process.pid) for w in venv.workers), flush=True)
        if busy:
            venv.step_async(np.zeros(4, np.int64))  # each worker then says "stepping"
        time.sleep(120)
''')


def _running(pid):
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _start_parent(tmp_path, context, busy):
    script = tmp_path / "parent.py"
    script.write_text(PARENT)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.getcwd(), os.environ.get("PYTHONPATH", "")]))
    parent = subprocess.Popen([sys.executable, str(script), context, "busy" if busy else "idle"], cwd=os.getcwd(),
                              env=env, stdout=subprocess.PIPE, text=True)
    line = parent.stdout.readline()
    assert line, f"the parent script ended early (code {parent.wait()})"
    pids = [int(pid) for pid in line.split()]
    if busy:
        stepping = [parent.stdout.readline() for _ in pids]
        assert stepping == ["stepping\n"] * len(pids)  # every worker is inside env.step
    return parent, pids


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL], ids=["sigterm", "sigkill"])
@pytest.mark.parametrize("context", ["forkserver", "spawn", "fork"])
@pytest.mark.parametrize("busy", [True, False], ids=["inside-step", "idle"])
def test_workers_leave_with_their_parent(tmp_path, context, how, busy):
    parent, pids = _start_parent(tmp_path, context, busy)
    assert len(pids) == 2
    assert all(_running(pid) for pid in pids)
    parent.send_signal(how)
    parent.wait(10)
    deadline = time.monotonic() + GRACE_S
    while any(_running(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    survivors = [pid for pid in pids if _running(pid)]
    for pid in survivors:
        os.kill(pid, signal.SIGKILL)  # leave nothing behind, then fail
    assert survivors == []


def test_a_parent_that_died_is_seen_gone_without_a_pidfd():
    """The watch's fallback (no pidfd): a running process is alive, a zombie or a reaped one is not."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert parent_alive(child.pid)
        child.kill()
        os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)  # dead, not reaped: a zombie
        assert not parent_alive(child.pid)
    finally:
        child.kill()
        child.wait()
    assert not parent_alive(child.pid)
