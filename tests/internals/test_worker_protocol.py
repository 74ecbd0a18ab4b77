"""The worker protocol on its own: typed replies, unknown commands, numbered replies,
transport-freedom, the messenger's errors and the restart policy."""
from __future__ import annotations

import ast
import multiprocessing as mp
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

from vec_envs.errors import EnvWorkerError
from vec_envs.subproc.parent.worker_process import WorkerProcess
from vec_envs.subproc.shared.messages import AttachSharedRequest, EnvMessages, PipeCommand, Reply
from vec_envs.subproc.worker.serving import ProcessSliceServer
from vec_envs.workers.local_worker import LocalWorker
from vec_envs.workers.messenger import Messenger
from vec_envs.workers.protocol import (
    Command,
    EnvMethodRequest,
    GetAttrRequest,
    Outcome,
    ResetOneReply,
    ResetOneRequest,
    ResetReply,
    ResetRequest,
    SpacesReply,
    StepReply,
    StepRequest,
    WorkerFailure,
)
from vec_envs.workers.restart_policy import RestartPolicy
from vec_envs.workers.slice_server import SliceServer


def cartpoles(n: int = 2) -> list:
    return [lambda: gym.make("CartPole-v1")] * n


def test_every_command_gets_its_typed_reply():
    server = SliceServer(cartpoles(), first_index=3)
    assert isinstance(server.handle(Command.GET_SPACES, None).value, SpacesReply)
    reset = server.handle(Command.RESET, ResetRequest([7, 8])).value
    assert isinstance(reset, ResetReply)
    assert reset.arrays.obs.shape == (2, 4)
    step = server.handle(Command.STEP, StepRequest([1, 0], np.array([0, 1]))).value
    assert isinstance(step, StepReply)
    assert step.arrays.rewards.tolist() == [1.0, 1.0]
    assert step.arrays.obs.shape == (2, 4)  # the rows of envs 1 and 0, in that order
    one = server.handle(Command.RESET_ONE, ResetOneRequest(1, 8)).value
    assert isinstance(one, ResetOneReply)
    assert np.array_equal(one.obs, reset.arrays.obs[1])
    assert server.handle(Command.GET_ATTR, GetAttrRequest("spec", [0])).value[0].id == "CartPole-v1"
    assert server.handle(Command.CLOSE, None).ok


def test_a_failure_names_the_global_env_index_and_the_method():
    server = SliceServer(cartpoles(), first_index=3)
    outcome = server.handle(Command.ENV_METHOD, EnvMethodRequest("no_such_method", (), {}, [1]))
    assert not outcome.ok
    assert isinstance(outcome.value, WorkerFailure)
    assert (outcome.value.env_index, outcome.value.method) == (4, "no_such_method")
    assert "AttributeError" in outcome.value.summary
    assert "Traceback" in outcome.value.traceback


def test_unknown_command_is_an_error_listing_the_valid_ones():
    outcome = SliceServer(cartpoles(1), 0).handle(99, None)
    assert not outcome.ok
    assert "unknown command 99; valid: GET_SPACES=1, RESET=2, STEP=3" in outcome.value.summary
    # ATTACH_SHARED is the subprocess transport's: the plain server does not know it
    assert "unknown command" in SliceServer(cartpoles(1), 0).handle(PipeCommand.ATTACH_SHARED, None).value.summary
    assert "ATTACH_SHARED=101" in ProcessSliceServer(cartpoles(1), 0, None).handle(99, None).value.summary


def test_unknown_command_through_a_worker_process_is_answered():
    worker = WorkerProcess(mp.get_context("spawn"), 0, cartpoles(1), 0, 1)
    try:
        worker.send(99, None)
        assert WorkerProcess.wait([worker], 60.0) == [worker]
        ok, failure = worker.recv()
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
    parent_end, worker_end = mp.Pipe(duplex=True)
    worker = WorkerProcess.__new__(WorkerProcess)  # the pipe end alone: no process behind it
    worker.conn, worker.broken, worker._seq, worker._awaited = parent_end, False, 0, 0
    try:
        worker.send(Command.GET_ATTR, GetAttrRequest("spec", [0]))  # given up on
        worker.send(Command.GET_SPACES, None)
        assert [worker_end.recv().seq for _ in range(2)] == [1, 2]
        worker_end.send(Reply(1, Outcome(True, ["stale"])))
        worker_end.send(EnvMessages([0], [5], [{}], [None], None))
        worker_end.send(Reply(2, Outcome(True, "spaces")))
        assert worker.recv() == Outcome(True, "spaces")
    finally:
        parent_end.close()
        worker_end.close()


def test_spaces_know_no_transport():
    """The shared region lays out the batch buffers; a transport's control block is its own."""
    from vec_envs.spaces import shared_memory

    tree = ast.parse(Path(shared_memory.__file__).read_text())
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert not [m for m in imported if m and m.startswith(("vec_envs.subproc", "vec_envs.workers", "vec_envs.ray"))]


def test_protocol_imports_no_transport():
    from vec_envs.workers import protocol

    tree = ast.parse(Path(protocol.__file__).read_text())
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    imported |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    assert not [m for m in imported if m and (m.startswith(("vec_envs.subproc", "vec_envs.ray"))
                                              or m == "vec_envs.spaces.shared_memory")]
    assert not {"ATTACH_SHARED", "ASYNC_RESET", "WAKE"} & set(Command.__members__)  # a transport's own commands


def test_messenger_raises_the_remote_failure_with_env_and_traceback():
    messenger = Messenger("Example", [LocalWorker(0, cartpoles(), 5, 7)], LocalWorker)
    with pytest.raises(EnvWorkerError, match=r"env 6 \(worker 0\) raised in get_attr\(\): AttributeError") as info:
        messenger.round_trip(0, Command.GET_ATTR, GetAttrRequest("nope", [1]), None, "get_attr", list)
    assert (info.value.env_index, info.value.worker_index, info.value.method) == (6, 0, "get_attr")
    assert "Traceback" in info.value.remote_traceback
    assert messenger.broadcast(Command.CLOSE, "close", None, type(None)) == [None]


def test_restart_policy():
    with pytest.raises(ValueError, match=r"on_error must be one of \('raise', 'restart'\), received 'retry'"):
        RestartPolicy("retry", 3)
    error = EnvWorkerError("env 2 (worker 1) raised in step(): boom", env_index=2, worker_index=1, method="step")
    with pytest.raises(EnvWorkerError, match="^env 2 \\(worker 1\\) raised in step\\(\\): boom$"):
        RestartPolicy("raise", 3).admit(error, "step")
    policy = RestartPolicy("restart", 2)
    policy.admit(error, "step")
    policy.admit(error, "step")
    with pytest.raises(EnvWorkerError, match=r"boom \(max_restarts=2 reached\)") as info:
        policy.admit(error, "reset")
    assert policy.restarts == 2
    assert info.value.method == "reset"
    assert info.value.__cause__ is error


def test_an_episode_end_in_shared_memory_needs_no_message():
    """With terminal rows (shared memory), an env that ends with an empty info leaves the
    reply empty: its last observation and TimeLimit.truncated wait in the terminal rows,
    and a non-empty reset info still travels."""
    from tests.envs import QuietEnv
    from vec_envs.spaces.shared_memory import SharedBuffers
    from vec_envs.stepping.ended_infos import with_terminal

    shared = SharedBuffers(gym.spaces.Box(-1.0, 1.0, (3,), np.float32), gym.spaces.Discrete(3), 2)
    server = ProcessSliceServer([lambda: QuietEnv(length=2, truncate=True), lambda: QuietEnv(length=3)], 0, None)
    both = StepRequest([0, 1], [0, 0])
    try:
        request = AttachSharedRequest(shared.space, shared.action_space, 2, 0, shared.size, 0, shared.fd)
        assert server.handle(PipeCommand.ATTACH_SHARED, request).ok
        server.handle(Command.RESET, ResetRequest([1, 2]))
        assert server.handle(Command.STEP, both).value == StepReply({}, {}, None)
        last = shared.buffers.obs[0].copy()
        # env 0 truncates now; its reset (the 2nd) gives an empty reset info: nothing to say
        assert server.handle(Command.STEP, both._replace(actions=[1, 1])).value == StepReply({}, {}, None)
        ended = with_terminal(shared.buffers, 0, {})
        assert shared.buffers.dones.tolist() == [True, False]
        assert ended["TimeLimit.truncated"] is True
        assert not np.array_equal(ended["terminal_observation"], last)
        assert np.array_equal(ended["terminal_observation"], shared.buffers.terminal_obs[0])
        reply = server.handle(Command.STEP, both._replace(actions=[0, 2])).value  # env 1 terminates
        assert reply == StepReply({}, {}, None)
        assert shared.buffers.dones.tolist() == [False, True]
        assert with_terminal(shared.buffers, 1, {})["TimeLimit.truncated"] is False
        reply = server.handle(Command.STEP, both).value  # env 0 ends again: its 3rd reset info is not empty
        assert reply.infos == {}
        assert reply.reset_infos == {0: {"reset_count": 3}}
    finally:
        server.handle(Command.CLOSE, None)
        shared.close()
