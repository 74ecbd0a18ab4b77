"""The lanes of the control block, each side's use of them, and their C kernel.

The C passes (``shared/_lanes_kernel.c``) find and write exactly what the NumPy code does
where they are not built: a worker's new requests as runs, its answers (the word, its
count, the parent woken when its total is made), the parent's answered envs in flight.
A worker's serving answers every env with nothing to say at once and sends what the
others had to say in one message; the infos of a batch where no env said anything are
made in one pass (``stepping/ended_infos.py``).
"""
from __future__ import annotations

import multiprocessing
import os

import gymnasium as gym
import numpy as np
import pytest

from tests.envs import SeededEnv
from vec_envs.async_envs import EnvStatus
from vec_envs.spaces.batching import BatchBuffers
from vec_envs.stepping import ended_infos as ended_infos_module
from vec_envs.stepping.ended_infos import ended_infos
from vec_envs.subproc.parent import lanes as parent_side
from vec_envs.subproc.parent.lanes import ParentLanes
from vec_envs.subproc.shared.control_block import ControlBlock, ParentColumn, WorkerColumn
from vec_envs.subproc.shared.messages import EnvMessages
from vec_envs.subproc.worker import lanes as worker_side
from vec_envs.subproc.worker.lanes import WorkerLanes
from vec_envs.subproc.worker.serving import ProcessSliceServer

N, WORKERS = 13, 2
IN_FLIGHT, ANSWERED = int(EnvStatus.IN_FLIGHT), int(EnvStatus.ANSWERED)


@pytest.fixture(params=["C", "NumPy"])
def kernel(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each test below runs with the C passes and with the NumPy code."""
    if request.param == "C" and parent_side._kernel is None:
        pytest.skip("the lanes kernel is not built or is off")
    if request.param == "NumPy":
        monkeypatch.setattr(parent_side, "_kernel", None)
        monkeypatch.setattr(worker_side, "_kernel", None)
        monkeypatch.setattr(ended_infos_module, "_kernel", None)
    return str(request.param)


def _block(n: int = N, workers: int = WORKERS) -> ControlBlock:
    return ControlBlock(np.zeros(ControlBlock.words(n, workers), np.int64), n=n, workers=workers)


@pytest.mark.parametrize("pattern", [[], [0], [12], [0, 1, 2], [2, 3, 7, 9, 10, 11, 12], list(range(N))])
def test_a_worker_takes_each_new_request_once_as_runs(kernel: str, pattern: list[int]) -> None:
    block = _block()
    lanes = WorkerLanes(block, 0, 0, N)
    block.requested[:] = 5
    lanes.take_runs()  # everything taken: only the pattern below is new
    block.requested[pattern] = 6
    assert lanes.has_requests() == bool(pattern)
    runs = lanes.take_runs()
    assert [k for start, stop in runs for k in range(start, stop)] == pattern
    assert all(stop > start for start, stop in runs)
    assert all(a_stop < b_start for (_, a_stop), (b_start, _) in zip(runs, runs[1:]))  # maximal runs
    assert [lanes.seq(k) for k in range(N)] == [6 if k in pattern else 5 for k in range(N)]
    assert lanes.values[pattern].tolist() == [6 << 1] * len(pattern)
    assert lanes.take_runs() == [] and not lanes.has_requests()


def test_a_worker_sees_only_its_own_lanes(kernel: str) -> None:
    block = _block()
    lanes = WorkerLanes(block, 1, 4, 9)
    block.requested[[3, 4, 8, 9]] = 1  # 3 and 9 are other workers' envs
    assert lanes.take_runs() == [(0, 1), (4, 5)]


def test_a_worker_answers_counts_and_wakes_the_parent_when_its_total_is_made(kernel: str) -> None:
    read, write = os.pipe()
    os.set_blocking(read, False)
    try:
        block = _block(4, workers=2)
        first, second = WorkerLanes(block, 0, 0, 2, write), WorkerLanes(block, 1, 2, 4, write)
        block.requested[:] = 3
        first.take_runs(), second.take_runs()
        first.answer(0, False)  # the parent is awake: counted, nobody woken
        assert block.answered[0] == 3 << 1 and block.worker_rows[0, WorkerColumn.ANSWERS] == 1
        block.parent_row[ParentColumn.TARGET] = 3  # the parent sleeps (sleep 1) for 3 answers in all
        block.parent_row[ParentColumn.SLEEPING] = 1
        second.done.call(0)  # 2 of 3: no wake-up
        assert _woken(read) == 0
        first.answer(1, True)  # the third: one wake-up, with the message bit
        assert _woken(read) == 1 and block.answered[1] == 3 << 1 | 1
        assert block.worker_rows[:, WorkerColumn.ANSWERS].tolist() == [2, 1]
    finally:
        os.close(read)
        os.close(write)


def test_a_worker_writes_once_per_sleep_of_the_parent(kernel: str) -> None:
    read, write = os.pipe()
    os.set_blocking(read, False)
    try:
        block = _block(4, workers=1)
        lanes = WorkerLanes(block, 0, 0, 4, write)
        block.parent_row[ParentColumn.TARGET] = 1
        for sleep in (1, 2):  # the parent's row as it writes it, the parent not yet up
            block.parent_row[ParentColumn.SLEEPING] = sleep
            block.requested[:] = sleep
            lanes.take_runs()
            for k in range(4):  # every answer past the target
                lanes.answer(k, False)
            assert _woken(read) == 1
    finally:
        os.close(read)
        os.close(write)


def _woken(fd: int) -> int:
    try:
        return len(os.read(fd, 4096)) // 8
    except BlockingIOError:
        return 0


def test_the_parent_finds_the_answered_envs_in_flight(kernel: str) -> None:
    rng = np.random.default_rng(0)
    for _ in range(50):
        block = _block()
        parent = ParentLanes(block)
        parent.expected[:] = rng.integers(1, 4, N)
        answer = rng.integers(0, 4, N)
        block.answered[:] = answer << 1 | rng.integers(0, 2, N)
        status = np.where(rng.random(N) < 0.7, IN_FLIGHT, int(EnvStatus.RETURNED)).astype(np.int8)
        flying = status == IN_FLIGHT
        ready = [99]
        want = np.flatnonzero(flying & (answer == parent.expected)).tolist()
        assert parent.count_finished(status) == len(want)
        assert parent.scan(status, ready) == len(want)
        assert ready == [99] + want
        assert np.flatnonzero(status == ANSWERED).tolist() == want
        assert parent.count_finished(status) == 0


def test_the_parent_never_finds_its_own_slice_answered(kernel: str) -> None:
    block = _block()
    parent = ParentLanes(block, laned=10)  # envs 10..12: the parent's own
    status = np.full(N, IN_FLIGHT, np.int8)  # every answer word and number is 0: "answered" to a naive look
    ready: list[int] = []
    assert parent.scan(status, ready) == 10 and ready == list(range(10))
    assert status[10:].tolist() == [IN_FLIGHT] * 3


@pytest.mark.parametrize("talks", [[], [7], [0, 12]])
def test_the_parent_takes_the_first_ready_envs_with_their_dones(kernel: str, talks: list[int]) -> None:
    block = _block()
    parent = ParentLanes(block)
    block.answered[:] = 3 << 1
    block.answered[talks] |= 1
    dones = np.arange(N) % 3 == 0
    ready = [7, 0, 12, 4, 5]
    env_ids, their_dones, talking = parent.first_ready(ready, 3, dones)
    assert env_ids.dtype == np.int64 and env_ids.tolist() == [7, 0, 12]
    assert their_dones.tolist() == [False, True, True]
    assert talking == bool(talks)
    assert ready == [7, 0, 12, 4, 5]  # the caller takes them off
    empty, no_dones, nobody = parent.first_ready(ready, 0, dones)
    assert len(empty) == len(no_dones) == 0 and not nobody


def test_a_request_rings_the_bell_only_when_a_worker_of_it_sleeps() -> None:
    block = _block(4, workers=2)
    rung: list[int] = []
    parent = ParentLanes(block, wake=lambda workers: rung.extend(workers))  # no bell: WAKE messages
    parent.request(np.array([0, 1]), np.array([0, 0]))
    assert rung == []
    block.worker_rows[1, WorkerColumn.SLEEPING] = 1
    parent.request(np.array([0]), np.array([0]))  # worker 0 is awake: nobody to wake
    assert rung == []
    parent.request(slice(0, 4))  # lock-step: worker 1 sleeps
    assert rung == [1]


@pytest.mark.parametrize("returned", [None, [7, 2, 11, 0, 5]])  # lock-step: every env; recv: some, in any order
def test_a_quiet_batch_has_empty_infos_but_the_terminal_rows_of_its_ended_envs(kernel: str,
                                                                               returned: list[int] | None) -> None:
    rng = np.random.default_rng(1)
    buffers = BatchBuffers.allocate(gym.spaces.Box(-1, 1, (3,)), N, terminal=True)
    for _ in range(20):
        buffers.terminal_obs[:] = rng.uniform(-1, 1, (N, 3))
        buffers.time_limit_truncated[:] = rng.integers(0, 2, N)
        buffers.dones[:] = rng.integers(0, 2, N)
        env_ids = np.arange(N) if returned is None else np.array(returned)
        dones = buffers.dones[env_ids]
        reset_infos: list[dict] = [{"seed": i} for i in range(N)]
        infos = ended_infos(buffers, dones, None if returned is None else env_ids, reset_infos)
        assert len(infos) == len(env_ids)
        for info, i, done in zip(infos, env_ids.tolist(), dones.tolist()):
            if done:
                assert info.keys() == {"terminal_observation", "TimeLimit.truncated"}
                assert (info["terminal_observation"] == buffers.terminal_obs[i]).all()
                assert info["TimeLimit.truncated"] is bool(buffers.time_limit_truncated[i])
            else:
                assert info == {}
        assert len({id(info) for info in infos}) == len(infos)  # each env its own dict
        ended = env_ids[dones]
        assert reset_infos == [{} if i in ended else {"seed": i} for i in range(N)]
        buffers.terminal_obs[:] = 9.0  # the next step's rows: the infos keep their own copy
        assert all((info["terminal_observation"] != 9.0).all() for info in infos if info)


def test_a_serving_answers_the_quiet_envs_at_once_and_sends_what_the_others_said_in_one_message() -> None:
    """SeededEnv says {"t": t} at even steps: one pipe message for the envs of a serving
    that said something, each answered after it; the quiet ones answered, no message."""
    n = 3
    block = _block(n, workers=1)
    parent_end, worker_end = multiprocessing.Pipe()
    server = ProcessSliceServer([SeededEnv] * n, 0, worker_end)
    try:
        server.attach(BatchBuffers.allocate(server.envs.observation_space, n, terminal=True), np.zeros(n, np.int64))
        server.lanes = WorkerLanes(block, 0, 0, n)
        server.envs.reset([0, 1, 2])
        parent = ParentLanes(block)
        for talks in (False, True, False, True):
            seq = parent.request(slice(0, n))
            assert server.serve_lanes() == n
            messages = []
            while parent_end.poll():
                messages.append(parent_end.recv())
            assert len(messages) == (1 if talks else 0)
            if talks:
                message = messages[0]
                assert isinstance(message, EnvMessages)
                assert message.envs == [0, 1, 2] and message.seqs == [seq] * n
                assert all(set(info) == {"t"} for info in message.infos)
            assert block.answered.tolist() == [seq << 1 | talks] * n
        assert block.worker_rows[0, WorkerColumn.ANSWERS] == 4 * n
    finally:
        server.close_quietly()
        parent_end.close()
        worker_end.close()


def test_the_c_passes_refuse_arrays_they_cannot_read() -> None:
    kernel = parent_side._kernel
    if kernel is None:
        pytest.skip("the lanes kernel is not built or is off")
    words, flags, status = np.zeros(4, np.int64), np.zeros(4, np.bool_), np.zeros(4, np.int8)
    with pytest.raises(ValueError, match="int64"):
        kernel.take_runs(np.zeros(4, np.int32), words, words.copy())
    with pytest.raises(ValueError, match="status must be a 1-D int8"):
        kernel.count_finished(words, words, flags)
    with pytest.raises(ValueError, match="has 3 envs"):
        kernel.scan(words, words, np.zeros(3, np.int8), [])
    read_only = np.zeros(4, np.int64)
    read_only.flags.writeable = False
    with pytest.raises((BufferError, ValueError)):  # take_runs writes what it takes
        kernel.take_runs(words, read_only, words.copy())
    with pytest.raises(ValueError, match="first_ready"):  # more envs than are ready
        kernel.first_ready([1], words, flags, np.zeros(2, np.int64), np.zeros(2, np.bool_))
    with pytest.raises(IndexError, match="env 9 of 4"):
        kernel.first_ready([9], words, flags, np.zeros(1, np.int64), np.zeros(1, np.bool_))
    with pytest.raises(ValueError, match="answerer"):
        kernel.answerer(words, words, np.zeros((2, 8), np.int64), 1, -1, 1, 0, 1)  # worker 1 of 1
    answerer = kernel.answerer(words, words, np.zeros((2, 8), np.int64), 0, -1, 1, 0, 1)
    with pytest.raises(IndexError, match="env 4 of a slice of 4"):
        kernel.answer(answerer, 4, False)
    del status
