"""The worker protocol on its own: typed replies, unknown commands, transport-freedom,
the messenger's errors and the restart policy."""
from __future__ import annotations

import ast
import multiprocessing as mp
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

from vec_envs.errors import EnvWorkerError
from vec_envs.subproc.shared_slice_server import SharedSliceServer
from vec_envs.subproc.subproc_worker import SubprocWorker
from vec_envs.workers.local_worker import LocalWorker
from vec_envs.workers.messenger import Messenger
from vec_envs.workers.protocol import (
    Command,
    EnvMethodRequest,
    GetAttrRequest,
    ResetOneReply,
    ResetOneRequest,
    ResetReply,
    ResetRequest,
    SliceServer,
    SpacesReply,
    StepReply,
    WorkerFailure,
)
from vec_envs.workers.restart_policy import RestartPolicy


def cartpoles(n: int = 2) -> list:
    return [lambda: gym.make("CartPole-v1")] * n


def test_every_command_gets_its_typed_reply():
    server = SliceServer(cartpoles(), first_index=3)
    assert isinstance(server.handle(Command.GET_SPACES, None).value, SpacesReply)
    reset = server.handle(Command.RESET, ResetRequest([7, 8])).value
    assert isinstance(reset, ResetReply) and reset.arrays.obs.shape == (2, 4)
    step = server.handle(Command.STEP, np.array([0, 1])).value
    assert isinstance(step, StepReply) and step.arrays.rewards.tolist() == [1.0, 1.0]
    one = server.handle(Command.RESET_ONE, ResetOneRequest(1, 8)).value
    assert isinstance(one, ResetOneReply) and np.array_equal(one.obs, reset.arrays.obs[1])
    assert server.handle(Command.GET_ATTR, GetAttrRequest("spec", [0])).value[0].id == "CartPole-v1"
    assert server.handle(Command.CLOSE, None).ok


def test_a_failure_names_the_global_env_index_and_the_method():
    server = SliceServer(cartpoles(), first_index=3)
    outcome = server.handle(Command.ENV_METHOD, EnvMethodRequest("no_such_method", (), {}, [1]))
    assert not outcome.ok and isinstance(outcome.value, WorkerFailure)
    assert (outcome.value.env_index, outcome.value.method) == (4, "no_such_method")
    assert "AttributeError" in outcome.value.summary and "Traceback" in outcome.value.traceback


def test_unknown_command_is_an_error_listing_the_valid_ones():
    outcome = SliceServer(cartpoles(1), 0).handle(99, None)
    assert not outcome.ok
    assert "unknown command 99; valid: GET_SPACES=1, RESET=3, STEP=4" in outcome.value.summary
    # ATTACH_SHARED is the subprocess transport's: the plain server does not know it
    assert "unknown command" in SliceServer(cartpoles(1), 0).handle(Command.ATTACH_SHARED, None).value.summary
    assert "ATTACH_SHARED=2" in SharedSliceServer(cartpoles(1), 0).handle(99, None).value.summary


def test_unknown_command_through_a_worker_process_is_answered():
    worker = SubprocWorker(mp.get_context("spawn"), 0, cartpoles(1), 0, 1)
    try:
        worker.send(99, None)  # type: ignore[arg-type]
        assert SubprocWorker.wait([worker], 60.0) == [worker]
        ok, failure = worker.recv()
        assert not ok and "unknown command 99; valid:" in failure.summary
        worker.send(Command.CLOSE, None)
        assert SubprocWorker.wait([worker], 10.0) and worker.recv().ok
    finally:
        worker.shutdown(10.0)
    assert worker.process._closed  # joined and released, nothing left running


def test_protocol_imports_no_transport():
    from vec_envs.workers import protocol

    tree = ast.parse(Path(protocol.__file__).read_text())
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    imported |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    assert not [m for m in imported if m and (m.startswith(("vec_envs.subproc", "vec_envs.ray"))
                                              or m == "vec_envs.spaces.shared_memory")]


def test_messenger_raises_the_remote_failure_with_env_and_traceback():
    messenger = Messenger("Example", [LocalWorker(0, cartpoles(), 5, 7)], LocalWorker)
    with pytest.raises(EnvWorkerError, match=r"env 6 \(worker 0\) raised in get_attr\(\): AttributeError") as info:
        messenger.round_trip(0, Command.GET_ATTR, GetAttrRequest("nope", [1]), None, "get_attr")
    assert (info.value.env_index, info.value.worker_index, info.value.method) == (6, 0, "get_attr")
    assert "Traceback" in info.value.remote_traceback
    assert messenger.broadcast(Command.CLOSE, "close", None) == [None]


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
    assert policy.restarts == 2 and info.value.method == "reset" and info.value.__cause__ is error
