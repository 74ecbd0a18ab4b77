"""The C pass over the lanes (``_lanes_kernel.c``) finds and writes exactly what the NumPy
and Python code does where it is not built: a worker's new requests as runs, the parent's
answered envs in flight, the infos of a batch where no env had anything to say."""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from vec_envs.spaces.batching import BatchBuffers
from vec_envs.subproc import control, quiet_infos
from vec_envs.subproc.control import ControlBlock, ParentLanes, WorkerLanes

needs_kernel = pytest.mark.skipif(control._lanes_kernel is None, reason="the C pass over the lanes is not built")
N, WORKERS = 13, 2


@pytest.fixture(params=["C", "NumPy"])
def pass_over_lanes(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each test below runs with the C pass and with the NumPy code."""
    if request.param == "C" and control._lanes_kernel is None:
        pytest.skip("the C pass over the lanes is not built")
    if request.param == "NumPy":
        monkeypatch.setattr(control, "_lanes_kernel", None)
        monkeypatch.setattr(quiet_infos, "_lanes_kernel", None)
    return str(request.param)


def _block() -> ControlBlock:
    return ControlBlock(np.zeros(ControlBlock.words(N, WORKERS), np.int64), n=N, workers=WORKERS)


@pytest.mark.parametrize("pattern", [[], [0], [12], [0, 1, 2], [2, 3, 7, 9, 10, 11, 12], list(range(N))])
def test_a_worker_takes_each_new_request_once_as_runs(pass_over_lanes: str, pattern: list[int]) -> None:
    block = _block()
    lanes = WorkerLanes(block, 0, 0, N)
    block.requested[:] = 5
    lanes.take_runs()  # everything taken: only the pattern below is new
    block.requested[pattern] = 6
    runs = lanes.take_runs()
    assert [k for start, stop in runs for k in range(start, stop)] == pattern
    assert all(stop > start for start, stop in runs)
    assert all(a_stop < b_start for (_, a_stop), (b_start, _) in zip(runs, runs[1:]))  # maximal runs
    assert [lanes.seq(k) for k in range(N)] == [6 if k in pattern else 5 for k in range(N)]
    assert lanes.marks.values[pattern].tolist() == [6 << 1] * len(pattern)
    assert lanes.take_runs() == []


def test_a_worker_sees_only_its_own_lanes(pass_over_lanes: str) -> None:
    block = _block()
    lanes = WorkerLanes(block, 1, 4, 9)
    block.requested[[3, 4, 8, 9]] = 1  # 3 and 9 are other workers' envs
    assert lanes.take_runs() == [(0, 1), (4, 5)]


def test_the_parent_finds_the_answered_envs_in_flight(pass_over_lanes: str) -> None:
    rng = np.random.default_rng(0)
    for _ in range(50):
        block = _block()
        parent = ParentLanes(block)
        parent.expected[:] = rng.integers(1, 4, N)
        answer = rng.integers(0, 4, N)
        block.answered[:] = answer << 1 | rng.integers(0, 2, N)
        flying = rng.random(N) < 0.7
        unread = np.zeros(N, np.bool_)
        ready = [99]
        want = np.flatnonzero(flying & (answer == parent.expected)).tolist()
        still = flying & (answer != parent.expected)
        assert parent.count_finished(flying) == len(want)
        assert parent.scan(flying, unread, ready) == len(want)
        assert ready == [99] + want
        assert flying.tolist() == still.tolist()
        assert np.flatnonzero(unread).tolist() == [i for i in want if block.answered[i] & 1]
        assert parent.count_finished(flying) == 0


@pytest.mark.parametrize("talks", [[], [7], [0, 12]])
def test_the_parent_takes_the_first_ready_envs_with_their_dones(pass_over_lanes: str, talks: list[int]) -> None:
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


@pytest.mark.parametrize("returned", [None, [7, 2, 11, 0, 5]])  # lock-step: every env; recv: some, in any order
def test_a_quiet_batch_has_empty_infos_but_the_terminal_rows_of_its_ended_envs(pass_over_lanes: str,
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
        infos = quiet_infos.quiet_infos(buffers, dones, None if returned is None else env_ids, reset_infos)
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
    reset_infos = [{"seed": i} for i in range(N)]
    no_ends = np.zeros(len(returned or range(N)), np.bool_)
    infos = quiet_infos.quiet_infos(buffers, no_ends, None if returned is None else np.array(returned), reset_infos)
    assert infos == [{}] * len(no_ends) and len({id(info) for info in infos}) == len(infos)
    assert reset_infos == [{"seed": i} for i in range(N)]


@needs_kernel
def test_the_c_pass_refuses_arrays_it_cannot_read() -> None:
    kernel = control._lanes_kernel
    assert kernel is not None
    words, flags = np.zeros(4, np.int64), np.zeros(4, np.bool_)
    with pytest.raises(ValueError, match="int64"):
        kernel.take_runs(np.zeros(4, np.int32), words, words.copy())
    with pytest.raises(ValueError, match="flying must be a 1-D bool"):
        kernel.count_finished(words, words, np.zeros(4, np.int8))
    with pytest.raises(ValueError, match="has 3 envs"):
        kernel.scan(words, words, flags, np.zeros(3, np.bool_), [])
    read_only = np.zeros(4, np.int64)
    read_only.flags.writeable = False
    with pytest.raises((BufferError, ValueError)):  # take_runs writes what it takes
        kernel.take_runs(words, read_only, words.copy())
    with pytest.raises(ValueError, match="first_ready"):  # more envs than are ready
        kernel.first_ready([1], words, flags, np.zeros(2, np.int64), np.zeros(2, np.bool_))
    with pytest.raises(IndexError, match="env 9 of 4"):
        kernel.first_ready([9], words, flags, np.zeros(1, np.int64), np.zeros(1, np.bool_))
    rows, one = np.zeros((1, 2), np.float32), np.ones(1, np.int64)
    with pytest.raises(ValueError, match="truncated must be a 1-D bool"):
        kernel.quiet_infos(4, one, one, rows, one, [{}] * 4)
    with pytest.raises(IndexError, match="place 4 of 4"):
        kernel.quiet_infos(4, one * 4, one, rows, np.ones(1, np.bool_), [{}] * 4)
    with pytest.raises(IndexError, match="env 7 of 4"):
        kernel.quiet_infos(4, one, one * 7, rows, np.ones(1, np.bool_), [{}] * 4)
