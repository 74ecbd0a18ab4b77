"""The lanes (``subproc/lanes.py``), each side's use of them, and their C kernel.

The C passes (``subproc/_lanes_kernel.c``) find and write exactly what the NumPy code does
where they are not built: a worker's new requests as runs, oldest request first, its
answers (the word, its count, the parent woken when its total is made), the parent's
answered envs in flight. A worker's serving answers every env with nothing to say at once
and sends what the others had to say in one message, after their answers; the infos of a
batch where no env said anything are made in one pass (``workers/env_slice.ended_infos``).
"""
from __future__ import annotations

import os

import gymnasium as gym
import numpy as np
import pytest

from tests.envs import SeededEnv
from vec_envs.env_states import ANSWERED, IN_FLIGHT, RETURNED
from vec_envs.spaces.batching import BatchBuffers
from vec_envs.subproc import lanes as lanes_module
from vec_envs.subproc.child import serve_lanes
from vec_envs.subproc.lanes import P_SLEEPING, P_TARGET, W_ANSWERS, W_SLEEPING, ParentLanes, WorkerLanes, words
from vec_envs.workers import env_slice
from vec_envs.workers.env_slice import EnvSlice, ended_infos
from vec_envs.workers.wire import Answers

N, WORKERS = 13, 2


@pytest.fixture(params=["C", "NumPy"])
def kernel(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each test below runs with the C passes and with the NumPy code."""
    if request.param == "C" and lanes_module._kernel is None:
        pytest.skip("the lanes kernel is not built or is off")
    if request.param == "NumPy":
        monkeypatch.setattr(lanes_module, "_kernel", None)
        monkeypatch.setattr(env_slice, "_kernel", None)
    return str(request.param)


class Block:
    """A control block and its views, as both sides lay it out."""

    def __init__(self, n: int = N, workers: int = WORKERS) -> None:
        self.n, self.workers = n, workers
        self.words = np.zeros(words(n, workers), np.int64)
        self.requested, self.answered, rows, _ = lanes_module._layout(self.words, n, workers)
        self.worker_rows, self.parent_row = rows[:workers], rows[workers]

    def worker(self, w: int, first: int, stop: int, wake_fd: int | None = None) -> WorkerLanes:
        return WorkerLanes(self.words, self.n, self.workers, w, first, stop, wake_fd)

    def parent(self, **kwargs) -> ParentLanes:
        return ParentLanes(self.words, self.n, self.workers, **kwargs)


def _block(n: int = N, workers: int = WORKERS) -> Block:
    return Block(n, workers)


@pytest.mark.parametrize("pattern", [[], [0], [12], [0, 1, 2], [2, 3, 7, 9, 10, 11, 12], list(range(N))])
def test_a_worker_takes_each_new_request_once_as_runs(kernel: str, pattern: list[int]) -> None:
    block = _block()
    lanes = block.worker(0, 0, N)
    block.requested[:] = 5
    lanes.take_runs()  # everything taken: only the pattern below is new
    block.requested[pattern] = 6
    assert lanes.has_requests() == bool(pattern)
    runs = lanes.take_runs()
    assert [k for _, start, stop in runs for k in range(start, stop)] == pattern
    assert all(stop > start and seq == 6 for seq, start, stop in runs)
    assert all(a_stop < b_start for (_, _, a_stop), (_, b_start, _) in zip(runs, runs[1:]))  # maximal runs
    assert [lanes.seq(k) for k in range(N)] == [6 if k in pattern else 5 for k in range(N)]
    assert lanes.values[pattern].tolist() == [6 << 1] * len(pattern)
    assert lanes.take_runs() == [] and not lanes.has_requests()


def test_a_worker_sees_only_its_own_lanes(kernel: str) -> None:
    block = _block()
    lanes = block.worker(1, 4, 9)
    block.requested[[3, 4, 8, 9]] = 1  # 3 and 9 are other workers' envs
    assert lanes.take_runs() == [(1, 0, 1), (1, 4, 5)]


def test_a_worker_takes_the_oldest_requests_first(kernel: str) -> None:
    """Envs asked in three sends (numbers 7, 5, 6): the oldest first; consecutive envs whose
    numbers follow each other go in one run."""
    block = _block()
    lanes = block.worker(0, 0, N)
    block.requested[[0, 1, 2, 9]] = 7
    block.requested[[3, 4, 10]] = 5
    block.requested[[5, 6]] = 6
    assert lanes.take_runs() == [(5, 3, 7), (5, 10, 11), (7, 0, 3), (7, 9, 10)]


def test_a_worker_answers_counts_and_wakes_the_parent_when_its_total_is_made(kernel: str) -> None:
    read, write = os.pipe()
    os.set_blocking(read, False)
    try:
        block = _block(4, workers=2)
        first, second = block.worker(0, 0, 2, write), block.worker(1, 2, 4, write)
        block.requested[:] = 3
        first.take_runs(), second.take_runs()
        first.answer(0, False)  # the parent is awake: counted, nobody woken
        assert block.answered[0] == 3 << 1 and block.worker_rows[0, W_ANSWERS] == 1
        block.parent_row[P_TARGET] = 3  # the parent sleeps (sleep 1) for 3 answers in all
        block.parent_row[P_SLEEPING] = 1
        second.done[0](0)  # 2 of 3: no wake-up
        assert _woken(read) == 0
        first.answer(1, True)  # the third: one wake-up, with the message bit
        assert _woken(read) == 1 and block.answered[1] == 3 << 1 | 1
        assert block.worker_rows[:, W_ANSWERS].tolist() == [2, 1]
    finally:
        os.close(read)
        os.close(write)


def test_a_worker_writes_once_per_sleep_of_the_parent(kernel: str) -> None:
    read, write = os.pipe()
    os.set_blocking(read, False)
    try:
        block = _block(4, workers=1)
        lanes = block.worker(0, 0, 4, write)
        block.parent_row[P_TARGET] = 1
        for sleep in (1, 2):  # the parent's row as it writes it, the parent not yet up
            block.parent_row[P_SLEEPING] = sleep
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
        parent = block.parent()
        parent.expected[:] = rng.integers(1, 4, N)
        answer = rng.integers(0, 4, N)
        block.answered[:] = answer << 1 | rng.integers(0, 2, N)
        status = np.where(rng.random(N) < 0.7, IN_FLIGHT, RETURNED).astype(np.int8)
        flying = status == IN_FLIGHT
        ready, talking = [99], [98]
        want = np.flatnonzero(flying & (answer == parent.expected)).tolist()
        assert parent.count_finished(status) == len(want)
        assert parent.scan(status, ready, talking) == len(want)
        assert ready == [99] + want
        assert talking == [98] + [i for i in want if block.answered[i] & 1]
        assert np.flatnonzero(status == ANSWERED).tolist() == want
        assert parent.count_finished(status) == 0


def test_a_request_rings_the_bell_only_when_a_worker_of_it_sleeps() -> None:
    block = _block(4, workers=2)
    rung: list[int] = []
    parent = block.parent(wake=lambda workers: rung.extend(workers))  # no bell: WAKE messages
    parent.request(np.array([0, 1]), np.array([0, 0]))
    assert rung == []
    block.worker_rows[1, W_SLEEPING] = 1
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
    """SeededEnv says {"t": t} at even steps: one message for the envs of a serving that
    said something, sent after their answers; the quiet ones answered, no message."""
    n = 3
    block = _block(n, workers=1)
    envs = EnvSlice([SeededEnv] * n)
    envs.attach(BatchBuffers.allocate(envs.observation_space, n, terminal=True))
    lanes, actions = block.worker(0, 0, n), np.zeros(n, np.int64)
    envs.reset([0, 1, 2])
    parent = block.parent()
    for talks in (False, True, False, True):
        seq = parent.request(slice(0, n))
        messages: list[Answers] = []

        def say(message: Answers, seq: int = seq, messages: list = messages) -> None:
            assert block.answered.tolist() == [seq << 1 | 1] * n  # answered before the message goes
            messages.append(message)

        serve_lanes(envs, lanes, actions, say)
        assert len(messages) == (1 if talks else 0)
        if talks:
            message = messages[0]
            assert message.envs == [0, 1, 2] and message.seqs == [seq] * n
            assert all(set(info) == {"t"} for info in message.infos)
        assert block.answered.tolist() == [seq << 1 | talks] * n
    assert block.worker_rows[0, W_ANSWERS] == 4 * n
    envs.close()


def test_the_c_passes_refuse_arrays_they_cannot_read() -> None:
    kernel = lanes_module._kernel
    if kernel is None:
        pytest.skip("the lanes kernel is not built or is off")
    lanes, flags, status = np.zeros(4, np.int64), np.zeros(4, np.bool_), np.zeros(4, np.int8)
    with pytest.raises(ValueError, match="int64"):
        kernel.take_runs(np.zeros(4, np.int32), lanes, lanes.copy())
    with pytest.raises(ValueError, match="status must be a 1-D int8"):
        kernel.scan(lanes, lanes, flags, None, None)
    with pytest.raises(TypeError, match="both None"):
        kernel.scan(lanes, lanes, status, [], None)
    with pytest.raises(ValueError, match="has 3 envs"):
        kernel.scan(lanes, lanes, np.zeros(3, np.int8), [], [])
    read_only = np.zeros(4, np.int64)
    read_only.flags.writeable = False
    with pytest.raises((BufferError, ValueError)):  # take_runs writes what it takes
        kernel.take_runs(lanes, read_only, lanes.copy())
    with pytest.raises(ValueError, match="answerer"):
        kernel.answerer(lanes, lanes, np.zeros((2, 8), np.int64), 1, -1, 1, 0, 1)  # worker 1 of 1
    rows = np.zeros((2, 8), np.int64)
    for columns, objects in ((np.zeros((3, 8), np.int64), None), (np.zeros((4, 8), np.int32), None),
                             (np.zeros((4, 8), np.int64), [])):  # an env short, not int64, objects not a dict
        with pytest.raises(ValueError, match="answerer"):
            kernel.answerer(lanes, lanes, rows, 0, -1, 1, 0, 1, columns, 2, 0, objects)
    answerer = kernel.answerer(lanes, lanes, rows, 0, -1, 1, 0, 1, np.zeros((4, 8), np.int64), 2)
    with pytest.raises(IndexError, match="env 4 of a slice of 4"):
        kernel.answer(answerer, 4, False)
    with pytest.raises(ValueError, match="a key, a type and a kind per value"):
        kernel.schema(answerer, ("lives",), (int,), b"ii")
    with pytest.raises(ValueError, match="fewer than 8"):
        kernel.schema(answerer, tuple("abcdefgh"), (int,) * 8, b"i" * 8)
    del status
