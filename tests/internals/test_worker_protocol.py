"""The worker protocol on its own: typed replies, unknown commands, numbered replies,
transport-freedom, a failure's error in the parent and the restart limit."""
from __future__ import annotations

import ast
import multiprocessing as mp
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

from tests.envs import QuietEnv
from vec_envs import SubprocVecEnv
from vec_envs.errors import EnvWorkerError
from vec_envs.spaces.batching import BatchBuffers
from vec_envs.subproc.process import WorkerProcess
from vec_envs.workers.env_slice import EnvSlice, with_terminal
from vec_envs.workers.wire import Answers, Command, EnvCall, Reply, Reset, Spaces, Step, WorkerFailure, serve
from vec_envs.workers.worker import LocalWorker, replies


def cartpoles(n: int = 2) -> list:
    return [lambda: gym.make("CartPole-v1")] * n


def test_every_command_gets_its_typed_reply():
    envs = EnvSlice(cartpoles(), first_index=3)
    assert isinstance(serve(envs, Command.SPACES, None), Spaces)
    reset = serve(envs, Command.RESET, Reset([0, 1], [7, 8], None))
    assert isinstance(reset, Answers)
    assert reset.envs == [3, 4] and reset.obs.shape == (2, 4)
    step = serve(envs, Command.STEP, Step([1, 0], np.array([0, 1])))
    assert isinstance(step, Answers)
    assert step.envs == [4, 3] and step.rewards.tolist() == [1.0, 1.0]
    assert step.obs.shape == (2, 4)  # the rows of envs 1 and 0, in that order
    ((obs, info),) = serve(envs, Command.ENV_CALL, EnvCall("reset_one", [1], per_env=[(8, None)]))
    assert np.array_equal(obs, reset.obs[1]) and info == {}
    assert serve(envs, Command.ENV_CALL, EnvCall("get_attr", [0], ("spec",)))[0].id == "CartPole-v1"
    assert serve(envs, Command.CLOSE, None) is None


def test_a_failure_names_the_global_env_index_and_the_method():
    worker = LocalWorker(0, cartpoles(), 3, 5)
    worker.send(Command.ENV_CALL, EnvCall("env_method", [1], ("no_such_method", (), {})))
    reply = worker.recv()
    assert not reply.ok
    assert isinstance(reply.value, WorkerFailure)
    assert (reply.value.env_index, reply.value.method) == (4, "no_such_method")
    assert "AttributeError" in reply.value.summary
    assert "Traceback" in reply.value.traceback


def test_unknown_command_is_an_error_listing_the_valid_ones():
    with pytest.raises(ValueError, match="unknown command 99; valid: SPACES=1, RESET=2, STEP=3"):
        serve(EnvSlice(cartpoles(1)), 99, None)


def test_unknown_command_through_a_worker_process_is_answered():
    worker = WorkerProcess(mp.get_context("spawn"), 0, cartpoles(1), 0, 1)
    try:
        worker.send(99, None)
        assert WorkerProcess.wait([worker], 60.0) == [worker]
        _, ok, failure = worker.recv()
        assert not ok
        assert "unknown command 99; valid:" in failure.summary
        worker.send(Command.CLOSE, None)
        assert WorkerProcess.wait([worker], 10.0)
        assert worker.recv().ok
    finally:
        worker.shutdown(10.0)
    assert worker.process._closed  # joined and released, nothing left running


def test_a_reply_to_a_request_given_up_on_is_dropped_not_read_as_the_next_ones():
    """Each request is numbered and its reply carries the number: a late reply (a timeout,
    a Ctrl-C) and the lanes' messages of a round given up on are dropped."""
    worker = WorkerProcess(mp.get_context("spawn"), 0, cartpoles(1), 0, 1)
    try:
        worker.send(Command.ENV_CALL, EnvCall("get_attr", [0], ("spec",)))  # given up on
        worker.send(Command.SPACES, None)
        assert WorkerProcess.wait([worker], 60.0) == [worker]
        reply = worker.recv()
        assert reply.seq == 2 and isinstance(reply.value, Spaces)
    finally:
        worker.kill()


def test_the_worker_protocol_imports_no_transport():
    from vec_envs.spaces import shared_memory
    from vec_envs.workers import wire

    for module in (wire, shared_memory):
        tree = ast.parse(Path(module.__file__).read_text())
        imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        imported |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
        assert not [m for m in imported if m and m.startswith(("vec_envs.subproc", "vec_envs.ray"))]


def test_a_remote_failure_is_raised_with_its_env_and_traceback(closing):
    venv = closing(SubprocVecEnv(cartpoles(4), in_series=2, step_in_parent=False))
    with pytest.raises(EnvWorkerError, match=r"env 3 \(worker 1\) raised in get_attr\(\): AttributeError") as info:
        venv.get_attr("nope", [3])
    assert (info.value.env_index, info.value.worker_index, info.value.method) == (3, 1, "get_attr")
    assert "Traceback" in info.value.remote_traceback


def test_restarts_stop_at_max_restarts(closing):
    from tests.helpers import fns_with

    with pytest.raises(ValueError, match=r"on_error must be one of \('raise', 'restart'\), received 'retry'"):
        SubprocVecEnv(cartpoles(), on_error="retry")
    venv = closing(SubprocVecEnv(fns_with("kill", after=2), in_series=2, on_error="restart", max_restarts=1))
    venv.reset()
    with pytest.warns(RuntimeWarning, match=r"replaced, its envs \[2, 3\] start anew \(restart 1 of 1\)"):
        for _ in range(3):
            venv.step(np.zeros(4, np.int64))
    assert venv.restarts == 1
    with pytest.raises(EnvWorkerError, match=r"\(max_restarts=1 reached\)") as info:
        for _ in range(3):
            venv.step(np.zeros(4, np.int64))
    assert isinstance(info.value.__cause__, EnvWorkerError)


def test_an_episode_end_in_shared_memory_needs_no_message():
    """With terminal rows (shared memory), an env that ends with an empty info says nothing:
    its last observation and TimeLimit.truncated wait in the terminal rows, and a
    non-empty reset info still travels."""
    envs = EnvSlice([lambda: QuietEnv(length=2, truncate=True), lambda: QuietEnv(length=3)])
    buffers = BatchBuffers.allocate(envs.observation_space, 2, terminal=True)
    envs.attach(buffers)
    both = Step([0, 1], [0, 0])
    quiet = Answers([0, 1], None, [{}, {}], [None, None], None)
    serve(envs, Command.RESET, Reset([0, 1], [1, 2], None), shared=True)
    assert serve(envs, Command.STEP, both, shared=True) == quiet
    last = buffers.obs[0].copy()
    # env 0 truncates now; its reset (the 2nd) gives an empty reset info: nothing to say
    assert serve(envs, Command.STEP, both._replace(actions=[1, 1]), shared=True) == \
        quiet._replace(reset_infos=[{}, None])
    ended = with_terminal(buffers, 0, {})
    assert buffers.dones.tolist() == [True, False]
    assert ended["TimeLimit.truncated"] is True
    assert not np.array_equal(ended["terminal_observation"], last)
    assert np.array_equal(ended["terminal_observation"], buffers.terminal_obs[0])
    reply = serve(envs, Command.STEP, both._replace(actions=[0, 2]), shared=True)  # env 1 terminates
    assert reply.infos == [{}, {}] and buffers.dones.tolist() == [False, True]
    assert with_terminal(buffers, 1, {})["TimeLimit.truncated"] is False
    reply = serve(envs, Command.STEP, both, shared=True)  # env 0 ends again: its 3rd reset info is not empty
    assert reply.infos == [{}, {}]
    assert reply.reset_infos == [{"reset_count": 3}, None]
    envs.close()


def test_replies_of_a_local_worker_run_its_requests_when_read():
    worker = LocalWorker(0, cartpoles(), 0, 2)
    worker.send(Command.SPACES, None)
    assert worker.awaiting
    got = replies([worker], None)
    assert isinstance(got[0], Reply) and got[0].value.observation_space.shape == (4,)
    assert not worker.awaiting
    worker.kill()
